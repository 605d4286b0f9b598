"""Fuzzing the wire codec for allocation and time: whatever the input, decoding returns the value that was
encoded or raises MalformedMessageError, allocates at most a small multiple of the input's size (lengths are
checked against what remains before anything is allocated) and finishes within the deadline."""

from __future__ import annotations

import tracemalloc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.errors import MalformedMessageError
from mpdp.runtime.codec import decode, encode
from tests.strategies import wire_values

FUZZ = settings(max_examples=200, deadline=2000)
SLACK = 1 << 20


def _decode_measured(data: bytes) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        try:
            value: Any = decode(data)
        except MalformedMessageError:
            value = MalformedMessageError
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


@FUZZ
@given(wire_values(), st.data())
def test_mutated_messages_decode_within_bounded_memory(value: Any, data: st.DataObject) -> None:
    wire = bytearray(encode(value))
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["set", "insert", "delete", "huge-length"]))
        i = data.draw(st.integers(0, max(len(wire) - 1, 0)))
        if op == "set" and wire:
            wire[i] = data.draw(st.integers(0, 255))
        elif op == "insert":
            wire[i:i] = data.draw(st.binary(min_size=1, max_size=16))
        elif op == "delete" and wire:
            del wire[i:i + data.draw(st.integers(1, 8))]
        else:  # a length or dimension field claiming ~2^32..2^64 elements
            wire[i:i + 8] = data.draw(st.sampled_from([b"\xff" * 8, b"\x00\x00\x00\x00\x01\x00\x00\x00",
                                                       b"\xff\xff\xff\x7f"]))
    _, peak = _decode_measured(bytes(wire))
    assert peak <= 16 * len(wire) + SLACK


@FUZZ
@given(wire_values())
def test_intact_messages_decode_to_their_value_within_bounded_memory(value: Any) -> None:
    wire = encode(value)
    decoded, peak = _decode_measured(wire)
    assert decoded is not MalformedMessageError
    assert encode(decoded) == wire
    assert peak <= 16 * len(wire) + SLACK
