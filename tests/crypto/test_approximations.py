"""The fixed inverse-square-root polynomials and their error bounds (crypto.approximations)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.approximations import INV_SQRT_POLYNOMIAL_BITS, INV_SQRT_POLYNOMIALS, inv_sqrt_polynomial_error
from mpdp.errors import ParameterError


@pytest.mark.parametrize("degree", sorted(INV_SQRT_POLYNOMIALS))
def test_inv_sqrt_polynomial_bound_holds_and_is_tight(degree: int) -> None:
    margin = 1e-3
    c = np.array(INV_SQRT_POLYNOMIALS[degree], dtype=np.float64) / 2.0**INV_SQRT_POLYNOMIAL_BITS
    # a denser grid than the bound's, offset from it, plus the ends
    t = np.concatenate([np.linspace(-1 - margin, 1 + margin, 1_000_003), [-1 - margin, 1 + margin]])
    worst = float(np.max(np.abs(np.polynomial.polynomial.polyval(t, c) * np.sqrt(3 + t) / 2 - 1)))
    bound = inv_sqrt_polynomial_error(degree, margin)
    assert worst <= bound <= 1.05 * worst + 1e-11


def test_inv_sqrt_polynomial_refuses_unknown_degrees_and_wide_margins() -> None:
    with pytest.raises(ParameterError, match="degree"):
        inv_sqrt_polynomial_error(3)
    with pytest.raises(ParameterError, match="margin"):
        inv_sqrt_polynomial_error(8, 0.5)
