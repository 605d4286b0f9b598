"""The wire codec: exact round trips, and strict rejection of anything malformed."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.errors import MalformedMessageError, ParameterError
from mpdp.runtime.codec import CodecLimits, decode, encode
from tests.strategies import wire_values


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and (np.array_equal(a, b, equal_nan=a.dtype.kind == "f") if a.dtype != object
                     else all(int(x) == int(y) for x, y in zip(a.ravel(), b.ravel(), strict=True))))
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return type(a) is type(b) and a == b


@given(wire_values())
def test_round_trip(value: Any) -> None:
    assert _same(value, decode(encode(value)))


def test_large_arrays_are_spliced_into_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Payloads of 16 KiB and more are spliced into the message by encode() instead of appended: same bytes.
    from mpdp.runtime import codec

    big = np.arange(5000, dtype=np.uint64)
    value = {"a": [1, big, "x", big[::3].astype(">u8"), np.zeros((0, 4))], "b": big.reshape(50, 100).T,
             "c": np.ones(10), "d": b"tail"}
    data = encode(value)
    decoded = decode(data)
    assert _same(decoded["a"][1], big) and _same(decoded["a"][3], big[::3])
    assert _same(decoded["b"], big.reshape(50, 100).T) and decoded["a"][4].shape == (0, 4)
    monkeypatch.setattr(codec, "_SPLICE_BYTES", 1 << 62)
    assert encode(value) == data


def test_big_ints_and_mpz_and_object_arrays() -> None:
    import gmpy2

    n = (1 << 4096) - 1
    assert decode(encode(n)) == n and decode(encode(-n)) == -n
    assert decode(encode(gmpy2.mpz(12345678901234567890123))) == 12345678901234567890123
    arr = np.array([n, -5, 0, gmpy2.mpz(7)], dtype=object)
    out = decode(encode(arr))
    assert out.dtype == object and [int(v) for v in out] == [n, -5, 0, 7]


@pytest.mark.parametrize("shape", [(0,), (0, 14), (3, 0), (0, 0, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_empty_arrays_round_trip(shape: tuple[int, ...], dtype: Any) -> None:
    # A party may have nothing to send (e.g. a PFDS sharer whose consistent leaf sizes round to 0 records).
    out = decode(encode({"v": np.zeros(shape, dtype=dtype)}))["v"]
    assert out.shape == shape and out.dtype == np.dtype(dtype)


def test_to_wire_objects_travel_as_their_public_form() -> None:
    class Ciphertext:
        def to_wire(self) -> dict[str, Any]:
            return {"c": 123, "key_id": "abc"}

    assert decode(encode({"ct": Ciphertext()})) == {"ct": {"c": 123, "key_id": "abc"}}


@pytest.mark.parametrize("value", [{1, 2}, {1: "a"}, np.array([1.5], dtype=object), object(),
                                   np.array(["a"]), np.zeros(2, dtype=complex)])
def test_unencodable_values_raise_parameter_error(value: Any) -> None:
    with pytest.raises(ParameterError):
        encode(value)


@given(st.binary(max_size=200))
def test_random_bytes_never_decode_to_anything_but_a_typed_error(data: bytes) -> None:
    try:
        decode(data)
    except MalformedMessageError:
        pass


@given(wire_values(), st.data())
def test_every_truncation_is_rejected(value: Any, data: st.DataObject) -> None:
    wire = encode(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(wire) - 1))
    with pytest.raises(MalformedMessageError):
        decode(wire[:cut])


@given(wire_values(), st.data())
def test_flipped_bytes_give_a_value_or_a_typed_error(value: Any, data: st.DataObject) -> None:
    wire = bytearray(encode(value))
    i = data.draw(st.integers(min_value=0, max_value=len(wire) - 1))
    wire[i] ^= data.draw(st.integers(min_value=1, max_value=255))
    try:
        decode(bytes(wire))
    except MalformedMessageError:
        pass


def test_trailing_bytes_version_magic_and_unknown_tags() -> None:
    wire = encode([1, 2])
    with pytest.raises(MalformedMessageError, match="trailing"):
        decode(wire + b"\x00")
    with pytest.raises(MalformedMessageError, match="wire version"):
        decode(wire[:4] + b"\x09" + wire[5:])
    with pytest.raises(MalformedMessageError, match="header"):
        decode(b"PKL\x80" + wire[4:])
    with pytest.raises(MalformedMessageError, match="type tag"):
        decode(wire[:5] + b"\x7f")


def test_oversized_and_lying_lengths_are_rejected_before_allocation() -> None:
    with pytest.raises(MalformedMessageError, match="message size"):
        decode(encode(b"x" * 1000), limits=CodecLimits(max_bytes=100))
    # An array header claiming 2^40 elements in a 30-byte message.
    lying = b"MPDP\x01" + struct.pack("<BBBQ", 10, 4, 1, 1 << 40)
    with pytest.raises(MalformedMessageError):
        decode(lying)
    lying_list = b"MPDP\x01" + struct.pack("<BI", 8, 1 << 30)
    with pytest.raises(MalformedMessageError, match="list length"):
        decode(lying_list)


def test_depth_limit_and_duplicate_keys() -> None:
    nested: Any = 0
    for _ in range(40):
        nested = [nested]
    with pytest.raises(ParameterError):
        encode(nested)
    ok: Any = 0
    for _ in range(10):
        ok = [ok]
    with pytest.raises(MalformedMessageError, match="nesting depth"):
        decode(encode(ok), limits=CodecLimits(max_depth=5))
    dup = b"MPDP\x01" + struct.pack("<BI", 9, 2) + (struct.pack("<I", 1) + b"a" + b"\x00") * 2
    with pytest.raises(MalformedMessageError, match="unique"):
        decode(dup)


def test_limits_are_validated() -> None:
    with pytest.raises(ParameterError, match="max_bytes"):
        CodecLimits(max_bytes=0)
