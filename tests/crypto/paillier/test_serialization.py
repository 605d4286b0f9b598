from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.paillier import CrtRandomizer, EncryptedArray, FixedPoint, Packing, decrypt, encrypt
from mpdp.errors import KeyMismatchError, MalformedMessageError, TamperedCiphertextError
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode

CODEC = FixedPoint(frac_bits=16, max_abs=1.0)


def _arrays(keypair):
    pk, sk = keypair
    rng = RandomSource.seeded("wire")
    X = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -0.125]])
    return [
        encrypt(pk, X, CODEC, randomizer=CrtRandomizer(sk, rng=rng)),
        encrypt(pk, X, CODEC, packing=Packing.for_key(pk, 24), randomizer=CrtRandomizer(sk, rng=rng)),
        encrypt(pk, X[0], CODEC, packing=Packing(slot_bits=20, slots=2), randomizer=CrtRandomizer(sk, rng=rng)),
        encrypt(pk, 0.75, CODEC, randomizer=CrtRandomizer(sk, rng=rng)),
    ]


def test_arrays_round_trip_through_the_runtime_codec(keypair) -> None:
    pk, sk = keypair
    for array in _arrays(keypair):
        back = EncryptedArray.from_wire(decode(encode(array)), pk)
        assert back.shape == array.shape and back.packing == array.packing and back.bound == array.bound
        assert np.array_equal(decrypt(sk, back), decrypt(sk, array))
    assert len(encode(_arrays(keypair)[1])) < len(encode(_arrays(keypair)[0]))


def test_a_ciphertext_under_another_key_is_refused(keypair, other_keypair) -> None:
    wire = decode(encode(_arrays(keypair)[0]))
    with pytest.raises(KeyMismatchError, match=r"key_id.*the key this party expects"):
        EncryptedArray.from_wire(wire, other_keypair[0])


@pytest.mark.parametrize("bad", [0, -1, "n2", "n2+1"])
def test_out_of_range_ciphertexts_are_tampering(keypair, bad) -> None:
    pk, _ = keypair
    wire = decode(encode(_arrays(keypair)[0]))
    value = {"n2": int(pk.n2), "n2+1": int(pk.n2) + 1}.get(bad, bad)
    wire["ciphertexts"][1, 2] = value
    with pytest.raises(TamperedCiphertextError, match="tampered"):
        EncryptedArray.from_wire(wire, pk)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("version", 1, "version"),
        ("type", "paillier.public_key", "type"),
        ("shape", [2, 3, 1], "shape"),
        ("shape", [3, 3], "ciphertexts shape"),
        ("slot_bits", 4000, "slot_bits"),
        ("frac_bits", -1, "frac_bits"),
        ("bound", 2**4000, "bound"),
        ("ciphertexts", "abc", "ciphertext count"),
    ],
)
def test_malformed_recipes_are_rejected(keypair, field, value, match) -> None:
    pk, _ = keypair
    wire = decode(encode(_arrays(keypair)[0]))
    wire[field] = value
    with pytest.raises(MalformedMessageError, match=match):
        EncryptedArray.from_wire(wire, pk)
    del wire[field]
    with pytest.raises(MalformedMessageError, match="fields"):
        EncryptedArray.from_wire(wire, pk)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_field_of_an_encrypted_array_can_change_on_the_way(keypair, data) -> None:
    """frac_bits, bound, shape, packing and every ciphertext are bound to the wire form by its digest: a changed
    value (even one well formed and in range, e.g. frac_bits 16 -> 20, which would divide every value by 16) is
    refused as tampering, never decrypted to another value."""
    pk, _ = keypair
    index = data.draw(st.integers(0, 3), label="array")
    wire = decode(encode(_arrays(keypair)[index]))
    field = data.draw(st.sampled_from(["frac_bits", "bound", "shape", "ciphertext", "slot_bits", "digest"]))
    if field == "frac_bits":
        wire["frac_bits"] = data.draw(st.integers(0, 64).filter(lambda f: f != 16))
    elif field == "bound":
        wire["bound"] = data.draw(st.integers(0, 2**18).filter(lambda b: b != wire["bound"]))
    elif field == "shape":
        if len(wire["shape"]) != 2 or wire["slot_bits"]:
            return
        wire["shape"] = wire["shape"][::-1]  # the same ciphertexts read in another order
        wire["ciphertexts"] = wire["ciphertexts"].reshape(wire["shape"])
    elif field == "ciphertext":
        flat = wire["ciphertexts"].reshape(-1)
        flat[data.draw(st.integers(0, flat.size - 1))] = data.draw(st.integers(1, int(pk.n2) - 1))
    elif field == "slot_bits":
        if wire["slot_bits"] == 0:
            return
        wire["slot_bits"] -= 1
    else:
        wire["digest"] = data.draw(st.binary(min_size=32, max_size=32))
    with pytest.raises(TamperedCiphertextError, match="digest"):
        EncryptedArray.from_wire(wire, pk)


def test_packed_layouts_that_do_not_fit_the_key_are_rejected(keypair) -> None:
    pk, _ = keypair
    wire = decode(encode(_arrays(keypair)[1]))
    wire["slots"] = 100
    with pytest.raises(MalformedMessageError, match="fewer slots"):
        EncryptedArray.from_wire(wire, pk)
