"""The wire codec: exact round trips, and strict rejection of anything malformed."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpdp.errors import MalformedMessageError, ParameterError
from mpdp.runtime.codec import (
    DEFAULT_LIMITS,
    CodecLimits,
    decode,
    decode_envelope,
    encode,
    encode_envelope,
    encode_opening,
    read_opening,
)
from tests.runtime.codec import wire_reference
from tests.strategies import big_ints, wire_values


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


def test_large_and_odd_arrays_encode_as_the_reference_does() -> None:
    # Arrays travel through the buffer protocol when C-contiguous and little-endian, copied otherwise.
    big = np.arange(5000, dtype=np.uint64)
    value = {"a": [1, big, "x", big[::3].astype(">u8"), np.zeros((0, 4))], "b": big.reshape(50, 100).T,
             "c": np.ones(10), "d": b"tail", "e": np.asfortranarray(np.ones((3, 4), dtype=np.int16)),
             "f": np.uint64(7), "g": np.array(3.5), "h": np.arange(4, dtype=">f4")}
    data = encode(value)
    decoded = decode(data)
    assert _same(decoded["a"][1], big) and _same(decoded["a"][3], big[::3])
    assert _same(decoded["b"], big.reshape(50, 100).T) and decoded["a"][4].shape == (0, 4)
    assert _same(decoded["h"], np.arange(4, dtype=np.float32)) and decoded["h"].dtype.isnative
    assert data == wire_reference.encode(value)


@given(wire_values())
def test_encoding_is_the_reference_wire_format(value: Any) -> None:
    assert encode(value) == wire_reference.encode(value)


def _opening() -> st.SearchStrategy[dict[str, Any]]:
    """Envelopes as an MPC opening sends them: sharing id and a list of uint64/uint8 arrays (now and then a
    0-d array or one of 9 dimensions, which the envelope's fast path leaves to the generic decoder)."""
    shapes = st.one_of(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6),
                       st.just(()), hnp.array_shapes(min_dims=9, max_dims=9, min_side=1, max_side=2))
    arrays = st.sampled_from([np.uint64, np.uint8]).flatmap(lambda dt: hnp.arrays(dt, shapes))
    body = st.fixed_dictionaries({"id": st.binary(min_size=16, max_size=16), "v": st.lists(arrays, max_size=6)})
    return st.fixed_dictionaries({"seq": st.integers(0, 1 << 40), "round": st.integers(1, 1 << 40),
                                  "label": st.sampled_from(["mpc.mul", "mpc.and", ""]), "body": body}).map(_canonical)


def _array_envelope() -> st.SearchStrategy[dict[str, Any]]:
    """Envelopes whose body is one array, as the dealer's replies (a flat uint64 array)."""
    arrays = st.sampled_from([np.uint64, np.uint8, np.float64, np.int32]).flatmap(
        lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)))
    return st.fixed_dictionaries({"seq": st.integers(0, 1 << 40), "round": st.integers(1, 1 << 40),
                                  "label": st.sampled_from(["mpc.dealer.correlations", "x"]),
                                  "body": arrays}).map(_canonical)


def _canonical(envelope: dict[str, Any]) -> dict[str, Any]:
    return {key: envelope[key] for key in ("seq", "round", "label", "body")}


def _agree(data: bytes, limits: CodecLimits = DEFAULT_LIMITS) -> None:
    """The codec and the reference decode ``data`` to the same value, or both refuse it with the typed error."""
    try:
        expected = wire_reference.decode(data, limits=limits)
    except MalformedMessageError:
        with pytest.raises(MalformedMessageError):
            decode(data, limits=limits)
        return
    assert _same(expected, decode(data, limits=limits))


@given(st.one_of(wire_values(), _opening()), st.data())
def test_damaged_messages_decode_as_the_reference_decodes_them(value: Any, data: st.DataObject) -> None:
    wire = bytearray(encode(value))
    assert _same(value, decode(wire)) and _same(value, decode(memoryview(wire)))
    how = data.draw(st.sampled_from(["flip", "cut", "append", "limits"]))
    _agree(*_damage(wire, how, data))


def _damage(wire: bytearray, how: str, data: st.DataObject, *, head: int = 0) -> tuple[bytes, CodecLimits]:
    """``wire`` with one byte flipped (within the first ``head`` bytes half the time, when given), cut short,
    extended, or intact under drawn small limits."""
    if how == "flip":
        anywhere = st.integers(min_value=0, max_value=len(wire) - 1)
        i = data.draw(st.one_of(st.integers(0, min(len(wire), head) - 1), anywhere) if head else anywhere)
        wire[i] ^= data.draw(st.integers(min_value=1, max_value=255))
        return bytes(wire), DEFAULT_LIMITS
    if how == "cut":
        return bytes(wire[: data.draw(st.integers(min_value=0, max_value=len(wire) - 1))]), DEFAULT_LIMITS
    if how == "append":
        return bytes(wire) + data.draw(st.binary(min_size=1, max_size=9)), DEFAULT_LIMITS
    limits = CodecLimits(max_bytes=data.draw(st.integers(1, len(wire) + 8)),
                         max_depth=data.draw(st.integers(1, 4)), max_items=data.draw(st.integers(1, 5)))
    return bytes(wire), limits


@given(_opening())
def test_openings_round_trip_into_writable_native_arrays(value: dict[str, Any]) -> None:
    wire = bytearray(encode(value))
    out = decode(wire)
    assert _same(value, out)
    for array in out["body"]["v"]:
        assert array.flags.writeable and array.dtype.isnative
        array[...] = 1  # the decoded arrays are the receiver's own memory, not views of the message
    assert _same(value, decode(wire))


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


def _envelopes() -> st.SearchStrategy[dict[str, Any]]:
    """Comm's envelopes: openings, and any body, label and (big) counters."""
    anything = st.fixed_dictionaries({"seq": st.one_of(st.integers(0, 1 << 40), big_ints),
                                      "round": st.one_of(st.integers(1, 1 << 40), big_ints),
                                      "label": st.text(max_size=12), "body": wire_values(6)}).map(_canonical)
    return st.one_of(_opening(), _array_envelope(), anything)


@given(_envelopes())
def test_envelopes_are_encoded_as_the_dict_they_stand_for(envelope: dict[str, Any]) -> None:
    wire = encode_envelope(envelope["seq"], envelope["round"], envelope["label"], envelope["body"])
    assert wire == encode(envelope) == wire_reference.encode(envelope)
    got = decode_envelope(wire)
    assert got is not None and _same(list(envelope.values()), list(got))


def _agree_envelope(data: bytes, limits: CodecLimits = DEFAULT_LIMITS) -> None:
    """decode_envelope reads ``data`` as the reference decoder does: same envelope, same refusal, or None."""
    try:
        expected = wire_reference.decode(data, limits=limits)
    except MalformedMessageError:
        with pytest.raises(MalformedMessageError):
            decode_envelope(data, limits=limits)
        return
    got = decode_envelope(data, limits=limits)
    if isinstance(expected, dict) and expected.keys() == {"seq", "round", "label", "body"}:
        assert got is not None
        assert _same([expected[k] for k in ("seq", "round", "label", "body")], list(got))
    else:
        assert got is None


@settings(max_examples=400)
@given(_envelopes(), st.data())
def test_damaged_envelopes_are_read_as_the_reference_reads_them(envelope: dict[str, Any],
                                                                  data: st.DataObject) -> None:
    wire = bytearray(encode(envelope))
    how = data.draw(st.sampled_from(["flip", "cut", "append", "limits", "bytearray"]))
    if how != "bytearray":  # flips in the fixed parts most often (envelope, opening, array headers): read at once
        _agree_envelope(*_damage(wire, how, data, head=160))
    else:
        got = decode_envelope(wire)
        assert got is not None and _same(list(envelope.values()), list(got))


def test_envelopes_in_another_key_order_or_of_another_shape() -> None:
    body = {"id": b"i" * 16, "v": [np.arange(4, dtype=np.uint64)]}
    shuffled = encode({"label": "x", "body": body, "round": 2, "seq": 1})
    assert _same(list(decode_envelope(shuffled) or ()), [1, 2, "x", body])
    assert decode_envelope(encode({"seq": 1, "round": 2, "label": "x"})) is None
    assert decode_envelope(encode([1, 2, "x", body])) is None
    extra = encode({"seq": 1, "round": 2, "label": "x", "body": body, "more": 0})
    assert decode_envelope(extra) is None
    wire = encode_envelope(1, 2, "mpc.mul", body)
    with pytest.raises(MalformedMessageError, match="trailing"):
        decode_envelope(wire + b"\x00")
    with pytest.raises(MalformedMessageError, match="truncated"):
        decode_envelope(wire[:-1])
    bad_label = wire.replace(b"mpc.mul", b"mpc.m\xff\xfe")
    with pytest.raises(MalformedMessageError, match="UTF-8"):
        decode_envelope(bad_label)
    with pytest.raises(MalformedMessageError, match="dict size"):
        decode_envelope(wire, limits=CodecLimits(max_items=3))


@pytest.mark.parametrize("count", [0, 1, 5])
def test_openings_under_every_small_limit_are_read_as_the_reference_reads_them(count: int) -> None:
    body = {"id": bytes(range(16)), "v": [np.arange(6, dtype=np.uint64).reshape(2, 3)] * count}
    wire = encode_envelope(3, 4, "mpc.open", body)
    for depth in range(1, 5):
        for items in range(1, 8):
            for size in (len(wire) - 1, len(wire)):
                _agree_envelope(wire, CodecLimits(max_bytes=size, max_depth=depth, max_items=items))


# -- encode_opening / read_opening: an opening's message written and read in one pass -------------------------
def _opening_parts(envelope: dict[str, Any]) -> tuple[int, int, str, bytes, list[Any]]:
    return (envelope["seq"], envelope["round"], envelope["label"], envelope["body"]["id"],
            envelope["body"]["v"])


def _opening_wire(seq: int, stamp: int, label: str, sharing_id: bytes, values: list[Any]) -> bytes:
    return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": values})  # the keys in the session's order


@given(_opening(), st.data())
def test_openings_are_encoded_as_the_envelope_they_stand_for(envelope: dict[str, Any], data: st.DataObject) -> None:
    seq, stamp, label, sharing_id, values = _opening_parts(envelope)
    # now and then a strided vector or a big-endian one, an id of another length, a counter beyond int64
    odd = data.draw(st.sampled_from(["none", "strided", "fortran", "big-endian", "short id", "big seq", "tuple"]))
    if odd == "strided":
        values = [*values, np.arange(12, dtype=np.uint64)[::3]]
    elif odd == "fortran":
        values = [*values, np.asfortranarray(np.arange(12, dtype=np.uint64).reshape(3, 4))]
    elif odd == "big-endian":
        values = [np.arange(3, dtype=">u8"), *values]
    elif odd == "short id":
        sharing_id = sharing_id[:8]
    elif odd == "big seq":
        seq = 1 << 70
    wire = encode_opening(seq, stamp, label, sharing_id, tuple(values) if odd == "tuple" else values)
    body = {"id": sharing_id, "v": list(values)}
    assert wire == encode_envelope(seq, stamp, label, body)
    assert wire == wire_reference.encode({"seq": seq, "round": stamp, "label": label, "body": body})


@given(_opening())
def test_openings_are_read_in_one_pass_into_writable_arrays(envelope: dict[str, Any]) -> None:
    seq, stamp, label, sharing_id, values = _opening_parts(envelope)
    wire = _opening_wire(seq, stamp, label, sharing_id, values)
    got = read_opening(wire, seq, label, sharing_id, len(values))
    if all(v.ndim in range(1, 9) for v in values):  # 0-d and 9-d arrays are left to decode_envelope
        assert got is not None
    if got is not None:
        assert got[0] == stamp and _same(values, got[1])
        for array in got[1]:
            assert array.flags.writeable and array.dtype.isnative
            array[...] = 1  # the receiver's own memory, not a view of the message
        assert wire == _opening_wire(seq, stamp, label, sharing_id, values)
    # any other expectation: not read here (the receiver's checks then name what differs)
    assert read_opening(wire, seq + 1, label, sharing_id, len(values)) is None
    assert read_opening(wire, seq, label + "x", sharing_id, len(values)) is None
    assert read_opening(wire, seq, label, bytes(15) + b"\x01" if sharing_id == bytes(16) else bytes(16),
                        len(values)) is None
    assert read_opening(wire, seq, label, sharing_id[:8], len(values)) is None
    assert read_opening(wire, seq, label, sharing_id, len(values) + 1) is None
    assert read_opening(bytearray(wire), seq, label, sharing_id, len(values)) is None


@settings(max_examples=400)
@given(_opening(), st.data())
def test_damaged_openings_are_read_only_when_decode_reads_the_same(envelope: dict[str, Any],
                                                                  data: st.DataObject) -> None:
    seq, stamp, label, sharing_id, values = _opening_parts(envelope)
    how = data.draw(st.sampled_from(["flip", "cut", "append", "limits"]))
    wire, limits = _damage(bytearray(_opening_wire(seq, stamp, label, sharing_id, values)), how, data, head=120)
    got = read_opening(wire, seq, label, sharing_id, len(values), limits)
    if got is not None:  # exactly what the generic decoder reads (which never refuses it)
        expected = wire_reference.decode(wire, limits=limits)
        assert expected["seq"] == seq and expected["label"] == label and expected["round"] == got[0] >= 1
        assert _same({"id": sharing_id, "v": got[1]}, expected["body"])
        assert _same([seq, got[0], label, {"id": sharing_id, "v": got[1]}], list(decode_envelope(wire, limits=limits)
                                                                                 or ()))
