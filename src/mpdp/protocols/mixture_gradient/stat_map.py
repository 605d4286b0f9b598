"""The public linear map from a party's weighted sufficient statistics to its gradient coordinates.

Exponential-family components make the gradient of a weighted sum of log-densities a linear function of weighted
sums of their sufficient statistics ``T``: the secure step (:mod:`~mpdp.protocols.mixture_gradient.step`)
computes ``M = T^T w`` and ``s = sum_i w_i`` and releases the map of them. The learning side builds a map per
party's feature block (``FeatureBlock.stat_map``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, ShapeMismatchError, explain

__all__ = ["FloatArray", "IntArray", "StatMap"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class StatMap:
    """The public linear map from a party's weighted statistics to its gradient coordinates.

    For coordinate ``d``: ``grad[d] = coef_stat[d] * M[stat[d], comp[d]] + coef_sum[d] * s[comp[d]]`` with
    ``M = T^T w`` (statistics x components) and ``s = sum_i w_i`` (components).
    """

    stat: IntArray
    comp: IntArray
    coef_stat: FloatArray
    coef_sum: FloatArray

    def __post_init__(self) -> None:
        n = self.stat.shape
        if self.stat.ndim != 1 or any(a.shape != n for a in (self.comp, self.coef_stat, self.coef_sum)):
            raise ShapeMismatchError(explain("StatMap arrays", [self.stat.shape, self.comp.shape,
                                             self.coef_stat.shape, self.coef_sum.shape], "four vectors of one length",
                                             "build it with FeatureBlock.stat_map"))
        if not (all_finite(self.coef_stat) and all_finite(self.coef_sum)):
            raise ParameterError(explain("StatMap coefficients", "NaN or inf", "finite numbers",
                                         "the model's parameters overflowed; lower the learning rate"))

    @property
    def size(self) -> int:
        return int(self.stat.size)

    def apply(self, M: FloatArray, s: FloatArray) -> FloatArray:
        """The map in float64 (the plaintext reference)."""
        out: FloatArray = self.coef_stat * M[self.stat, self.comp] + self.coef_sum * s[self.comp]
        return out


def all_finite(a: FloatArray) -> bool:
    """No NaN or inf in ``a`` (the ufunc reductions called directly: numpy's ``np.all`` and ``ndarray.all`` go
    through Python-level wrappers, which cost more than the check on a step's small arrays)."""
    return bool(np.logical_and.reduce(np.isfinite(a), axis=None))


def finite_range(a: FloatArray) -> tuple[float, float]:
    """``(min, max)`` of finite ``a`` (``(inf, -inf)`` when empty), by the ufunc reductions as :func:`all_finite`."""
    return (float(np.minimum.reduce(a, axis=None, initial=np.inf)),
            float(np.maximum.reduce(a, axis=None, initial=-np.inf)))
