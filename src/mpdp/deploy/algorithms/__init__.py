"""Per-algorithm deployments: which registered algorithms run as one process per party, and how.

:func:`deployment_for` finds the :class:`~mpdp.deploy.algorithms.base.AlgorithmDeployment` of a registered
algorithm name, importing only that algorithm's module (a party process starts sooner); :func:`deployable`
lists the names served.
"""

from __future__ import annotations

import importlib

from mpdp.deploy.algorithms.base import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.errors import ParameterError, explain

__all__ = ["AlgorithmDeployment", "DeployPlan", "PartyContext", "deployable", "deployment_for"]

_ERM = ("mpc-gradp", "mpc-outp", "pathak", "local-outp", "local-objp", "local-gradp")

#: algorithm name -> "module:class" of its deployment
_HOMES: dict[str, str] = {
    "fm-logistic": "mpdp.deploy.algorithms.fm:FMDeployment",
    "fm-linear": "mpdp.deploy.algorithms.fm:FMDeployment",
    "ofpa": "mpdp.deploy.algorithms.ofpa:OfpaDeployment",
    "ofaa": "mpdp.deploy.algorithms.ofpa:OfpaDeployment",
    "dpvi": "mpdp.deploy.algorithms.dpvi:DpviDeployment",
    **{name: "mpdp.deploy.algorithms.pfds:PfdsDeployment" for name in ("pfds", "pfds-s", "pfds-minus", "dp-pred",
                                                                     "np-agt")},
    **{name: "mpdp.deploy.algorithms.erm:ERMDeployment" for m in _ERM for name in (m, f"{m}-ridge")},
}


def deployable() -> tuple[str, ...]:
    """The registered algorithm names that can be deployed."""
    return tuple(_HOMES)


def deployment_for(algorithm: str) -> AlgorithmDeployment:
    """The deployment of ``algorithm`` (a registered name)."""
    home = _HOMES.get(algorithm)
    if home is None:
        raise ParameterError(explain("algorithm", algorithm, f"one of the deployable algorithms {list(_HOMES)}",
                                     "run it in memory with `mpdp run`, or pick a deployable one"))
    module, _, name = home.partition(":")
    deployment: AlgorithmDeployment = getattr(importlib.import_module(module), name)()
    if algorithm not in deployment.algorithms:  # pragma: no cover - the table above and the classes agree
        raise ParameterError(explain("deployment table", home, f"a deployment serving {algorithm}", "fix _HOMES"))
    return deployment
