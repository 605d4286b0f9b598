"""Fixed-point formats: encoding round trips within 2^-(f+1); overflow, NaN and inf are refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION, FixedPointFormat
from mpdp.errors import EncodingOverflowError, ParameterError, PrecisionError


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION, FixedPointFormat(32, 10)], ids=str)
@given(data=st.data())
def test_round_trip_within_half_ulp(fmt: FixedPointFormat, data: st.DataObject) -> None:
    limit = fmt.max_value * (1 - 2.0**-20)
    x = np.array(data.draw(st.lists(st.floats(-limit, limit), min_size=1, max_size=8)))
    back = fmt.decode(fmt.encode(x))
    # round(x 2^f) is exact in float64 when |x 2^f| < 2^53; beyond, x itself is on the grid.
    assert np.all(np.abs(back - x) <= np.maximum(fmt.resolution / 2, np.abs(x) * 2.0**-52))


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION], ids=str)
def test_edges_of_the_range(fmt: FixedPointFormat) -> None:
    edge = fmt.max_value * (1 - 2.0**-50)  # the largest encodable magnitudes, exactly representable
    assert fmt.decode(fmt.encode([edge, -edge])).tolist() == [edge, -edge]
    with pytest.raises(EncodingOverflowError, match=r"\|x\| <"):
        fmt.encode([fmt.max_value])
    with pytest.raises(EncodingOverflowError, match=r"\|x\| <"):
        fmt.encode([-fmt.max_value])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused(bad: float) -> None:
    with pytest.raises(EncodingOverflowError, match="finite"):
        FAST.encode([1.0, bad])


def test_capacities() -> None:
    assert FAST.max_value == 2.0**42 and FAST.product_capacity == 2.0**22
    assert HIGH_PRECISION.max_value == 2.0**78 and HIGH_PRECISION.product_capacity == 2.0**30


def test_invalid_formats_are_refused() -> None:
    with pytest.raises(PrecisionError, match="frac_bits"):
        FixedPointFormat(64, 31)
    with pytest.raises(ParameterError, match="ring_bits"):
        FixedPointFormat(96, 20)


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION, FixedPointFormat(32, 10)], ids=str)
@given(bound=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 2.0**130)),
       scale=st.integers(-512, 512))
def test_bound_limits_agree_with_raw_bound_ok(fmt: FixedPointFormat, bound: float, scale: int) -> None:
    # (the tensor module's check: -inf < bound <= limit)
    assert (-np.inf < bound <= fmt.bound_limits[scale]) == fmt.raw_bound_ok(bound, scale)
    edge = fmt.bound_limits[scale]
    assert fmt.raw_bound_ok(edge, scale) and not fmt.raw_bound_ok(np.nextafter(edge, np.inf), scale)
