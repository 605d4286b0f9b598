"""Paper 001's algorithms as specs: ``ofpa`` and ``ofaa`` (:mod:`mpdp.learning.spec`).

The regulariser's default is ``1e-4`` for both. The paper states none: OFAA's objective (Algorithm 3, Eq. 28) is
the unregularised Taylor polynomial and OFPA's (Algorithm 2) follows Chaudhuri et al., whose regulariser is a free
parameter; 1e-4 is the smallest value that keeps every owner's perturbed objective strongly convex at Adult's
size (OFPA raises it where its Jacobian term needs more; OFAA adds a ridge of the order of its noise), and it is
the value the reproductions of Figures 2-4 were measured with (:mod:`mpdp.learning.ofpa_ofaa.experiments`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["SPECS", "OfaaSettings", "OfpaSettings"]


@dataclass(frozen=True)
class OfaaSettings(Settings):
    """Options of both algorithms (OFAA has no others)."""

    lam: float = option(1e-4, "regulariser, mean form (OFPA raises it where its Jacobian term needs more; OFAA "
                        "adds a ridge of the order of its noise)", low=0.0, low_open=True)
    eta: float = option(1e-4, "stop when the global parameters change by less", low=0.0, low_open=True)
    max_rounds: int = option(10, "round limit", low=1)
    noise: str = option("once", "'once' (each owner perturbs once; the run costs eps) or 'fresh' (new noise each "
                        "round, eps / max_rounds per round)", choices=("once", "fresh"))


@dataclass(frozen=True)
class OfpaSettings(OfaaSettings):
    perturbation: str = option("objective", "'objective' (Algorithm 2) or 'output' (Algorithm 1)",
                               choices=("objective", "output"))


_ROLES = (RoleInfo("party0 .. party{K-1}", "one per data owner (--parties, --fractions)",
                   "holds its own rows; perturbs its local objective and uploads its minimiser each round"),
          RoleInfo("server", "1", "forms the record-weighted average by secure aggregation and hands it out"),
          RoleInfo("aggregator0, aggregator1", "2", "the secure aggregation's non-colluding aggregators"))
_PKG = "mpdp.learning.ofpa_ofaa"


def _spec(name: str, summary: str, settings: type[Settings], audit: AuditHook) -> AlgorithmSpec:
    return AlgorithmSpec(
        name=name, summary=summary, paper="001", partitioning="horizontal", task="classification",
        settings=settings, roles=_ROLES, min_parties=1, deployment=Ref(f"{_PKG}.deployment:OfpaDeployment"),
        flower=Ref("mpdp.flower.ofpa_ofaa:server_app"),
        audits=(audit,), release=Ref("mpdp.learning.release.build:linear_of_ofpa"),
        estimator=Ref(f"{_PKG}.estimator:OfpaOfaaClassifier"))


SPECS: tuple[AlgorithmSpec, ...] = (
    _spec("ofpa", "OFPA: objective-perturbed logistic regression, weighted secure averaging", OfpaSettings,
          AuditHook("ofpa-minimiser", Ref("mpdp.audit.cases.ofpa_ofaa:ofpa_case"), 1_200)),
    _spec("ofaa", "OFAA: Taylor-coefficient-perturbed logistic regression, weighted secure averaging", OfaaSettings,
          AuditHook("ofaa-coefficients", Ref("mpdp.audit.cases.ofpa_ofaa:ofaa_case"), 2_000)),
)
