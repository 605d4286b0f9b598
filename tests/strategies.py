"""Hypothesis strategies shared by the test suite."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]

big_ints = st.integers(min_value=-(1 << 600), max_value=1 << 600)

numpy_arrays = st.sampled_from(_DTYPES).flatmap(
    lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=0, max_dims=3, max_side=5))
)



def _object_array(values: list[int]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


big_int_arrays = st.lists(big_ints, min_size=0, max_size=12).map(_object_array)

scalars = st.one_of(
    st.none(), st.booleans(), big_ints, st.floats(allow_nan=False), st.text(max_size=20), st.binary(max_size=40)
)


def wire_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Plain data the codec carries: scalars, arrays, and lists/dicts of them."""
    leaves = st.one_of(scalars, numpy_arrays, big_int_arrays)
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


# -- homomorphic encryption (issue 4) ---------------------------------------------------------------------------
def bounded_reals(max_abs: float = 1.0) -> st.SearchStrategy[float]:
    """Reals in [-max_abs, max_abs], with the extremes and zero drawn often."""
    return st.one_of(
        st.sampled_from([max_abs, -max_abs, 0.0]),
        st.floats(min_value=-max_abs, max_value=max_abs, allow_nan=False, allow_subnormal=False),
    )


def bounded_real_vectors(max_abs: float = 1.0, min_size: int = 1, max_size: int = 8) -> st.SearchStrategy[Any]:
    """float64 vectors with entries in [-max_abs, max_abs] (extremes and zero included often)."""
    return st.lists(bounded_reals(max_abs), min_size=min_size, max_size=max_size).map(np.array)


# -- integrity (issue 42): values at the ends of int64 and the rings, non-integers, junk ------------------------
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

int64_edges = st.one_of(
    st.integers(INT64_MAX - 1000, INT64_MAX),
    st.integers(INT64_MIN, INT64_MIN + 1000),
    st.sampled_from([1 << 62, -(1 << 62), (1 << 62) - 1, 1 << 63, -(1 << 63) - 1, 1 << 64, 1 << 70, -(1 << 70)]),
)
"""Integers at and beyond the ends of int64, where a wrapping sum would change sign."""

non_integers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not float(x).is_integer()),
    st.sampled_from([1.7, 0.9, -0.5, 2.5, float("nan"), float("inf"), float("-inf")]),
)
"""Floats an integer API must refuse (fractions, NaN, infinities), never truncate."""

tiny_epsilons = st.floats(min_value=-300.0, max_value=-8.0).map(lambda e: 10.0**e)
"""Privacy parameters from 1e-300 to 1e-8 (log-uniform)."""


def _ragged() -> Any:
    return [[1, 2], [3]]


junk = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1.7, 0.9, 1 << 70, -(1 << 70), 1 << 64, 1j, []]),
    st.just(_ragged()),
    st.sampled_from([np.array([]), np.array([[]]), np.array(["abc"]), np.array([1 + 2j]), np.array([np.nan]),
                     np.array([np.inf, 1.0]), np.array(["2020-01-01"], dtype="datetime64[D]"),
                     np.array([None, 1], dtype=object), np.array([1.5, 2.5]), np.array([2**63], dtype=object),
                     np.array([True, False]), np.zeros((2, 0)), np.array([[1, 2], [3, 4]], dtype=np.uint64)]),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=2)), max_size=4),
    st.integers(-3, 3), st.booleans(), st.floats(), st.fractions(), st.sampled_from(["1.0", "-1", "1e400", "nan"]),
    st.tuples(st.integers(-2, 5), st.integers(-2, 5)),
    st.sampled_from([np.float64(np.nan), np.int64(-1), np.uint64(2**64 - 1), np.float32(1.5), np.bool_(True),
                     np.array(2**63 - 1), np.array(-(2**63)), np.array([1e308, -1e308]), np.array([[1.0]])]),
    st.lists(st.lists(st.integers(-3, 3), min_size=1, max_size=2), min_size=1, max_size=3),
    numpy_arrays,
)
"""Wrong types, NaN, infinities, huge ints, empty and ragged arrays, wrong dtypes: what a public entry point must
answer with an MpdpError (or accept), never with a raw Python exception."""
