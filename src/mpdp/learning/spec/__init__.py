"""Algorithm specs: each algorithm's options, parties and engine hooks, written once (:class:`AlgorithmSpec`)."""

from mpdp.learning.spec.algorithm import AlgorithmSpec, AuditHook, Partitioning, Ref, RoleInfo, Task
from mpdp.learning.spec.options import OptionInfo, Settings, option

__all__ = ["AlgorithmSpec", "AuditHook", "OptionInfo", "Partitioning", "Ref", "RoleInfo", "Settings", "Task",
           "option"]
