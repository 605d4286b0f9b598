"""Per-algorithm deployments: which registered algorithms run as one process per party, and how.

An algorithm is deployable when its spec names a deployment (:attr:`AlgorithmSpec.deployment
<mpdp.learning.spec.AlgorithmSpec.deployment>`): :func:`deployment_for` loads it, importing only that
algorithm's module (a party process starts sooner); :func:`deployable` lists the names served.
"""

from __future__ import annotations

from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec.deployment import AlgorithmDeployment

__all__ = ["deployable", "deployment_for"]


def deployable() -> tuple[str, ...]:
    """The registered algorithm names that can be deployed."""
    return tuple(name for name, spec in algorithms().items() if spec.deployment is not None)


def deployment_for(algorithm: str) -> AlgorithmDeployment:
    """The deployment of ``algorithm`` (a registered name)."""
    spec = get_algorithm(algorithm)
    if spec.deployment is None:
        raise ParameterError(explain("algorithm", algorithm, f"one of the deployable algorithms {list(deployable())}",
                                     "run it in memory with `mpdp run`, or pick a deployable one"))
    deployment: AlgorithmDeployment = spec.deployment.load()()
    return deployment
