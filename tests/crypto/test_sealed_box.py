"""Sealed boxes: only the key holder opens them, under the context they were sealed for, unaltered."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.sealed_box import KEY_BYTES, keypair, open_sealed, public_key_of, seal
from mpdp.errors import MalformedMessageError, TamperedCiphertextError
from mpdp.randomness import RandomSource


@settings(max_examples=30, deadline=None)
@given(plaintext=st.binary(max_size=200), context=st.binary(max_size=40), seed=st.integers(0, 2**32))
def test_a_box_opens_to_its_plaintext(plaintext: bytes, context: bytes, seed: int) -> None:
    rng = RandomSource.seeded(seed)
    private, public = keypair(rng)
    assert public_key_of(private) == public
    assert open_sealed(private, seal(public, plaintext, context, rng=rng), context) == plaintext


@settings(max_examples=30, deadline=None)
@given(position=st.integers(0, 10_000), bit=st.integers(0, 7), seed=st.integers(0, 2**32))
def test_any_flipped_bit_is_detected(position: int, bit: int, seed: int) -> None:
    rng = RandomSource.seeded(seed)
    private, public = keypair(rng)
    box = bytearray(seal(public, b"a share of the sum", b"ctx", rng=rng))
    box[position % len(box)] ^= 1 << bit
    with pytest.raises(TamperedCiphertextError):
        open_sealed(private, bytes(box), b"ctx")


def test_wrong_key_context_and_lengths_are_typed_errors() -> None:
    rng = RandomSource.seeded(1)
    private, public = keypair(rng)
    box = seal(public, b"x", b"round 1", rng=rng)
    with pytest.raises(TamperedCiphertextError, match="another context"):
        open_sealed(private, box, b"round 2")
    with pytest.raises(TamperedCiphertextError):
        open_sealed(keypair(rng)[0], box, b"round 1")
    with pytest.raises(MalformedMessageError, match="at least"):
        open_sealed(private, box[:KEY_BYTES], b"round 1")
    with pytest.raises(MalformedMessageError, match="raw bytes"):
        seal(public[:-1], b"x", b"round 1", rng=rng)
