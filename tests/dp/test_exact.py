"""The exact comparison machinery: MPFR thresholds, the libm-free float bracket, and the lazy slow path."""

from __future__ import annotations

import math
from fractions import Fraction

import gmpy2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.dp import _exact
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA, binomial_pvalue

_CTX = gmpy2.context(precision=1000)


def _reference_exp_neg(g: Fraction) -> gmpy2.mpfr:
    """exp(-g) to 1000 bits (relative error 2^-999: decides any floor at <= 300 bits unless a tie is that close)."""
    return _CTX.exp(-_CTX.div(gmpy2.mpfr(g.numerator, 1000), gmpy2.mpfr(g.denominator, 1000)))


def _reference_floor(g: Fraction, bits: int) -> int:
    return int(_CTX.floor(_CTX.mul_2exp(_reference_exp_neg(g), bits)))


@pytest.mark.parametrize("gamma", [Fraction(1), Fraction(1, 3), Fraction(7, 2), Fraction(10**6, 7), Fraction(0.1)])
def test_floor_exp_neg_matches_high_precision_reference(gamma: Fraction) -> None:
    for bits in (53, 117, 300):
        assert _exact.floor_exp_neg(gamma, bits) == _reference_floor(gamma, bits)


def test_floor_exp_neg_of_zero_is_exactly_one() -> None:
    assert _exact.floor_exp_neg(Fraction(0), 53) == 1 << 53


@given(st.floats(min_value=0, max_value=60, allow_nan=False), st.floats(min_value=0, max_value=2**-30))
def test_bracket_contains_true_value(g: float, err: float) -> None:
    lo, hi = _exact.exp_neg_bracket53(np.array([g]), err)
    for true_g in (g, max(g - err, 0.0), g + err):
        p = _CTX.mul_2exp(_reference_exp_neg(Fraction(true_g)), 53)
        assert gmpy2.mpfr(float(lo[0])) <= p <= gmpy2.mpfr(float(hi[0]))
    # and the bracket is narrow when it can be (the fast path decides almost everything)
    if g <= 40:
        assert float(hi[0] - lo[0]) <= (2.0**-42 + 5 * err) * float(hi[0]) + 1e-300


def test_bracket_is_trivial_for_large_or_nan_error() -> None:
    lo, hi = _exact.exp_neg_bracket53(np.array([1.0, math.nan]), np.array([1e-3, 0.0]))
    assert lo.tolist() == [0.0, 0.0]
    assert hi.tolist() == [2.0**53, 2.0**53]


def test_lazy_path_alone_has_the_right_probability() -> None:
    # A huge g_err disables the fast path: every element is decided by MPFR on extended bits.
    rng = RandomSource.seeded("lazy")
    n = 4000
    gamma = Fraction(2, 3)
    out = _exact.accept_exp_neg(rng.uint64(n), np.full(n, 0.6), 1.0, lambda _i: gamma, rng)
    assert binomial_pvalue(int(out.sum()), n, math.exp(-2 / 3)) > ALPHA


def test_tie_on_the_prefix_is_resolved_with_more_bits() -> None:
    # Words whose 53-bit prefix equals floor(p 2^53): the comparison must look further, and then accepts
    # with probability frac(p 2^53) exactly.
    rng = RandomSource.seeded("tie")
    gamma = Fraction(1, 7)
    threshold = _exact.floor_exp_neg(gamma, 53)
    n = 3000
    words = np.full(n, np.uint64(threshold) << np.uint64(11), dtype=np.uint64)
    out = _exact.accept_exp_neg(words, np.full(n, float(gamma)), 2.0**-52, lambda _i: gamma, rng)
    frac = float(_CTX.sub(_CTX.mul_2exp(_reference_exp_neg(gamma), 53), threshold))
    assert binomial_pvalue(int(out.sum()), n, frac) > ALPHA


def test_lazy_uniform_decides_without_drawing_when_prefix_is_clear() -> None:
    rng = RandomSource.seeded(1)
    lazy = _exact.LazyUniform(0, 53, rng)
    assert lazy.less_than_exp_neg(Fraction(1)) is True
    assert lazy.bits == 53
    lazy = _exact.LazyUniform((1 << 53) - 1, 53, rng)
    assert lazy.less_than_exp_neg(Fraction(1)) is False


def test_geometric_thresholds_are_decreasing_and_end_at_zero() -> None:
    table = _exact.geometric_thresholds(Fraction(1, 10))
    assert table[0] == 0
    assert np.all(np.diff(table.astype(object)) >= 0)
    assert table[-1] == _exact.floor_exp_neg(Fraction(1, 10), 53)
    with pytest.raises(ParameterError, match="step"):
        _exact.geometric_thresholds(Fraction(0))


@pytest.mark.parametrize("bad", [math.nan, math.inf, "x", None, True, -1.0])
def test_as_rational_refuses_bad_values(bad: object) -> None:
    with pytest.raises(ParameterError, match="gamma"):
        _exact.as_rational(bad, "gamma")


def test_as_rational_is_exact() -> None:
    assert _exact.as_rational("0.1", "x") == Fraction(1, 10)
    assert _exact.as_rational(0.1, "x") == Fraction(0.1)
    assert _exact.as_rational(np.int64(3), "x") == 3
    assert _exact.as_rational(0, "x", allow_zero=True) == 0
