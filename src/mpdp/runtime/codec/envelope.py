"""The message envelope: Comm's ``{"seq", "round", "label", "body"}`` written and read with few operations.

Every message between parties is the envelope ``{"seq": int, "round": int, "label": str, "body": value}``
that :class:`mpdp.runtime.comm.Comm` writes. :func:`encode_envelope` writes exactly the bytes
:func:`~mpdp.runtime.codec.encode` writes for that dict. :func:`decode_envelope` reads its fixed part with
one prefix comparison and one struct instead of five values, and the two bodies most messages carry (an MPC
opening's ``{"id", "v"}`` and a single array) in place; it hands everything else (other key orders, big
ints, a malformed header, any fault the fast path finds) to :func:`~mpdp.runtime.codec.decode`. Either way
the result is the same value or the same :class:`~mpdp.errors.MalformedMessageError`.
"""

from __future__ import annotations

import math
import struct
from typing import Any, cast

import numpy as np

from mpdp.runtime.codec.decoder import Reader, decode
from mpdp.runtime.codec.encoder import encode, encode_array, encode_value
from mpdp.runtime.codec.wire import (
    ARRAY,
    BYTES,
    CACHE_LIMIT,
    CACHED_TEXT,
    DEFAULT_LIMITS,
    DICT,
    DIMS,
    DTYPE_COUNT,
    DTYPES,
    HEADER,
    INT,
    INT64_MAX,
    INT64_MIN,
    ITEMSIZE,
    LIST,
    LITTLE,
    STR,
    TAG_LEN32,
    TAG_LEN64,
    U32,
    U64,
    CodecLimits,
)

__all__ = ["decode_envelope", "encode_envelope"]

ENV_HEAD = HEADER + TAG_LEN32.pack(DICT, 4) + U32.pack(3) + b"seq" + bytes([INT])
_ENV_MID = struct.Struct("<q10sq10sI")  # seq, "round" key and INT tag, round, "label" key and STR tag, label size
ROUND_KEY, LABEL_KEY = U32.pack(5) + b"round" + bytes([INT]), U32.pack(5) + b"label" + bytes([STR])
BODY_KEY = U32.pack(4) + b"body"
_ENV_FIXED = len(ENV_HEAD) + _ENV_MID.size  # where the label's bytes start
_ENV_KEYS = frozenset({"seq", "round", "label", "body"})
_LABELS: dict[str, tuple[int, bytes]] = {}  # label -> (utf8 size, utf8 + "body" key)
_LABEL_OF: dict[bytes, str] = {}  # utf8 -> label
ENV_HEAD_SIZE, _BODY_KEY_SIZE = len(ENV_HEAD), len(BODY_KEY)

# An MPC opening's body, {"id": 16 bytes, "v": [arrays]} (mpdp.protocols.mpc.session), the body of most
# messages: its fixed part compared at once, then its arrays.
OPENING_HEAD = TAG_LEN32.pack(DICT, 2) + U32.pack(2) + b"id" + TAG_LEN64.pack(BYTES, 16)
OPENING_LIST = U32.pack(1) + b"v" + bytes([LIST])
_OPENING_FIXED = len(OPENING_HEAD) + 16 + len(OPENING_LIST) + 4
_OPENING_HEAD_SIZE, _OPENING_LIST_SIZE = len(OPENING_HEAD), len(OPENING_LIST)


def encode_envelope(seq: int, stamp: int, label: str, body: Any) -> bytes:
    """``encode({"seq": seq, "round": stamp, "label": label, "body": body})``, byte for byte."""
    known = _LABELS.get(label) if type(label) is str else None
    if known is None:
        if type(label) is not str:
            return encode({"seq": seq, "round": stamp, "label": label, "body": body})
        raw = label.encode("utf-8")
        known = (len(raw), raw + BODY_KEY)
        if len(label) <= CACHED_TEXT and len(_LABELS) < CACHE_LIMIT:
            _LABELS[label] = known
    if type(seq) is not int or type(stamp) is not int or not (
            INT64_MIN <= seq <= INT64_MAX and INT64_MIN <= stamp <= INT64_MAX):
        return encode({"seq": seq, "round": stamp, "label": label, "body": body})
    parts: list[Any] = [ENV_HEAD, _ENV_MID.pack(seq, ROUND_KEY, stamp, LABEL_KEY, known[0]), known[1]]
    if type(body) is dict and len(body) == 2 and next(iter(body)) == "id":  # an opening, {"id", "v"}?
        sharing_id, values = body["id"], body.get("v")
        if type(sharing_id) is bytes and len(sharing_id) == 16 and type(values) is list:
            parts += (OPENING_HEAD, sharing_id, OPENING_LIST, U32.pack(len(values)))
            for value in values:
                if type(value) is np.ndarray:
                    encode_array(value, parts)
                else:
                    encode_value(value, parts, 3)
            return b"".join(parts)
    encode_value(body, parts, 1)
    return b"".join(parts)


def decode_envelope(data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS
                    ) -> tuple[Any, Any, Any, Any] | None:
    """``decode(data)`` read as an envelope: ``(seq, round, label, body)``, or None for a well-formed message
    that is not an envelope dict. Raises :class:`~mpdp.errors.MalformedMessageError` as :func:`decode` does.

    The envelopes parties send (an opening's body or one array, a known label) are read in place; anything
    else, including every message the fast path finds the least thing wrong with, is read by :func:`decode`,
    which names the error."""
    size = len(data)
    kind = type(data)
    buf = cast(bytes, data)  # when bytes or bytearray: both have what the fast path uses
    if (kind is bytes or kind is bytearray) and size >= _ENV_FIXED and buf.startswith(ENV_HEAD) \
            and size <= limits.max_bytes and limits.max_items >= 4:
        seq, round_key, stamp, label_key, n = _ENV_MID.unpack_from(buf, ENV_HEAD_SIZE)
        stop = _ENV_FIXED + n
        if round_key == ROUND_KEY and label_key == LABEL_KEY and buf.startswith(BODY_KEY, stop):
            raw = buf[_ENV_FIXED:stop] if kind is bytes else bytes(buf[_ENV_FIXED:stop])
            label = _LABEL_OF.get(raw)
            if label is None:
                try:
                    label = raw.decode()
                except UnicodeDecodeError:
                    label = None  # decode() below names the error
                else:
                    if n <= CACHED_TEXT and len(_LABEL_OF) < CACHE_LIMIT:
                        _LABEL_OF[bytes(raw)] = label
            if label is not None:
                start = stop + _BODY_KEY_SIZE
                body: Any = None
                pos = -1
                if buf.startswith(OPENING_HEAD, start):
                    opening = _read_opening(buf, start, size, limits)
                    if opening is not None:
                        body, pos = opening
                elif start < size and buf[start] == ARRAY:
                    array = read_array(buf, start, size, limits.max_bytes)
                    if array is not None:
                        body, pos = array
                else:
                    body, pos = Reader(buf, limits).value(start, 1)
                if pos == size:
                    return seq, stamp, label, body
    value = decode(data, limits=limits)
    if type(value) is not dict or value.keys() != _ENV_KEYS:
        return None
    return value["seq"], value["round"], value["label"], value["body"]


def read_array(data: bytes | bytearray, pos: int, size: int, max_bytes: int) -> tuple[Any, int] | None:
    """The ARRAY value at ``pos`` as :meth:`Reader.value` reads it (1 to 8 dimensions, little-endian host), or
    None when anything differs from that common case (the caller then leaves the message to :func:`decode`)."""
    if pos + 11 > size or not LITTLE:
        return None
    code, ndim = data[pos + 1], data[pos + 2]
    if code >= DTYPE_COUNT:
        return None
    if ndim == 1:  # most arrays: one dimension, its size the element count
        (count,) = U64.unpack_from(data, pos + 3)
        first = pos + 11
        stop = first + count * ITEMSIZE[code]
        if count > max_bytes or stop > size:
            return None
        return np.frombuffer(data, DTYPES[code], count, first).copy(), stop
    if not 1 < ndim <= 8:
        return None
    first = pos + 3 + 8 * ndim
    if first > size:
        return None
    dims = DIMS[ndim].unpack_from(data, pos + 3)
    count = math.prod(dims)
    stop = first + count * ITEMSIZE[code]
    if count > max_bytes or max(dims) > max_bytes or stop > size:
        return None
    # a copy the receiver owns (native order on a little-endian host), as the reader's
    return np.frombuffer(data, DTYPES[code], count, first).copy().reshape(dims), stop


def _read_opening(data: bytes | bytearray, pos: int, size: int, limits: CodecLimits
                  ) -> tuple[dict[str, Any], int] | None:
    """The opening body at ``pos`` (an envelope's body, depth 1), or None to leave the message to :func:`decode`."""
    if limits.max_depth < 3 or limits.max_items < 2 or pos + _OPENING_FIXED > size:
        return None
    start = pos + _OPENING_HEAD_SIZE
    if not data.startswith(OPENING_LIST, start + 16):
        return None
    sharing_id = bytes(data[start : start + 16])
    (n,) = U32.unpack_from(data, start + 16 + _OPENING_LIST_SIZE)
    if n > limits.max_items:
        return None
    pos += _OPENING_FIXED
    max_bytes = limits.max_bytes
    values = []
    for _ in range(n):
        if pos >= size or data[pos] != ARRAY:
            return None
        array = read_array(data, pos, size, max_bytes)
        if array is None:
            return None
        value, pos = array
        values.append(value)
    return {"id": sharing_id, "v": values}, pos
