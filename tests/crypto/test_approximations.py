"""The fixed inverse-square-root polynomials and their error bounds (crypto.approximations)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.approximations import (
    HALF_LOW,
    INV_SQRT_HALF_POLYNOMIALS,
    INV_SQRT_POLYNOMIAL_BITS,
    INV_SQRT_POLYNOMIALS,
    inv_sqrt_polynomial_error,
)
from mpdp.errors import ParameterError


@pytest.mark.parametrize(("degree", "half"), [(d, False) for d in sorted(INV_SQRT_POLYNOMIALS)]
                         + [(d, True) for d in sorted(INV_SQRT_HALF_POLYNOMIALS)])
def test_inv_sqrt_polynomial_bound_holds_and_is_tight(degree: int, half: bool) -> None:
    margin = 1e-3
    table = INV_SQRT_HALF_POLYNOMIALS if half else INV_SQRT_POLYNOMIALS
    c = np.array(table[degree], dtype=np.float64) / 2.0**INV_SQRT_POLYNOMIAL_BITS
    low = (HALF_LOW if half else -1.0) - margin
    # a denser grid than the bound's, offset from it, plus the ends
    t = np.concatenate([np.linspace(low, 1 + margin, 1_000_003), [low, 1 + margin]])
    worst = float(np.max(np.abs(np.polynomial.polynomial.polyval(t, c) * np.sqrt(3 + t) / 2 - 1)))
    bound = inv_sqrt_polynomial_error(degree, margin, half_powers=half)
    assert worst <= bound <= 1.05 * worst + 1e-11


def test_inv_sqrt_polynomial_refuses_unknown_degrees_and_wide_margins() -> None:
    with pytest.raises(ParameterError, match="degree"):
        inv_sqrt_polynomial_error(3)
    with pytest.raises(ParameterError, match="margin"):
        inv_sqrt_polynomial_error(8, 0.5)
