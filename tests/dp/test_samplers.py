"""Exact samplers against their exact pmfs (chi-square), variances and tails. See tests/dp/stats.py for the
false-failure rate (ALPHA = 1e-4 per check)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from mpdp.dp.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace, geometric
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource
from tests.dp.stats import (
    ALPHA,
    binomial_pvalue,
    chi_square_pvalue,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
)

N = 100_000


@pytest.mark.parametrize("gamma", [0, Fraction(1, 10), 1, Fraction(7, 3), 5.5])
def test_bernoulli_exp_frequency(gamma: object) -> None:
    rng = RandomSource.seeded(f"bern-{gamma}")
    draws = bernoulli_exp(gamma, N, rng=rng)
    assert draws.dtype == bool
    p = math.exp(-float(Fraction(gamma)))  # type: ignore[arg-type]
    if p == 1:
        assert draws.all()
    else:
        assert binomial_pvalue(int(draws.sum()), N, p) > ALPHA


def test_bernoulli_exp_large_gamma_is_almost_never_true() -> None:
    assert not bernoulli_exp(60, N, rng=RandomSource.seeded(3)).any()  # p = 8.8e-27


@pytest.mark.parametrize("gamma", [Fraction(2), Fraction(1, 2), Fraction(1, 100), Fraction(1, 3000)])
def test_geometric_matches_pmf(gamma: Fraction) -> None:
    rng = RandomSource.seeded(f"geo-{gamma}")
    draws = geometric(gamma, N, rng=rng)
    q = math.exp(-float(gamma))
    support = np.arange(0, int(80 / float(gamma)) + 10)

    def pmf(k: np.ndarray) -> np.ndarray:
        return (1 - q) * q ** np.asarray(k, dtype=float)

    assert draws.min() >= 0
    assert chi_square_pvalue(draws, pmf, support) > ALPHA


@pytest.mark.parametrize("scale", [0.3, 1, Fraction(7, 3), 5, 100, 2500])
def test_discrete_laplace_matches_pmf(scale: object) -> None:
    rng = RandomSource.seeded(f"dlap-{scale}")
    draws = discrete_laplace(scale, N, rng=rng)
    support, pmf = discrete_laplace_pmf(float(scale))  # type: ignore[arg-type]
    assert chi_square_pvalue(draws, pmf, support) > ALPHA


@pytest.mark.parametrize("sigma2", [0.25, 1, 2.7, Fraction(50, 3), 100, 10_000])
def test_discrete_gaussian_matches_pmf(sigma2: object) -> None:
    rng = RandomSource.seeded(f"dgauss-{sigma2}")
    draws = discrete_gaussian(sigma2, N, rng=rng)
    support, pmf = discrete_gaussian_pmf(float(sigma2))  # type: ignore[arg-type]
    assert chi_square_pvalue(draws, pmf, support) > ALPHA


@pytest.mark.parametrize("sigma2", [1, 100, 10**6, 2**70])
def test_discrete_gaussian_variance_and_tails(sigma2: int) -> None:
    rng = RandomSource.seeded(f"dgauss-var-{sigma2}")
    draws = discrete_gaussian(sigma2, N, rng=rng).astype(float)
    sigma = math.sqrt(sigma2)
    support, pmf = discrete_gaussian_pmf(float(min(sigma2, 10**6)))
    if sigma2 <= 10**6:
        var = float((pmf(support) * support.astype(float) ** 2).sum())
        tail3 = float(pmf(support[np.abs(support) >= 3 * sigma]).sum())
    else:  # continuous limit: the lattice is 2^35 times finer than sigma
        var, tail3 = float(sigma2), math.erfc(3 / math.sqrt(2))
    # Sample second moment: std of y^2 is sqrt(2) var; |z| < 4.42 has two-sided level 1e-5.
    z = (np.mean(draws**2) - var) / (math.sqrt(2) * var / math.sqrt(N))
    assert abs(z) < 4.42
    assert abs(np.mean(draws)) / (sigma / math.sqrt(N)) < 4.42
    assert binomial_pvalue(int(np.count_nonzero(np.abs(draws) >= 3 * sigma)), N, tail3) > ALPHA


def test_discrete_laplace_variance() -> None:
    scale = 40
    draws = discrete_laplace(scale, N, rng=RandomSource.seeded("dlap-var")).astype(float)
    q = math.exp(-1 / scale)
    var = 2 * q / (1 - q) ** 2
    # fourth moment of the two-sided geometric ~ 6 var^2 (Laplace limit): std of y^2 ~ sqrt(5) var
    z = (np.mean(draws**2) - var) / (math.sqrt(5) * var / math.sqrt(N))
    assert abs(z) < 4.42


def test_shapes_scalars_and_reproducibility() -> None:
    a = discrete_gaussian(10, (3, 4), rng=RandomSource.seeded(9))
    b = discrete_gaussian(10, (3, 4), rng=RandomSource.seeded(9))
    assert a.shape == (3, 4) and a.dtype == np.int64
    assert np.array_equal(a, b)
    assert isinstance(discrete_gaussian(10, rng=RandomSource.seeded(1)), int)
    assert isinstance(discrete_laplace(2, rng=RandomSource.seeded(1)), int)
    assert isinstance(bernoulli_exp(1), bool)  # default source: fresh entropy
    assert discrete_laplace(3, 0).shape == (0,)


@pytest.mark.parametrize(
    ("fn", "arg", "match"),
    [
        (discrete_gaussian, 0, "sigma2"),
        (discrete_gaussian, -1.0, "sigma2"),
        (discrete_gaussian, math.nan, "sigma2"),
        (discrete_gaussian, math.inf, "sigma2"),
        (discrete_gaussian, 2.0**1001, "sigma2"),
        (discrete_laplace, 2**4097, "scale"),
        (geometric, Fraction(1, 2**4097), "scale"),
        (discrete_laplace, 0, "scale"),
        (discrete_laplace, "abc", "scale"),
        (geometric, 0, "gamma"),
        (bernoulli_exp, -1, "gamma"),
    ],
)
def test_bad_parameters_are_refused(fn: object, arg: object, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        fn(arg, 3)  # type: ignore[operator]


def test_bad_size_is_refused() -> None:
    with pytest.raises(ParameterError, match="size"):
        discrete_gaussian(1, -1)


def _folded_pvalue(draws: np.ndarray, support: np.ndarray, pmf: object, modulus: int) -> float:
    from scipy import stats

    probs = pmf(support)  # type: ignore[operator]
    expected = np.bincount(np.abs(support) % modulus, weights=probs, minlength=modulus) * draws.size
    observed = np.bincount(np.abs(draws) % modulus, minlength=modulus)
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


@pytest.mark.parametrize("sigma2", [10_000, 2_500, 10**6])
def test_discrete_gaussian_fine_structure(sigma2: int) -> None:
    # Residues of |y| modulo small numbers are nearly uniform; a flaw in the remainder step of the geometric
    # proposal (G = m V + R, m a power of two) would show as a sawtooth here long before it shows in the pmf.
    draws = discrete_gaussian(sigma2, N, rng=RandomSource.seeded(f"fine-{sigma2}"))
    support, pmf = discrete_gaussian_pmf(float(sigma2))
    for modulus in (8, 12):
        assert _folded_pvalue(draws, support, pmf, modulus) > ALPHA


@pytest.mark.parametrize("scale", [100, 2500])
def test_discrete_laplace_fine_structure(scale: int) -> None:
    draws = discrete_laplace(scale, N, rng=RandomSource.seeded(f"fine-lap-{scale}"))
    support, pmf = discrete_laplace_pmf(float(scale))
    for modulus in (8, 12):
        assert _folded_pvalue(draws, support, pmf, modulus) > ALPHA


def test_geometric_remainder_law() -> None:
    # G = m V + R with m = 256 for gamma = 1/3000: R must follow the truncated geometric law exactly.
    # A z-test on E[R] (400k draws) detects an error of 1/2 in the remainder's exponent at about 8 sigma.
    gamma, m, n = Fraction(1, 3000), 256, 400_000
    draws = geometric(gamma, n, rng=RandomSource.seeded("geo-rem"))
    q = math.exp(-float(gamma))
    r = np.arange(m, dtype=float)
    w = q**r / (q**r).sum()
    mean, var = float((w * r).sum()), float((w * r * r).sum()) - float((w * r).sum()) ** 2
    z = (np.mean(draws % m) - mean) / math.sqrt(var / n)
    assert abs(z) < 4.42
