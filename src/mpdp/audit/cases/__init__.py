"""One audit adapter per release path: each builds an :class:`AuditCase` (the real release code, worst-case
neighbours from :mod:`mpdp.dp.sensitivities`, the claimed epsilon) and its deliberately broken variant."""
