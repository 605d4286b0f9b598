"""What travels is what is computed on: a changed byte of a CKKS vector's wire form, or key material swapped in a
public context, is refused with a typed error, never decrypted to a wrong value (issue 42, CKKS classes)."""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from typing import Any

import numpy as np
import pytest
import tenseal as ts
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.ckks import CkksContext, CkksVector
from mpdp.crypto.ckks.dots import PlainColumns, masked_dots
from mpdp.crypto.ckks.vector import wire_form
from mpdp.errors import KeyMismatchError, MalformedMessageError, MpdpError, TamperedCiphertextError
from mpdp.runtime import decode, encode


@pytest.fixture(scope="module")
def sent(ckks_d1: CkksContext) -> dict[str, Any]:
    """A two-chunk vector as it travels."""
    return decode(encode(CkksVector.encrypt(ckks_d1.public(), np.linspace(-1, 1, 5000))))


@settings(max_examples=60, deadline=None)
@given(chunk=st.integers(0, 1), where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_any_flipped_bit_of_a_chunk_is_refused_as_tampered(ckks_d1, sent, chunk, where, bit) -> None:
    raw = bytearray(sent["chunks"][chunk])
    raw[int(where * len(raw))] ^= 1 << bit
    chunks = list(sent["chunks"])
    chunks[chunk] = bytes(raw)
    with pytest.raises(TamperedCiphertextError, match="digest"):
        CkksVector.from_wire(dict(sent, chunks=chunks), ckks_d1)


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(["length", "depth_used", "context_id", "params", "digest", "chunks"]),
       data=st.data())
def test_any_changed_field_is_refused(ckks_d1, sent, field, data) -> None:
    changes = {
        "length": st.integers(1, 10**6).filter(lambda n: n != sent["length"]),
        "depth_used": st.integers(0, 5).filter(lambda n: n != sent["depth_used"]),
        "context_id": st.text(min_size=1, max_size=64).filter(lambda t: t != sent["context_id"]),
        "params": st.sampled_from(["ckks-8192-d2", "ckks-16384-d4", ""]),
        "digest": st.binary(min_size=32, max_size=32),
        "chunks": st.sampled_from([sent["chunks"][::-1], sent["chunks"][:1], sent["chunks"] * 2]),
    }
    value = data.draw(changes[field])
    with pytest.raises((TamperedCiphertextError, MalformedMessageError)):
        CkksVector.from_wire(dict(sent, **{field: value}), ckks_d1)


def _tenseal_vector(seal: Any, size: int, scale: float) -> bytes:
    """TenSEAL's protocol buffer around a SEAL ciphertext (fields 1 size list, 2 ciphertext, 3 scale): what a
    sender that builds its own messages could send."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ct")
        seal.save(path)
        with open(path, "rb") as f:
            body = f.read()

    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))

    packed = varint(size)
    return (b"\x0a" + varint(len(packed)) + packed + b"\x12" + varint(len(body)) + body + b"\x19"
            + struct.pack("<d", scale))


@pytest.mark.parametrize("what", ["tenseal scale", "seal scale", "declared size", "trailing bytes"])
def test_a_sender_cannot_declare_another_scale_or_size(ckks_d1, what) -> None:
    """Even with a valid digest (recomputed by the sender), a chunk whose declared scale or slot count differs
    from what the parameter set and depth imply is refused: a wrong scale would rescale every value."""
    vector = CkksVector.encrypt(ckks_d1, [0.5, 0.25])
    seal = vector.chunks[0].ciphertext()[0]
    slots, scale = ckks_d1.params.slots, 2.0**ckks_d1.params.scale_bits
    assert CkksVector.from_wire(wire_form(ckks_d1, 2, 0, [_tenseal_vector(seal, slots, scale)]),
                                ckks_d1).decrypt().round(5).tolist() == [0.5, 0.25]
    if what == "tenseal scale":
        raw = _tenseal_vector(seal, slots, scale * 16)
    elif what == "seal scale":
        seal.scale = scale * 16
        raw = _tenseal_vector(seal, slots, scale)
    elif what == "declared size":
        raw = _tenseal_vector(seal, 3, scale)
    else:
        raw = _tenseal_vector(seal, slots, scale) + b"\x00"
    with pytest.raises(TamperedCiphertextError):
        CkksVector.from_wire(wire_form(ckks_d1, 2, 0, [raw]), ckks_d1)


def test_replies_of_the_batched_products_pass_the_checks(ckks_d1) -> None:
    """SEAL's exact scale after one rescale (2^80 / q) is accepted where it is what the depth implies."""
    x = CkksVector.encrypt(ckks_d1, [0.5, 0.25])
    reply = decode(encode(masked_dots(x, PlainColumns(ckks_d1, np.ones((2, 1))), [1.0])[0]))
    assert abs(CkksVector.from_wire(reply, ckks_d1).decrypt()[0] - 1.75) <= ckks_d1.params.dot_error_bound(2)


def _with_galois_keys_of(public: CkksContext, other: CkksContext) -> bytes:
    """``public``'s wire bytes with its Galois keys replaced by ``other``'s (same parameters)."""
    ctx = ts.context_from(public.to_wire()["context"])
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "galois")
        other.tenseal.galois_keys().data.save(path)
        ctx.galois_keys().data.load(ctx.seal_context().data, path)
    return bytes(ctx.serialize(save_public_key=True, save_secret_key=False, save_galois_keys=True,
                               save_relin_keys=True))


def test_a_context_with_substituted_galois_keys_gets_another_id_and_its_results_are_refused(ckks_d1) -> None:
    """The id is computed by each holder from all public material (public, relinearisation and Galois keys,
    parameters): keys swapped on the way give another id, so the key owner refuses every result computed with
    them instead of decrypting a wrong dot product."""
    other = CkksContext.generate(ckks_d1.params)
    wire = ckks_d1.public().to_wire()
    forged = CkksContext.from_wire(dict(wire, context=_with_galois_keys_of(ckks_d1.public(), other)))
    assert forged.context_id != ckks_d1.context_id
    assert CkksContext.from_wire(decode(encode(wire))).context_id == ckks_d1.context_id
    column = CkksVector.encrypt(ckks_d1.public(), [0.5, 0.5]).to_wire()
    with pytest.raises(KeyMismatchError):
        CkksVector.from_wire(column, forged)  # the holder of the forged context refuses the owner's vectors
    # a holder that used them anyway (encrypting itself under the forged context) is refused by the key owner
    product = CkksVector.encrypt(forged, [0.5, 0.5]).dot([1.0, 0.0]).rerandomize().to_wire()
    with pytest.raises(KeyMismatchError):
        CkksVector.from_wire(product, ckks_d1)


def test_the_private_context_reloads_with_the_id_it_sent(ckks_d1) -> None:
    """TenSEAL regenerates relinearisation and Galois keys when a private context is reloaded; the stored form
    keeps the public material that was sent, so replies computed under it still decrypt after a reload."""
    back = CkksContext.from_private_bytes(ckks_d1.to_private_bytes(), ckks_d1.params)
    assert back.context_id == ckks_d1.context_id == ckks_d1.public().context_id
    reply = CkksVector.encrypt(ckks_d1.public(), [0.5, 0.5]).dot([1.0, 1.0]).rerandomize().to_wire()
    assert abs(CkksVector.from_wire(reply, back).decrypt()[0] - 1.0) <= ckks_d1.params.dot_error_bound(2)


def test_a_private_file_with_another_secret_key_is_refused(ckks_d1, ckks_d2_no_rotations) -> None:
    other = CkksContext.generate(ckks_d1.params, galois_keys=False)
    mine, theirs = ckks_d1.to_private_bytes(), other.to_private_bytes()
    # splice: ckks_d1's public material with other's secret key, digest recomputed as a careless tool would
    head = len(b"mpdp.ckks.private/v1\x00")
    (size,) = struct.unpack_from("<Q", mine, head + 32)
    (their_size,) = struct.unpack_from("<Q", theirs, head + 32)
    body = mine[head + 32: head + 40 + size] + theirs[head + 40 + their_size:]
    spliced = mine[:head] + hashlib.sha256(body).digest() + body
    with pytest.raises(KeyMismatchError, match="another public key"):
        CkksContext.from_private_bytes(spliced, ckks_d1.params)
    with pytest.raises(MpdpError):
        CkksContext.from_private_bytes(ckks_d2_no_rotations.to_private_bytes(), ckks_d1.params)
