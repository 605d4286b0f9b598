"""The fixed inverse-square-root polynomials and their error bounds (crypto.approximations)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.approximations import (
    HALF_LOW,
    INV_SQRT_POLYNOMIAL_BITS,
    INV_SQRT_TABLES,
    inv_sqrt_bucket_low,
    inv_sqrt_chebyshev,
    inv_sqrt_polynomial_error,
)
from mpdp.errors import ParameterError

CASES = [(d, n) for n, (table, _) in sorted(INV_SQRT_TABLES.items()) for d in sorted(table)]


@pytest.mark.parametrize(("degree", "per"), CASES)
def test_inv_sqrt_polynomial_bound_holds_and_is_tight(degree: int, per: int) -> None:
    margin = 1e-3
    c = np.array(INV_SQRT_TABLES[per][0][degree], dtype=np.float64) / 2.0**INV_SQRT_POLYNOMIAL_BITS
    low = inv_sqrt_bucket_low(per) - margin
    # a denser grid than the bound's, offset from it, plus the ends
    t = np.concatenate([np.linspace(low, 1 + margin, 1_000_003), [low, 1 + margin]])
    worst = float(np.max(np.abs(np.polynomial.polynomial.polyval(t, c) * np.sqrt(3 + t) / 2 - 1)))
    bound = inv_sqrt_polynomial_error(degree, margin, buckets_per_octave=per)
    assert worst <= bound <= 1.05 * worst + 1e-11


@pytest.mark.parametrize(("degree", "per"), CASES)
def test_inv_sqrt_tables_are_the_documented_chebyshev_interpolants(degree: int, per: int) -> None:
    low = inv_sqrt_bucket_low(per)
    assert low == pytest.approx(4 * 2.0 ** (-1 / per) - 3, abs=1e-15)
    assert INV_SQRT_TABLES[per][0][degree] == inv_sqrt_chebyshev(degree, low)
    assert inv_sqrt_bucket_low(2) == HALF_LOW


def test_finer_buckets_reach_the_same_error_with_lower_degrees() -> None:
    # the DPVI clipping factor's choices: quarter powers and degree 2 within 6e-5, eighth powers within 7e-6,
    # both with one round of powers (degree 2) where half powers need two (degree 4, 2.6e-6)
    assert inv_sqrt_polynomial_error(4, buckets_per_octave=2) < 3e-6
    assert inv_sqrt_polynomial_error(2, buckets_per_octave=4) < 6e-5
    assert inv_sqrt_polynomial_error(2, buckets_per_octave=8) < 7e-6
    assert inv_sqrt_polynomial_error(8) < 6e-8


def test_inv_sqrt_polynomial_refuses_unknown_degrees_and_wide_margins() -> None:
    with pytest.raises(ParameterError, match="degree"):
        inv_sqrt_polynomial_error(3)
    with pytest.raises(ParameterError, match="margin"):
        inv_sqrt_polynomial_error(8, 0.5)
    with pytest.raises(ParameterError, match="degree"):
        inv_sqrt_polynomial_error(1, buckets_per_octave=4)
    with pytest.raises(ParameterError, match="buckets_per_octave"):
        inv_sqrt_polynomial_error(2, buckets_per_octave=3)
    with pytest.raises(ParameterError, match="low"):
        inv_sqrt_chebyshev(2, 1.5)
