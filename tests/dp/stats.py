"""Statistical helpers for the sampler tests.

Every statistical test in tests/dp uses a fixed seed, so it is deterministic; its *false-failure rate* is the
probability that a correct sampler fails it over the choice of seed. Each test below rejects at
``ALPHA = 1e-4``; the DP test modules hold about 40 such checks, so a correct implementation fails any of them
with probability below 0.4% per fresh choice of seeds (Bonferroni), while the sample sizes (10^5 draws) detect
relative deviations of a few percent in any bin of probability >= 1%.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

ALPHA = 1e-4


def chi_square_pvalue(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray], support: np.ndarray) -> float:
    """Chi-square goodness-of-fit p-value of integer ``samples`` against ``pmf`` on ``support`` (a range).

    Bins with expected count below 5 are pooled into the two tails, and all mass outside ``support`` goes to
    the tails too, so the test covers the whole line.
    """
    n = samples.size
    probs = pmf(support)
    expected = n * probs
    keep = expected >= 5
    lo, hi = support[keep][0], support[keep][-1]
    inner = support[(support >= lo) & (support <= hi)]
    p_inner = pmf(inner)
    p_low = max(float(pmf(support[support < lo]).sum()) if (support < lo).any() else 0.0, 0.0)
    p_high = max(1.0 - float(p_inner.sum()) - p_low, 0.0)
    in_range = samples[(samples >= lo) & (samples <= hi)] - lo
    counts = np.bincount(in_range, minlength=inner.size).astype(float)
    obs = [float(np.count_nonzero(samples < lo)), *counts, float(np.count_nonzero(samples > hi))]
    exp = [p_low * n, *(p_inner * n), p_high * n]
    obs_a, exp_a = np.array(obs), np.array(exp)
    mask = exp_a > 0
    if (obs_a[~mask] > 0).any():
        return 0.0
    obs_a, exp_a = obs_a[mask], exp_a[mask]
    exp_a = exp_a * obs_a.sum() / exp_a.sum()
    return float(stats.chisquare(obs_a, exp_a).pvalue)


def binomial_pvalue(successes: int, trials: int, p: float) -> float:
    """Two-sided exact binomial test p-value."""
    return float(stats.binomtest(int(successes), int(trials), p).pvalue)


def discrete_gaussian_pmf(sigma2: float) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Support covering all but < 1e-30 of the mass, and the exact pmf (normalised in float64)."""
    half = math.ceil(12 * math.sqrt(sigma2)) + 3
    support = np.arange(-half, half + 1)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma2))
    total = weights.sum()

    def pmf(y: np.ndarray) -> np.ndarray:
        return np.exp(-(np.asarray(y, dtype=float) ** 2) / (2 * sigma2)) / total

    return support, pmf


def discrete_laplace_pmf(scale: float) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    q = math.exp(-1 / scale)
    half = math.ceil(70 * scale) + 3
    support = np.arange(-half, half + 1)

    def pmf(y: np.ndarray) -> np.ndarray:
        return (1 - q) / (1 + q) * q ** np.abs(np.asarray(y, dtype=float))

    return support, pmf
