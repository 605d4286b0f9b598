"""Samplers beyond int64: scales up to 2^4096 are drawn exactly on Python integers, never wrapped (issue 42).

The geometric law of ratio ``q = exp(-gamma)`` has ``P(G >= k) = q^k`` exactly; the discrete Laplace of scale
``b`` has ``P(|Y| >= k) = 2 q^k / (1 + q)`` for ``k >= 1`` with ``q = exp(-1/b)``. The tests bin the draws at
integer edges ``k_j = ceil(x_j / gamma)`` and compare with those exact tail probabilities (chi-square), check the
parity and sign balance (binomial), and the Gaussian against its variance and the normal CDF (for sigma ~ 2^60
the discrete and continuous Gaussians differ by far less than 10^-100 in any interval). Each check rejects at
``ALPHA = 1e-4`` (tests/dp/stats.py): 15 checks here, false-failure rate below 0.15% per choice of seeds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from mpdp.dp.samplers import discrete_gaussian, discrete_laplace, geometric
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA, binomial_pvalue

N = 20_000
EDGES = (0.0, 0.05, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # in units of the scale 1 / gamma


def _binned_tail_pvalue(magnitudes: list[int], gamma: Fraction, tail: float) -> float:
    """Chi-square of ``magnitudes`` binned at ``k_j = ceil(x_j / gamma)`` against ``P(M >= k) = tail q^k``
    (``tail`` = 1 for a geometric; for |discrete Laplace|, ``P(M >= k) = tail q^k`` for ``k >= 1``)."""
    edges = [math.ceil(Fraction(x) / gamma) for x in EDGES]
    edges[0] = 0
    survival = [1.0] + [tail * math.exp(-float(gamma * k)) for k in edges[1:]] + [0.0]
    probs = np.array([survival[j] - survival[j + 1] for j in range(len(edges))])
    counts = np.zeros(len(edges))
    for m in magnitudes:
        counts[np.searchsorted(edges, m, side="right") - 1] += 1
    return float(stats.chisquare(counts, probs * len(magnitudes) / probs.sum()).pvalue)


@pytest.mark.parametrize("bits", [50, 52, 61, 62, 70, 300])
def test_geometric_beyond_int64_has_the_exact_tail_and_no_negative_draw(bits: int) -> None:
    gamma = Fraction(1, 1 << bits)
    draws = geometric(gamma, N, rng=RandomSource.seeded(f"big-geo-{bits}"))
    values = [int(v) for v in draws.tolist()]
    assert min(values) >= 0
    assert draws.dtype == (np.int64 if bits <= 51 else object)  # decided by gamma, never by the draws
    assert _binned_tail_pvalue(values, gamma, 1.0) > ALPHA
    if bits in (61, 70):  # the low bits are uniform too: P(G even) = 1 / (1 + q), q within 2^-bits of 1
        assert binomial_pvalue(sum(v % 2 == 0 for v in values), N, 0.5) > ALPHA
    if bits == 61:  # about e^-4 = 1.8% of the mass lies beyond int64: it must be there, not wrapped
        assert sum(v > 2**63 - 1 for v in values) > 0.01 * N


@pytest.mark.parametrize("scale", [2**62, 2**70, 2**1000])
def test_discrete_laplace_beyond_int64_is_symmetric_with_the_exact_tail(scale: int) -> None:
    draws = discrete_laplace(scale, N, rng=RandomSource.seeded(f"big-dlap-{scale.bit_length()}"))
    values = [int(v) for v in draws.tolist()]
    gamma = Fraction(1, scale)
    q = math.exp(-float(gamma))
    assert binomial_pvalue(sum(v > 0 for v in values), sum(v != 0 for v in values), 0.5) > ALPHA
    assert _binned_tail_pvalue([abs(v) for v in values], gamma, 2 / (1 + q)) > ALPHA


def test_discrete_gaussian_beyond_int64_matches_the_normal_law() -> None:
    sigma = 2**60
    draws = discrete_gaussian(sigma * sigma, 4000, rng=RandomSource.seeded("big-gauss"))
    z = np.array([int(v) / sigma for v in draws.tolist()])
    edges = np.array([-np.inf, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, np.inf])
    expected = np.diff(stats.norm.cdf(edges)) * z.size
    observed = np.histogram(z, bins=edges)[0]
    assert stats.chisquare(observed, expected).pvalue > ALPHA
