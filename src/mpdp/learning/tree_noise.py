"""The three DP-core calls PFDS makes, in one place: budget checks, exponential-mechanism choice, Laplace counts.

Every noisy quantity of paper 004 goes through :mod:`mpdp.dp` (exact samplers on a grid, injected random
source); this module only adapts shapes, so the tree and consistency code read as the paper's pseudocode.

References
----------
004_c0399b84594d620b.txt, section 2.3 (Theorems 2.4 and 2.5).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = ["check_epsilon", "exponential_choice", "laplace_counts"]

FloatArray = npt.NDArray[np.float64]


def check_epsilon(epsilon: float, name: str = "epsilon") -> None:
    """Raise :class:`~mpdp.errors.ParameterError` unless ``epsilon`` is a finite number > 0."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) \
            or epsilon <= 0:
        raise ParameterError(explain(name, epsilon, "a finite number > 0",
                                     "pass the privacy budget as a positive float, e.g. epsilon=1.0"))


def exponential_choice(utility: FloatArray, *, epsilon: float, sensitivity: float, rng: RandomSource) -> int:
    """Index ``i`` drawn with probability proportional to ``exp(epsilon * utility[i] / (2 sensitivity))``."""
    raise NotImplementedError("waiting for the DP core's exponential mechanism (issue 5)")


def laplace_counts(counts: FloatArray, *, epsilon: float, sensitivity: float, rng: RandomSource) -> FloatArray:
    """``counts + Lap(sensitivity / epsilon)`` element-wise (one epsilon-DP release of the whole array)."""
    raise NotImplementedError("waiting for the DP core's Laplace mechanism (issue 5)")
