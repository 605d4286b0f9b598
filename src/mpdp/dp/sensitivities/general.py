"""General-purpose sensitivities: counts, bounded sums and means, histograms, clipped gradients, norm bounds.

Every function states its neighbouring relation: ``"add_remove"`` (datasets differ by adding or removing one
record; DP-SGD's convention and the default) or ``"replace"`` (same size, one record changed; required when
the dataset size n is public and used in a mean). Values are assumed to lie in the stated bounds: callers
clip or validate first (a value outside the bound voids the guarantee).
"""

from __future__ import annotations

import math

import numpy as np

from mpdp.dp.calibration import check_positive
from mpdp.errors import DomainError, ParameterError, explain

__all__ = [
    "NEIGHBOURING",
    "bounded_mean_sensitivity",
    "bounded_sum_sensitivity",
    "clipped_gradient_mean_sensitivity",
    "clipped_gradient_sum_sensitivity",
    "count_sensitivity",
    "histogram_sensitivity",
    "l1_from_l2",
]

NEIGHBOURING = ("add_remove", "replace")


def _relation(neighbouring: str) -> str:
    if not isinstance(neighbouring, str) or neighbouring not in NEIGHBOURING:
        raise ParameterError(explain("neighbouring", neighbouring, f"one of {NEIGHBOURING}",
                                     "pass neighbouring='add_remove' (default) or 'replace'"))
    return neighbouring


def _bounds(lower: float, upper: float) -> tuple[float, float]:
    try:
        if not all(isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
                   for v in (lower, upper)):
            raise TypeError("bounds")
        lo, hi = float(lower), float(upper)
    except (TypeError, OverflowError):
        lo, hi = math.nan, math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise DomainError(explain("(lower, upper)", (lower, upper), "finite bounds with lower <= upper",
                                  "pass the clipping range of the values, e.g. lower=0.0, upper=1.0"))
    return lo, hi


def count_sensitivity(neighbouring: str = "add_remove") -> int:
    """Counting records: 1 under add/remove; 0 under replace (the count is public there)."""
    return 1 if _relation(neighbouring) == "add_remove" else 0


def bounded_sum_sensitivity(*, lower: float, upper: float, neighbouring: str = "add_remove") -> float:
    """Sum of values in ``[lower, upper]``: ``max(|lower|, |upper|)`` (add/remove) or ``upper - lower`` (replace)."""
    lo, hi = _bounds(lower, upper)
    if _relation(neighbouring) == "add_remove":
        return max(abs(lo), abs(hi))
    return hi - lo


def bounded_mean_sensitivity(*, lower: float, upper: float, n: int) -> float:
    """Mean of ``n`` values in ``[lower, upper]`` with n public (replace neighbours): ``(upper - lower) / n``."""
    lo, hi = _bounds(lower, upper)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(explain("n", n, "an int >= 1", "pass the (public) number of records"))
    return (hi - lo) / n


def histogram_sensitivity(*, norm: str = "l1", neighbouring: str = "add_remove") -> float:
    """Histogram with one bin per record: L1 1 / L2 1 (add/remove), L1 2 / L2 sqrt(2) (replace)."""
    relation = _relation(neighbouring)
    if not isinstance(norm, str) or norm not in ("l1", "l2"):
        raise ParameterError(explain("norm", norm, "'l1' or 'l2'", "pass norm='l1' for Laplace, 'l2' for Gaussian"))
    if relation == "add_remove":
        return 1.0
    return 2.0 if norm == "l1" else math.sqrt(2.0)


def clipped_gradient_sum_sensitivity(*, clip_norm: float, neighbouring: str = "add_remove") -> float:
    """L2 sensitivity of a sum of per-example gradients clipped to norm C: C (add/remove) or 2C (replace)."""
    c = check_positive(clip_norm, "clip_norm")
    return c if _relation(neighbouring) == "add_remove" else 2 * c


def clipped_gradient_mean_sensitivity(*, clip_norm: float, batch_size: int, neighbouring: str = "replace") -> float:
    """L2 sensitivity of the mean over a fixed batch size B of gradients clipped to C: 2C/B (replace).

    Dividing by a *fixed* B is only meaningful with replace neighbours (add/remove changes the count; use the
    sum and divide after the noise instead): add/remove is refused here.
    """
    c = check_positive(clip_norm, "clip_norm")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ParameterError(explain("batch_size", batch_size, "an int >= 1", "pass the fixed batch size"))
    if _relation(neighbouring) != "replace":
        raise ParameterError(explain("neighbouring", neighbouring, "'replace' for a fixed-size mean",
                                     "use clipped_gradient_sum_sensitivity and divide the noisy sum by B"))
    return 2 * c / batch_size


def l1_from_l2(l2_sensitivity: float, dim: int) -> float:
    """An L1 bound from an L2 bound in ``dim`` coordinates: ``sqrt(dim) * Δ2`` (Cauchy-Schwarz)."""
    s = check_positive(l2_sensitivity, "l2_sensitivity")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ParameterError(explain("dim", dim, "an int >= 1", "pass the number of coordinates"))
    return math.sqrt(dim) * s
