"""Minimising a noisy quadratic objective soundly: regularisation and spectral trimming (Zhang et al. 2012, §6).

After the functional mechanism adds Laplace noise to ``M`` in ``f(w) = c + b.w + w^T M w``, the noisy ``M`` may
have non-positive eigenvalues and ``f`` no minimum: a naive solve returns an unbounded, huge or NaN model.
Zhang et al. (PVLDB 2012, Section 6) give two remedies, both pure post-processing of the released noisy
coefficients (so they cost no privacy, provided their settings do not depend on the data):

1. *Regularisation*: add ``ridge * ||w||^2``, i.e. minimise with ``M + ridge I``;
2. *Spectral trimming*: write ``M + ridge I = Q diag(lam) Q^T`` and drop the eigen-directions with
   ``lam <= floor``; the trimmed objective is strictly convex on the remaining subspace and constant
   (so set to 0) on the dropped one, and its minimiser is ``w = -1/2 sum_{lam_i > floor} (q_i.b / lam_i) q_i``.

The result is always finite: every kept ``lam_i`` exceeds ``floor >= d * machine epsilon * max|lam|``, so
``||w|| <= ||b|| / (2 floor)``. Zhang et al. re-run the mechanism when the regularised objective is still
unbounded, which doubles the privacy cost; trimming makes that unnecessary, and mpdp never re-runs.

References
----------
Zhang, Zhang, Xiao, Yang, Winslett, "Functional mechanism: regression analysis under differential privacy",
PVLDB 5(11), 2012, Section 6 ("Avoiding unbounded noisy objective functions").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, explain
from mpdp.learning.functional_mechanism.objective import QuadraticObjective

__all__ = ["SolveResult", "minimize_noisy_quadratic"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SolveResult:
    """The minimiser and what the sound solve had to do to get it."""

    weights: FloatArray
    ridge: float
    floor: float
    kept: int  # eigen-directions kept
    trimmed: int  # eigen-directions removed by spectral trimming
    min_eigenvalue: float  # smallest eigenvalue of the noisy M before regularisation


def minimize_noisy_quadratic(objective: QuadraticObjective, *, ridge: float = 0.0,
                             floor: float = 0.0) -> SolveResult:
    """Minimise ``c + b.w + w^T (M + ridge I) w`` over the eigen-directions of ``M + ridge I`` above ``floor``.

    Parameters
    ----------
    objective:
        The (noisy) quadratic; ``quad`` is symmetrised before use.
    ridge:
        Regularisation added to the diagonal (>= 0). Must not depend on the data (use the noise scale, n, d).
    floor:
        Eigenvalues at or below ``max(floor, d * eps_machine * max|lam|)`` are trimmed (>= 0).

    Accuracy
    --------
    Without noise, with ``ridge = floor = 0`` and a positive-definite ``M``, this is the exact minimiser
    ``-1/2 M^{-1} b`` up to the eigen-solver's backward error.
    """
    for name, value in (("ridge", ridge), ("floor", floor)):
        if not math.isfinite(value) or value < 0:
            raise ParameterError(explain(name, value, "a finite number >= 0", f"pass e.g. {name}=0.0"))
    if not (np.all(np.isfinite(objective.quad)) and np.all(np.isfinite(objective.linear))):
        raise DomainError(explain("objective", "non-finite coefficients", "finite coefficients",
                                  "check the released coefficients (a party sent NaN or inf)"))
    d = objective.d
    if d == 0:
        return SolveResult(np.zeros(0), ridge, floor, 0, 0, math.inf)
    sym = 0.5 * (objective.quad + objective.quad.T)
    lam, Q = np.linalg.eigh(sym)
    min_eig = float(lam[0])
    lam = lam + ridge
    cutoff = max(floor, d * np.finfo(np.float64).eps * max(float(np.abs(lam).max()), 1.0))
    keep = lam > cutoff
    proj = Q[:, keep].T @ objective.linear
    weights = -0.5 * (Q[:, keep] @ (proj / lam[keep]))
    return SolveResult(weights=weights, ridge=ridge, floor=cutoff, kept=int(keep.sum()),
                       trimmed=int(d - keep.sum()), min_eigenvalue=min_eig)
