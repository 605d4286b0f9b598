"""What the functional mechanism releases, and the server's sound solve of it (paper 000, Algorithm 1 step 3).

The server receives the noisy quadratic objective and minimises it with the plan's public noise scale
(:class:`SolveSettings`, post-processing: it costs no privacy). :class:`FMResult` is what every run returns:
the released weights, the plan, the noisy objective, the solve's diagnostics and the privacy spent, in total
and per party (Theorem 2). The estimators of :mod:`~mpdp.learning.functional_mechanism.model` and the party
roles of :mod:`~mpdp.learning.functional_mechanism.parties` share these definitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mpdp.dp.sensitivities.functional_mechanism import FMObjective
from mpdp.errors import ParameterError, explain
from mpdp.learning.functional_mechanism.noise import FMPlan
from mpdp.learning.functional_mechanism.objective import QuadraticObjective
from mpdp.learning.functional_mechanism.solver import SolveResult, minimize_noisy_quadratic
from mpdp.learning.functional_mechanism.spec import SETTINGS, FMSettings

__all__ = ["FMResult", "SolveSettings", "solve_release"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SolveSettings:
    """The server's post-processing of the noisy objective (Zhang et al. 2012, §6); costs no privacy.

    ``ridge = ridge_factor * s`` and ``floor = trim_factor * sqrt(d) * s``, where ``s`` is the Laplace scale on
    the quadratic coefficients (public). ``sqrt(d) s`` is the order of the noise matrix's spectral norm, so
    directions whose noisy curvature is below a fraction of it are trimmed. ``trim_factor=None`` takes the
    objective's default, the ``trim`` option of its spec (:mod:`mpdp.learning.functional_mechanism.spec`: 0.3
    for logistic, 1.5 for linear regression), chosen on Adult and the synthetic regression data; trimming alone
    did better than adding a ridge.
    """

    ridge_factor: float = FMSettings.ridge  # the spec's default
    trim_factor: float | None = None

    def __post_init__(self) -> None:
        for name in ("ridge_factor", "trim_factor"):
            value = getattr(self, name)
            if value is None and name == "trim_factor":
                continue
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ParameterError(explain(name, value, "a finite number >= 0", f"pass e.g. {name}=0.3"))

    def trim(self, objective: FMObjective) -> float:
        """The trimming factor in force for ``objective``."""
        if self.trim_factor is None:
            return SETTINGS[objective].defaults().trim_factor()
        return float(self.trim_factor)


@dataclass
class FMResult:
    """A released FM model and its accounting."""

    weights: FloatArray
    plan: FMPlan
    objective: QuadraticObjective  # the noisy objective the server solved
    solve: SolveResult
    epsilon_spent: float
    per_party_epsilon: tuple[float, ...]
    communication: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)


def solve_release(plan: FMPlan, noisy: QuadraticObjective, settings: SolveSettings) -> SolveResult:
    """Minimise the released objective soundly with the plan's public noise scale."""
    s = plan.quad_scale()
    return minimize_noisy_quadratic(noisy, ridge=settings.ridge_factor * s,
                                    floor=settings.trim(plan.objective) * math.sqrt(max(noisy.d, 1)) * s)
