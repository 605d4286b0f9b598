"""Paper 000's algorithms as specs: ``fm-logistic`` and ``fm-linear`` (:mod:`mpdp.learning.spec`).

Each objective's options (:class:`FMLogisticSettings`, :class:`FMLinearSettings`) are the only place their
defaults are written: the in-memory and deployed runs read them from the run's configuration
(:func:`settings_of`), and the estimators' ``settings=None`` solves with the objective's defaults
(:meth:`~mpdp.learning.functional_mechanism.release.SolveSettings.trim`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mpdp.dp.sensitivities.functional_mechanism import FMObjective
from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option
from mpdp.learning.spec.run import RunConfig

__all__ = ["SETTINGS", "SPECS", "FMLinearSettings", "FMLogisticSettings", "FMSettings", "settings_of"]

_TRIM = ("spectral trimming factor of the server's solve: directions whose noisy curvature is below "
         "trim * sqrt(d) * (the Laplace scale) are dropped (post-processing)")


@dataclass(frozen=True)
class FMSettings(Settings):
    """Options shared by both objectives; ``objective`` names the objective a subclass configures."""

    objective: ClassVar[FMObjective]

    l1: str = option("attributes", "row-L1 bound per party: 'attributes' (1 per attribute it holds, from the "
                     "schema) or 'box' (its column count, the paper's Delta_f)", choices=("attributes", "box"))
    ridge: float = option(0.0, "ridge of the server's solve, in units of the Laplace scale (post-processing)",
                          low=0.0)
    intercept: bool = option(True, "fit an intercept (the label party holds the public constant column)")

    def trim_factor(self) -> float:
        """The spectral-trimming factor ``trim`` (each objective declares it, with its own default)."""
        raise NotImplementedError  # pragma: no cover - every objective's settings define it


@dataclass(frozen=True)
class FMLogisticSettings(FMSettings):
    objective: ClassVar[FMObjective] = "logistic"
    trim: float = option(0.3, _TRIM, low=0.0)

    def trim_factor(self) -> float:
        return self.trim


@dataclass(frozen=True)
class FMLinearSettings(FMSettings):
    objective: ClassVar[FMObjective] = "linear"
    trim: float = option(1.5, _TRIM, low=0.0)

    def trim_factor(self) -> float:
        return self.trim


#: each objective's options
SETTINGS: dict[FMObjective, type[FMSettings]] = {cls.objective: cls for cls in (FMLogisticSettings, FMLinearSettings)}


def settings_of(config: RunConfig, kind: type[FMSettings]) -> FMSettings:
    """The run's options as ``kind`` (the spec's class): ``config.settings``, or built from ``config.options``
    when the caller gave only those (checked the same way)."""
    return kind.of_run(config.settings, config.options)


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
        roles=_ROLES, backends=_BACKENDS, deployment=Ref(f"{_MODEL}.deployment:FMLogisticDeployment"),
        audits=(AuditHook("fm-coefficients", Ref("mpdp.audit.cases.functional_mechanism:fm_case"), 800),),
        release=Ref("mpdp.learning.release.build:linear_of_fm"),
        estimator=Ref(f"{_MODEL}.model:FMLogisticRegression")),
    AlgorithmSpec(
        name="fm-linear", summary="functional mechanism, linear regression, vertical partition",
        paper="000", partitioning="vertical", task="regression", settings=FMLinearSettings,
        roles=_ROLES, backends=_BACKENDS, deployment=Ref(f"{_MODEL}.deployment:FMLinearDeployment"),
        release=Ref("mpdp.learning.release.build:linear_of_fm"),
        estimator=Ref(f"{_MODEL}.model:FMLinearRegression")),
)
