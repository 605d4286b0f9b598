"""Suite ``dp``: exact noise samplers.

mpdp's vectorised exact discrete Gaussian (:func:`mpdp.dp.samplers.discrete_gaussian`) at sigma^2 in
{1, 10^2, 10^4, 10^6}, the discrete Laplace, and the grid Laplace/Gaussian used by the mechanisms, against a
straightforward exact rejection sampler written here in the style of the Canonne-Kamath-Steinke reference
implementation (Python ints and Fractions, one sample at a time, bits from the same RandomSource).
Target: >= 1,000,000 discrete Gaussian samples/s at sigma^2 = 10^4.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial

from bench.harness import BenchResult, time_call
from mpdp.dp.grid import default_grid_bits, gaussian_on_grid, laplace_on_grid
from mpdp.dp.samplers import discrete_gaussian, discrete_laplace
from mpdp.randomness import RandomSource

# -- baseline: CKS reference-style exact sampler ------------------------------------------------------------


def _bernoulli(p: Fraction, rng: RandomSource) -> bool:
    return rng.randbelow(p.denominator) < p.numerator


def _bernoulli_exp_le1(gamma: Fraction, rng: RandomSource) -> bool:
    k = 1
    while _bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(gamma: Fraction, rng: RandomSource) -> bool:
    while gamma > 1:
        gamma -= 1
        if not _bernoulli_exp_le1(Fraction(1), rng):
            return False
    return _bernoulli_exp_le1(gamma, rng)


def _geometric_exp(gamma: Fraction, rng: RandomSource) -> int:
    # CKS "geometric_exp_fast": uniform remainder below t accepted with exp(-u/t), then slow geometric.
    s, t = gamma.numerator, gamma.denominator
    while True:
        u = rng.randbelow(t)
        if _bernoulli_exp(Fraction(u, t), rng):
            break
    v = 0
    while _bernoulli_exp(Fraction(1), rng):
        v += 1
    return (u + t * v) // s


def _dlaplace(scale: Fraction, rng: RandomSource) -> int:
    while True:
        sign = rng.randbelow(2)
        magnitude = _geometric_exp(1 / scale, rng)
        if sign == 1 and magnitude == 0:
            continue
        return magnitude * (1 - 2 * sign)


def reference_discrete_gaussian(sigma2: Fraction, n: int, rng: RandomSource) -> list[int]:
    t = int(sigma2**0.5) + 1  # floor(sigma) + 1 (exact enough for the bench's integer sigma^2)
    out: list[int] = []
    while len(out) < n:
        y = _dlaplace(Fraction(t), rng)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if _bernoulli_exp(gamma, rng):
            out.append(y)
    return out


def reference_discrete_laplace(scale: Fraction, n: int, rng: RandomSource) -> list[int]:
    return [_dlaplace(scale, rng) for _ in range(n)]


# -- suite ----------------------------------------------------------------------------------------------------


def run(quick: bool = False) -> list[BenchResult]:
    rng = RandomSource.fresh()
    n = 200_000 if quick else 2_000_000
    n_ref = 2_000 if quick else 20_000
    results = []
    for sigma2 in (1, 10**2, 10**4, 10**6):
        discrete_gaussian(sigma2, 1000, rng=rng)  # build the (small, cached) threshold table outside the timing
        seconds, _ = time_call(partial(discrete_gaussian, sigma2, n, rng=rng))
        ref_seconds, _ = time_call(partial(reference_discrete_gaussian, Fraction(sigma2), n_ref, rng), repeat=1)
        results.append(
            BenchResult(f"discrete Gaussian sigma^2={sigma2:g}", n, seconds, "CKS reference (Python)",
                        ref_seconds * n / n_ref, note=None if sigma2 != 10**4 else "target >= 1e6 samples/s")
        )
    for scale in (1, 100):
        discrete_laplace(scale, 1000, rng=rng)
        seconds, _ = time_call(partial(discrete_laplace, scale, n, rng=rng))
        ref_seconds, _ = time_call(partial(reference_discrete_laplace, Fraction(scale), n_ref, rng), repeat=1)
        results.append(BenchResult(f"discrete Laplace scale={scale}", n, seconds, "CKS reference (Python)",
                                   ref_seconds * n / n_ref))
    k = default_grid_bits(1.0)
    laplace_on_grid(1.0, 1000, grid_bits=k, rng=rng)
    seconds, _ = time_call(lambda: laplace_on_grid(1.0, n, grid_bits=k, rng=rng))
    results.append(BenchResult("grid Laplace b=1 (grid 2^-40)", n, seconds,
                               note="discrete Laplace of scale 2^40 on the grid"))
    gaussian_on_grid(1.0, 1000, grid_bits=k, rng=rng)
    seconds, _ = time_call(lambda: gaussian_on_grid(1.0, n, grid_bits=k, rng=rng))
    ref_seconds, _ = time_call(
        lambda: reference_discrete_gaussian(Fraction(1 << (2 * k)), n_ref, rng), repeat=1
    )
    results.append(BenchResult("grid Gaussian sigma=1 (grid 2^-40)", n, seconds, "CKS reference (Python)",
                               ref_seconds * n / n_ref, note="discrete Gaussian of sigma 2^40 on the grid"))
    return results
