"""Paper 003's methods as specs: ``mpc-gradp``, ``mpc-outp``, ``pathak`` and the baselines ``local-outp``,
``local-objp``, ``local-gradp``, each for logistic regression and (``-ridge``) ridge regression
(:mod:`mpdp.learning.spec`).

The defaults are the paper's experimental setting (section 4: "G = 1, learning rate eta = 1, regularization
coefficient lambda = 0.001, ... and total number of iterations T = 1,500 for gradient descent"). T matters: the
unit-ball map shrinks every feature by the public ``sqrt(d)``, so gradient descent with eta = 1 moves slowly, and
far fewer iterations leave the gradient methods at the majority class on Adult (``bench/RESULTS.md``).

:class:`Method` names the six methods; the model, the deployment, the Flower app and the audits use its members,
never the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["RIDGE", "SPECS", "ERMSettings", "GradientSettings", "MPCGradientSettings", "MPCOneShotSettings",
           "Method", "algorithm_name", "method_of", "settings_class"]


class Method(StrEnum):
    """Paper 003's six methods (Table 1's columns)."""

    PATHAK = "pathak"
    LOCAL_OUTP = "local-outp"
    LOCAL_OBJP = "local-objp"
    LOCAL_GRADP = "local-gradp"
    MPC_OUTP = "mpc-outp"
    MPC_GRADP = "mpc-gradp"

    @property
    def gradient(self) -> bool:
        """T rounds of perturbed gradients (the others release one model)."""
        return self in (Method.LOCAL_GRADP, Method.MPC_GRADP)

    @property
    def local(self) -> bool:
        """Each party perturbs its own release; a server averages in the clear (no secure computation)."""
        return self in (Method.LOCAL_OUTP, Method.LOCAL_OBJP, Method.LOCAL_GRADP)

    @property
    def mpc(self) -> bool:
        """Secure aggregation by the aggregators, noise made inside the secure computation."""
        return not self.local


#: the suffix of a method's ridge-regression form (``mpc-gradp-ridge``)
RIDGE = "-ridge"


def algorithm_name(method: Method, task: str) -> str:
    """The registered name of ``method`` for ``task`` (``classification``, or ``regression``: ``-ridge``)."""
    return method.value if task == "classification" else method.value + RIDGE


def method_of(algorithm: str) -> Method:
    """The method of a registered name (``mpc-gradp-ridge`` -> :attr:`Method.MPC_GRADP`)."""
    name = str(algorithm).removesuffix(RIDGE)
    if name not in tuple(Method):
        raise ParameterError(explain("paper-003 method", algorithm, f"one of {[m.value for m in Method]} (or its "
                                     f"{RIDGE} form)", "pick a paper-003 method"))
    return Method(name)


def _aggregators() -> Any:
    return option(2, "non-colluding aggregators of the MPC methods (aggregator0 is also the aggregation server)",
                  low=2)


@dataclass(frozen=True)
class ERMSettings(Settings):
    """Options of every method."""

    lam: float = option(1e-3, "regularisation lambda (the paper's 1e-3)", low=0.0, low_open=True)
    cohort: int | None = option(None, "data parties per simulated runtime party in memory (none: 1024; 1 runs "
                                "every data party as its own party, as a deployment does)", low=1)


@dataclass(frozen=True)
class GradientSettings(ERMSettings):
    """Options of the gradient-perturbation methods."""

    T: int = option(1500, "gradient-descent iterations (the paper's 1,500)", low=1)
    eta: float = option(1.0, "step size (the paper's 1; eta * L <= 2 is checked)", low=0.0, low_open=True)
    accountant: str = option("zcdp", "'zcdp' (the paper's route, Lemma 2.3 solved exactly) or 'tight' (the exact "
                             "Gaussian privacy-loss curve)", choices=("zcdp", "tight"))


@dataclass(frozen=True)
class MPCOneShotSettings(ERMSettings):
    aggregators: int = _aggregators()


@dataclass(frozen=True)
class MPCGradientSettings(GradientSettings):
    aggregators: int = _aggregators()


_SETTINGS: dict[Method, type[ERMSettings]] = {
    Method.PATHAK: MPCOneShotSettings, Method.LOCAL_OUTP: ERMSettings, Method.LOCAL_OBJP: ERMSettings,
    Method.LOCAL_GRADP: GradientSettings, Method.MPC_OUTP: MPCOneShotSettings, Method.MPC_GRADP: MPCGradientSettings}


def settings_class(method: Method) -> type[ERMSettings]:
    """The options of ``method`` (its spec's settings class)."""
    return _SETTINGS[method]


_SUMMARIES = {
    Method.PATHAK: "Pathak et al.: securely averaged local models + in-MPC Laplace noise 2G/(n(1) lam eps)",
    Method.LOCAL_OUTP: "each party releases its output-perturbed local model; average",
    Method.LOCAL_OBJP: "each party releases its objective-perturbed local model (Chaudhuri Alg. 2); average",
    Method.LOCAL_GRADP: "T rounds of locally perturbed gradients, averaged in the clear (zCDP)",
    Method.MPC_OUTP: "securely averaged local models + Laplace 2G/(m n(1) lam eps) generated inside MPC",
    Method.MPC_GRADP: "T rounds of securely averaged gradients; each aggregator adds exact Gaussian noise to its "
                      "share before the only opening (zCDP)",
}
_DATA = RoleInfo("party0 .. party{m-1}", "one per data party (--parties)", "holds its own rows")
_ROLES = {
    "mpc": (_DATA, RoleInfo("agg0 .. agg{A-1}", "--option aggregators (default 2)", "non-colluding aggregators: "
                            "sum the parties' shares, add noise inside the MPC and open only the noisy result; "
                            "agg0 is also the aggregation server"),
            RoleInfo("dealer", "1 (one-shot methods)", "deals the aggregators' correlated randomness")),
    "local": (_DATA, RoleInfo("server", "1", "averages what the parties release")),
}
_TASKS = {"classification": " (logistic regression)", "regression": " (ridge regression, residual capped at G = 1)"}
_AUDITED = {Method.MPC_OUTP: 20_000, Method.MPC_GRADP: 20_000}
_FLOWER = (Method.MPC_GRADP, Method.MPC_OUTP)
_PKG = "mpdp.learning.distributed_erm"


def _spec(method: Method, task: Any) -> AlgorithmSpec:
    classification = task == "classification"
    audits = ((AuditHook(method.value, Ref(f"mpdp.audit.cases.distributed_erm:{method.name.lower()}_case"),
                         _AUDITED[method]),) if method in _AUDITED and classification else ())
    return AlgorithmSpec(
        name=algorithm_name(method, task), summary=_SUMMARIES[method] + _TASKS[task], paper="003",
        partitioning="horizontal", task=task, settings=_SETTINGS[method],
        roles=_ROLES["local" if method.local else "mpc"], min_parties=1,
        deployment=Ref(f"{_PKG}.deployment:ERMDeployment"),
        flower=Ref("mpdp.flower.distributed_erm:server_app") if method in _FLOWER and classification else None,
        audits=audits, release=Ref("mpdp.learning.release.build:linear_of_erm"),
        estimator=Ref(f"{_PKG}.estimator:DistributedERM{'Classifier' if classification else 'Regressor'}"))


SPECS: tuple[AlgorithmSpec, ...] = tuple(_spec(method, task) for task in _TASKS for method in _SUMMARIES)
