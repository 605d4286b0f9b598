"""Renormalization constants that cancel in ratios (paper 002, section 4.5.1 and Algorithm 4).

In the vertically partitioned mixture model of paper 002, party ``j`` holds for record ``i`` and component
``k`` the log-density ``a_ikj = log f_j(x_i^(j) | theta_kj)`` and contributes ``exp(a_ikj)`` to the
secure products ``prod_j exp(a_ikj)``. Fixed point cannot hold ``exp(-700)``: every such value rounds to
zero, the denominator ``S_i = sum_k pi_k prod_j exp(a_ikj)`` becomes 0, Newton-Raphson division returns 0 and
the model silently stops learning (the paper's Figure 2).

Each party therefore subtracts its own per-record constant ``m_ij = max_k a_ikj`` before exponentiating:
``e_ikj = exp(a_ikj - m_ij)``, whose largest value per record is 1. The factor ``prod_j exp(-m_ij)`` is
common to the numerator and the denominator of the responsibilities ``r_ik = pi_k prod_j e_ikj / S_i``
and cancels exactly; the record's log-likelihood is ``log S_i + sum_j m_ij``.

What renormalization cannot do: when parties favour different components, every product
``prod_j e_ikj`` may still be tiny (``exp(-40)`` from one party for the component the other rates 1).
:class:`RenormalizationParams` states the smallest ``S_i`` the secure computation accepts,
``min_k pi_k 2^min_log2``; the secure reciprocal checks it (its ``strict`` domain check) and refuses with
:class:`~mpdp.errors.DomainError` rather than dividing by a value the fixed point has rounded away. The
paper's Algorithm 4 instead raises each party's values to a threshold derived from the precision and the
number of parties; ``floor_log2`` offers that too, at a documented cost: the result is then exact for the
floored factors, i.e. biased where a factor was below ``2^(floor_log2 / P)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["RenormalizationParams", "renormalize"]


@dataclass(frozen=True)
class RenormalizationParams:
    """How small the secure products may get, and the optional floor of Algorithm 4.

    Parameters
    ----------
    parties:
        P, the number of parties whose factors are multiplied.
    min_log2:
        The secure computation accepts ``S_i >= min_k pi_k 2^min_log2`` (default -30: with f = 48 such an
        ``S_i`` still carries 18 significant bits; the responsibilities' relative error grows like
        ``2^-f / S_i``).
    floor_log2:
        If set, each party raises its factors to at least ``2^(floor_log2 / P)`` so that every product is at
        least ``2^floor_log2`` (Algorithm 4's threshold); must be ``>= min_log2``. Default None: no
        flooring, exact cancellation.
    """

    parties: int
    min_log2: float = -30.0
    floor_log2: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.parties, int) or self.parties < 1:
            raise ParameterError(explain("parties", self.parties, "an int >= 1", "pass the number of parties"))
        if not (math.isfinite(self.min_log2) and -60 <= self.min_log2 < 0):
            raise ParameterError(explain("min_log2", self.min_log2, "a number in [-60, 0)", "e.g. -30"))
        if self.floor_log2 is not None and not (self.min_log2 <= self.floor_log2 < 0):
            raise ParameterError(explain("floor_log2", self.floor_log2, f"in [min_log2 = {self.min_log2}, 0)",
                                         "pass None (no floor) or e.g. floor_log2=-24"))

    @property
    def floor(self) -> float:
        """The lowest factor a party sends (0.0 without flooring)."""
        return 0.0 if self.floor_log2 is None else 2.0 ** (self.floor_log2 / self.parties)


def renormalize(log_values: npt.ArrayLike, params: RenormalizationParams, *,
                axis: int = -1) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One party's ``(e, m)``: ``m = max(log_values, axis)``, ``e = exp(log_values - m)`` (floored if asked).

    Run by each party on its own data (no communication). ``e`` lies in ``[0, 1]`` with a 1 in every
    record; ``m`` is the per-record constant to add back to log-likelihoods.
    """
    a = np.asarray(log_values, dtype=np.float64)
    if a.size == 0:
        raise ParameterError(explain("log_values", a.shape, "a non-empty array", "pass log-densities"))
    m = a.max(axis=axis, keepdims=True)
    if not np.isfinite(m).all():  # the maximum is NaN (a NaN), +inf (a +inf) or -inf (all -inf) exactly then
        if np.any(np.isnan(a)) or np.any(a == np.inf):
            raise DomainError(explain("log_values", "NaN or +inf", "log-densities < +inf",
                                      "check the component densities"))
        raise DomainError(explain("log_values", "a record with every component at -inf",
                                  "at least one finite log-density per record", "check the data and the model"))
    e = np.exp(a - m)
    np.maximum(e, params.floor, out=e)
    return e, np.squeeze(m, axis=axis)
