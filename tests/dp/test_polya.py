"""Exact Pólya sampler and discrete Laplace shares against exact pmfs (chi-square) and variances.

Fixed seeds; every check rejects at ALPHA = 1e-4 (false-failure rate 1e-4 per check for a correct sampler, see
tests/dp/stats.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from mpdp.dp import polya
from mpdp.dp.polya import laplace_share, negative_binomial
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA, chi_square_pvalue, discrete_laplace_pmf


def nb_pmf(r: float, gamma: float):  # type: ignore[no-untyped-def]
    q = math.exp(-gamma)
    return lambda k: stats.nbinom.pmf(np.asarray(k), r, 1 - q)


@pytest.mark.parametrize(("r", "gamma"), [(Fraction(1, 3), Fraction(1, 2)), (1, Fraction(1, 4)),
                                          (Fraction(5, 2), 1)])
def test_negative_binomial_matches_the_exact_pmf(r: object, gamma: object) -> None:
    draws = negative_binomial(r, gamma, 12_000, rng=RandomSource.seeded(f"nb-{r}-{gamma}"))
    assert draws.dtype == np.int64 and draws.min() >= 0
    support = np.arange(0, 400)
    assert chi_square_pvalue(draws, nb_pmf(float(Fraction(r)), float(Fraction(gamma))), support) > ALPHA


def test_shares_of_three_parties_sum_to_a_discrete_laplace() -> None:
    n, b = 12_000, 3
    shares = [laplace_share(b, 3, n, rng=RandomSource.seeded(f"holder-{i}")) for i in range(3)]
    total = shares[0] + shares[1] + shares[2]
    support, pmf = discrete_laplace_pmf(b)
    assert chi_square_pvalue(total, pmf, support) > ALPHA
    # one share alone is the Pólya difference NB(1/3) - NB(1/3), not a Laplace: its exact pmf by convolution
    q = math.exp(-1 / b)
    x = stats.nbinom.pmf(np.arange(0, 600), 1 / 3, 1 - q)
    diff = np.convolve(x, x[::-1])  # index i <-> value i - 599
    values = np.arange(-599, 600)

    def share_pmf(k: np.ndarray) -> np.ndarray:
        return np.interp(np.asarray(k, dtype=float), values, diff, left=0.0, right=0.0)

    assert chi_square_pvalue(shares[0], share_pmf, values) > ALPHA
    assert chi_square_pvalue(shares[0], pmf, support) < ALPHA  # and the test can tell the two apart


def test_variance_of_sums_at_a_grid_scale() -> None:
    """Four holders at b = 2^16 units: the sum has variance 2q/(1-q)^2. With n = 1500 draws the sample variance
    of a Laplace has relative s.d. sqrt(5/n) = 0.058 (excess kurtosis 3); the band of 4 s.d. (0.23) gives a
    false-failure rate of about 6e-5 (normal approximation)."""
    n, b = 1500, 2**16
    total = sum(laplace_share(b, 4, n, rng=RandomSource.seeded(f"grid-{i}")) for i in range(4))
    q = math.exp(-1 / b)
    assert np.var(total) / (2 * q / (1 - q) ** 2) == pytest.approx(1.0, abs=0.23)


def test_seeded_draws_are_reproducible_and_scalar_shape() -> None:
    a = laplace_share(10, 2, 50, rng=RandomSource.seeded(4))
    b = laplace_share(10, 2, 50, rng=RandomSource.seeded(4))
    assert np.array_equal(a, b)
    assert isinstance(negative_binomial(1, 1, rng=RandomSource.seeded(1)), int)
    assert negative_binomial(1, 1, (2, 3), rng=RandomSource.seeded(1)).shape == (2, 3)


def test_slow_paths_agree_with_the_fast_paths() -> None:
    """The exact refinements (more random bits, higher precision) give the decisions of the 64-bit paths."""
    table = polya._table(Fraction(1, 3), Fraction(1, 7))
    words = RandomSource.seeded(9).uint64(300)
    fast = np.searchsorted(table.hi, words, side="right")
    assert [table._slow(int(w), RandomSource.seeded(1)) for w in words] == fast.tolist()
    gamma = Fraction(1, 1000)
    bounds = polya._jump_constants(gamma, 128)
    pairs = RandomSource.seeded(10).uint64((2, 200))
    for u, v in pairs.T.tolist():
        low = polya._log_jump(u, v, 64, bounds, 128)
        high = polya._log_jump(u << 64, v << 64, 128, polya._jump_constants(gamma, 512), 512)
        assert low is not None and high == low
    assert polya._log_jump(5, 0, 64, bounds, 128) is None  # V's interval touches 0: undecided, refine


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(r=0, gamma=1), "r"), (dict(r=1, gamma=-1), "gamma"), (dict(r="x", gamma=1), "rational"),
])
def test_bad_parameters_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        negative_binomial(**kwargs, size=3)


def test_bad_parts_are_refused() -> None:
    with pytest.raises(ParameterError, match="number of noise contributors"):
        laplace_share(3, 0, 4)
