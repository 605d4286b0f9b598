"""The AES-CTR keystream generator of the correlation dealer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.prg import AesCtrPrg
from mpdp.errors import ParameterError

KEY = bytes(range(32))


@given(st.lists(st.integers(min_value=0, max_value=9000), max_size=8))
def test_the_keystream_does_not_depend_on_how_draws_are_split(sizes: list[int]) -> None:
    # The generator reads ahead; the words served must be exactly the keystream, in order, whatever the draws.
    whole = AesCtrPrg(KEY).uint64(sum(sizes))
    prg = AesCtrPrg(KEY)
    parts = [prg.uint64(n) for n in sizes]
    np.testing.assert_array_equal(np.concatenate([np.zeros(0, dtype=np.uint64), *parts]), whole)


def test_draws_are_fresh_arrays_that_never_overlap() -> None:
    prg = AesCtrPrg(KEY)
    a, b = prg.uint64(5), prg.uint64((2, 3))
    before = b.copy()
    a[:] = 0  # a caller may modify its draw in place
    np.testing.assert_array_equal(b, before)
    assert not np.shares_memory(a, b)


def test_keys_differ_and_bits_are_bits() -> None:
    assert not np.array_equal(AesCtrPrg(KEY).uint64(4), AesCtrPrg(KEY[::-1]).uint64(4))
    bits = AesCtrPrg(KEY).bits((3, 50))
    assert bits.shape == (3, 50) and set(np.unique(bits)) <= {0, 1}
    assert AesCtrPrg(KEY).ring(1000, bits=7).max() < 128
    with pytest.raises(ParameterError, match="16 secret bytes"):
        AesCtrPrg(b"short")
