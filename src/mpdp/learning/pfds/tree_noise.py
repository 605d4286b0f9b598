"""The DP-core calls PFDS makes, in one place: budget checks, exponential-mechanism choice, Laplace counts.

Every noisy quantity of paper 004 goes through :mod:`mpdp.dp` (exact samplers, injected random source); this
module only adapts shapes and ledger labels, so the tree and consistency code read as the paper's pseudocode.

* Split values: :class:`mpdp.dp.ExponentialMechanism` (exact selection with probability proportional to
  ``exp(eps u / (2 Delta_u))``). One tree level selects at many nodes on disjoint data, so the *level* is
  charged once (:func:`charge_level`, parallel composition) and each node's selection draws without a ledger.
* Counts: :class:`mpdp.dp.LaplaceMechanism` released on a grid (exact discrete Laplace noise), charged
  when released.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 2.3 (Theorems 2.2, 2.4 and 2.5).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import numpy.typing as npt

from mpdp.dp import ExponentialMechanism, LaplaceMechanism
from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.randomness import RandomSource

__all__ = ["charge_level", "check_epsilon", "exponential_choice", "laplace_counts"]

FloatArray = npt.NDArray[np.float64]


def check_epsilon(epsilon: float, name: str = "epsilon") -> None:
    """Raise :class:`~mpdp.errors.ParameterError` unless ``epsilon`` is a finite number > 0."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not math.isfinite(epsilon) \
            or epsilon <= 0:
        raise ParameterError(explain(name, epsilon, "a finite number > 0",
                                     "pass the privacy budget as a positive float, e.g. epsilon=1.0"))


def charge_level(ledger: BudgetSpender | None, *, epsilon: float, sensitivity: float, label: str) -> None:
    """Charge one level of exponential-mechanism selections (disjoint data: one epsilon in total)."""
    if ledger is not None:
        ledger.spend(ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity).cost, label=label)


def exponential_choice(utility: FloatArray, *, epsilon: float, sensitivity: float, rng: RandomSource) -> int:
    """Index ``i`` drawn with probability proportional to ``exp(epsilon * utility[i] / (2 sensitivity))``.

    The caller has charged the level (:func:`charge_level`); this draw is one node's part of it. When every
    utility is equal (e.g. an empty node) the mechanism's distribution is exactly uniform, which is drawn
    directly: the same distribution without the exact-arithmetic cost.
    """
    utility = np.asarray(utility, dtype=np.float64)
    if utility.size and np.all(utility == utility[0]) and np.isfinite(utility[0]):
        return int(rng.below(utility.size, 1)[0])
    with warnings.catch_warnings():
        # A seeded source warns once per release; the tree reports it once per tree (make_tree).
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity).select(utility, rng=rng)


def laplace_counts(counts: FloatArray, *, epsilon: float, sensitivity: float, rng: RandomSource,
                   ledger: BudgetSpender | None = None, label: str = "laplace counts") -> FloatArray:
    """``counts + Lap(sensitivity / epsilon)`` element-wise: one epsilon-DP release of the whole array."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        out = LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity).release(
            np.asarray(counts, dtype=np.float64), rng=rng, ledger=ledger, label=label)
    return np.asarray(out, dtype=np.float64).reshape(np.shape(counts))
