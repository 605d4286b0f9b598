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
