"""Paper 000's algorithms as specs: ``fm-logistic`` and ``fm-linear`` (:mod:`mpdp.learning.spec`)."""

from __future__ import annotations

from dataclasses import dataclass

from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["SPECS", "FMLinearSettings", "FMLogisticSettings", "FMSettings"]

_TRIM = ("spectral trimming factor of the server's solve: directions whose noisy curvature is below "
         "trim * sqrt(d) * (the Laplace scale) are dropped (post-processing)")


@dataclass(frozen=True)
class FMSettings(Settings):
    """Options shared by both objectives."""

    l1: str = option("attributes", "row-L1 bound per party: 'attributes' (1 per attribute it holds, from the "
                     "schema) or 'box' (its column count, the paper's Delta_f)", choices=("attributes", "box"))
    ridge: float = option(0.0, "ridge of the server's solve, in units of the Laplace scale (post-processing)",
                          low=0.0)
    intercept: bool = option(True, "fit an intercept (the label party holds the public constant column)")


@dataclass(frozen=True)
class FMLogisticSettings(FMSettings):
    trim: float = option(0.3, _TRIM, low=0.0)


@dataclass(frozen=True)
class FMLinearSettings(FMSettings):
    trim: float = option(1.5, _TRIM, low=0.0)


_ROLES = (RoleInfo("party0 .. party{K-1}", "one per column holder (--parties, --partition)",
                   "holds its own columns (the label party also the labels); perturbs its single-party "
                   "coefficients and takes part in the cross-party products"),
          RoleInfo("server", "1", "sends the plan, deals the shares backend's triples, sums the noisy coefficients "
                   "and solves the released objective"))
_BACKENDS = ("shares", "ckks", "paillier")
_MODEL = "mpdp.learning.functional_mechanism"

SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        name="fm-logistic", summary="functional mechanism, logistic regression (Taylor order 2), vertical partition",
        paper="000", partitioning="vertical", task="classification", settings=FMLogisticSettings,
        driver=Ref(f"{_MODEL}.experiments:run_logistic"), roles=_ROLES, backends=_BACKENDS,
        deployment=Ref("mpdp.deploy.algorithms.fm:FMDeployment"),
        audits=(AuditHook("fm-coefficients", Ref("mpdp.audit.cases.functional_mechanism:fm_case"), 800),),
        release=Ref("mpdp.learning.release.build:linear_of_fm"),
        estimator=Ref(f"{_MODEL}.model:FMLogisticRegression")),
    AlgorithmSpec(
        name="fm-linear", summary="functional mechanism, linear regression, vertical partition",
        paper="000", partitioning="vertical", task="regression", settings=FMLinearSettings,
        driver=Ref(f"{_MODEL}.experiments:run_linear"), roles=_ROLES, backends=_BACKENDS,
        deployment=Ref("mpdp.deploy.algorithms.fm:FMDeployment"),
        release=Ref("mpdp.learning.release.build:linear_of_fm"),
        estimator=Ref(f"{_MODEL}.model:FMLinearRegression")),
)
