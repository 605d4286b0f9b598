"""Paper 003's methods as specs: ``mpc-gradp``, ``mpc-outp``, ``pathak`` and the baselines ``local-outp``,
``local-objp``, ``local-gradp``, each for logistic regression and (``-ridge``) ridge regression
(:mod:`mpdp.learning.spec`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["SPECS", "ERMSettings", "GradientSettings", "MPCGradientSettings", "MPCOneShotSettings"]


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

    T: int = option(100, "gradient-descent iterations (the paper's figures use up to 1500)", low=1)
    eta: float = option(1.0, "step size (the paper's 1; eta * L <= 2 is checked)", low=0.0, low_open=True)
    accountant: str = option("zcdp", "'zcdp' (the paper's route, Lemma 2.3 solved exactly) or 'tight' (the exact "
                             "Gaussian privacy-loss curve)", choices=("zcdp", "tight"))


@dataclass(frozen=True)
class MPCOneShotSettings(ERMSettings):
    aggregators: int = _aggregators()


@dataclass(frozen=True)
class MPCGradientSettings(GradientSettings):
    aggregators: int = _aggregators()


_SUMMARIES = {
    "pathak": "Pathak et al.: securely averaged local models + in-MPC Laplace noise 2G/(n(1) lam eps)",
    "local-outp": "each party releases its output-perturbed local model; average",
    "local-objp": "each party releases its objective-perturbed local model (Chaudhuri Alg. 2); average",
    "local-gradp": "T rounds of locally perturbed gradients, averaged in the clear (zCDP)",
    "mpc-outp": "securely averaged local models + Laplace 2G/(m n(1) lam eps) generated inside MPC",
    "mpc-gradp": "T rounds of securely averaged gradients; each aggregator adds exact Gaussian noise to its share "
                 "before the only opening (zCDP)",
}
_SETTINGS: dict[str, type[Settings]] = {"pathak": MPCOneShotSettings, "local-outp": ERMSettings,
                                        "local-objp": ERMSettings, "local-gradp": GradientSettings,
                                        "mpc-outp": MPCOneShotSettings, "mpc-gradp": MPCGradientSettings}
_DATA = RoleInfo("party0 .. party{m-1}", "one per data party (--parties)", "holds its own rows")
_ROLES = {
    "mpc": (_DATA, RoleInfo("agg0 .. agg{A-1}", "--option aggregators (default 2)", "non-colluding aggregators: "
                            "sum the parties' shares, add noise inside the MPC and open only the noisy result; "
                            "agg0 is also the aggregation server"),
            RoleInfo("dealer", "1 (one-shot methods)", "deals the aggregators' correlated randomness")),
    "local": (_DATA, RoleInfo("server", "1", "averages what the parties release")),
}
_TASKS = {"classification": ("", " (logistic regression)"),
          "regression": ("-ridge", " (ridge regression, residual capped at G = 1)")}
_AUDITED = {"mpc-outp": 20_000, "mpc-gradp": 20_000}
_FLOWER = ("mpc-gradp", "mpc-outp")
_PKG = "mpdp.learning.distributed_erm"


def _spec(method: str, task: Any) -> AlgorithmSpec:
    suffix, what = _TASKS[task]
    name = method + suffix
    audits = ((AuditHook(method, Ref(f"mpdp.audit.cases.distributed_erm:{method.replace('-', '_')}_case"),
                         _AUDITED[method]),) if method in _AUDITED and not suffix else ())
    return AlgorithmSpec(
        name=name, summary=_SUMMARIES[method] + what, paper="003", partitioning="horizontal", task=task,
        settings=_SETTINGS[method], driver=Ref(f"{_PKG}.experiments:RUNS.{method}"),
        roles=_ROLES["local" if method.startswith("local") else "mpc"], min_parties=1,
        deployment=Ref("mpdp.deploy.algorithms.erm:ERMDeployment"),
        flower=Ref(f"mpdp.flower.{method.replace('-', '_').removeprefix('mpc_')}:server_app")
        if method in _FLOWER and not suffix else None,
        audits=audits, release=Ref("mpdp.learning.release.build:linear_of_erm"),
        estimator=Ref(f"{_PKG}.estimator:{'DistributedERMRegressor' if suffix else 'DistributedERMClassifier'}"))


SPECS: tuple[AlgorithmSpec, ...] = tuple(_spec(method, task) for task in _TASKS for method in _SUMMARIES)
