from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.paillier import FixedPoint
from mpdp.errors import DomainError, EncodingOverflowError, ParameterError
from tests.strategies import bounded_real_vectors


@given(bounded_real_vectors(3.0, max_size=12), st.integers(0, 40))
def test_round_trip_error_is_at_most_half_an_ulp_of_the_grid(x, frac_bits) -> None:
    codec = FixedPoint(frac_bits=frac_bits, max_abs=3.0)
    ints = codec.encode(x)
    assert ints.dtype == np.int64 and np.all(np.abs(ints) <= codec.bound)
    assert np.all(np.abs(codec.decode(ints) - x) <= 2.0 ** -(frac_bits + 1))


@given(st.lists(st.integers(-(2**70), 2**70), min_size=1, max_size=6))
def test_integers_encode_exactly_even_beyond_int64(values) -> None:
    codec = FixedPoint(frac_bits=8, max_abs=2.0**70)
    ints = codec.encode(np.array(values, dtype=object))
    assert [int(v) for v in ints] == [v << 8 for v in values]
    assert codec.decode(ints).tolist() == [float(v) for v in values]


def test_the_extremes_fit_and_one_past_them_does_not() -> None:
    codec = FixedPoint(frac_bits=16, max_abs=1.0)
    assert codec.encode([1.0, -1.0]).tolist() == [65536, -65536] == [codec.bound, -codec.bound]
    with pytest.raises(EncodingOverflowError, match=r"received 1.0000001, expected \|x\| <= max_abs = 1.0"):
        codec.encode([0.0, 1.0000001])
    with pytest.raises(DomainError, match="NaN or infinity"):
        codec.encode([np.nan])


def test_large_formats_fall_back_to_exact_python_ints() -> None:
    codec = FixedPoint(frac_bits=80, max_abs=1.0)
    ints = codec.encode([0.5, -1.0])
    assert ints.dtype == object and ints.tolist() == [1 << 79, -(1 << 80)]
    assert codec.decode(ints).tolist() == [0.5, -1.0]
    assert FixedPoint(0, 1.0).decode(np.array([2**80], dtype=object), frac_bits=80).tolist() == [1.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"frac_bits": -1}, "frac_bits"), ({"frac_bits": 300}, "frac_bits"), ({"frac_bits": 2, "max_abs": 0}, "max_abs"),
     ({"frac_bits": 2, "max_abs": float("inf")}, "max_abs"), ({"frac_bits": 256, "max_abs": 2.0**700}, "2\\^900")],
)
def test_formats_are_validated_at_construction(kwargs, match) -> None:
    with pytest.raises(ParameterError, match=match):
        FixedPoint(**kwargs)
