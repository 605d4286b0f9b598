"""Differential privacy: exact samplers, mechanisms, sensitivities and accounting."""
