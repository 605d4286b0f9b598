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


def test_the_words_are_the_aes_ctr_keystream() -> None:
    """An independent reference: AES-128-CTR from counter 0 under SHA-256("mpdp.AesCtrPrg:" key)[:16],
    encrypting zeros, read as little-endian words; across a buffer refill too."""
    import hashlib

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    aes_key = hashlib.sha256(b"mpdp.AesCtrPrg:" + KEY).digest()[:16]
    stream = Cipher(algorithms.AES(aes_key), modes.CTR(b"\x00" * 16)).encryptor().update(bytes(8 * 10_000))
    expected = np.frombuffer(stream, dtype="<u8")
    prg = AesCtrPrg(KEY)
    got = np.concatenate([prg.uint64(3), prg.uint64((2, 2000)).reshape(-1), prg.uint64(5997)])
    np.testing.assert_array_equal(got, expected)
