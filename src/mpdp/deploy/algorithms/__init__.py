"""Per-algorithm deployments: which registered algorithms run as one process per party, and how.

:func:`deployment_for` finds the :class:`~mpdp.deploy.algorithms.base.AlgorithmDeployment` of a registered
algorithm name; :func:`deployable` lists the names served.
"""

from __future__ import annotations

from mpdp.deploy.algorithms.base import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.errors import ParameterError, explain

__all__ = ["AlgorithmDeployment", "DeployPlan", "PartyContext", "deployable", "deployment_for"]


def _all() -> list[AlgorithmDeployment]:
    from mpdp.deploy.algorithms.dpvi import DpviDeployment
    from mpdp.deploy.algorithms.erm import ERMDeployment
    from mpdp.deploy.algorithms.fm import FMDeployment
    from mpdp.deploy.algorithms.ofpa import OfpaDeployment

    return [FMDeployment(), ERMDeployment(), OfpaDeployment(), DpviDeployment()]


def deployable() -> tuple[str, ...]:
    """The registered algorithm names that can be deployed."""
    return tuple(name for d in _all() for name in d.algorithms)


def deployment_for(algorithm: str) -> AlgorithmDeployment:
    """The deployment of ``algorithm`` (a registered name)."""
    for candidate in _all():
        if algorithm in candidate.algorithms:
            return candidate
    raise ParameterError(explain("algorithm", algorithm, f"one of the deployable algorithms {list(deployable())}",
                                 "run it in memory with `mpdp run`, or pick a deployable one"))
