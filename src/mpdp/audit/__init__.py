"""Empirical privacy audits: certified lower bounds on epsilon from runs of the real release code.

:func:`~mpdp.audit.core.audit` runs a mechanism on two neighbouring datasets, selects a distinguishing event on
half of the runs and bounds its odds on the other half with Clopper-Pearson intervals: a lower bound on
epsilon that exceeds the truth only with probability ``1 - confidence``. :mod:`mpdp.audit.cases` holds one
small adapter per release path, each with a deliberately broken variant the audit must flag;
:mod:`mpdp.audit.registry` names them for ``mpdp audit``. This package sits above ``learning`` (beside ``cli``).
"""

from mpdp.audit.case import AuditCase
from mpdp.audit.core import AuditResult, audit, batched, clopper_pearson, epsilon_lower_bound, minimum_samples

__all__ = ["AuditCase", "AuditResult", "audit", "batched", "clopper_pearson", "epsilon_lower_bound",
           "minimum_samples"]
