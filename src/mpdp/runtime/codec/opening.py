"""An MPC opening's message, end to end: written in one pass and read in one pass.

Most messages of an MPC computation are openings: the envelope around ``{"id": sharing id, "v": [arrays]}``
(:mod:`mpdp.protocols.mpc.session`), the arrays mostly uint64 vectors. The receiver knows what it expects
(the next sequence number, the step's label, the sharing id and how many arrays), so :func:`encode_opening`
writes such a message in one pass and :func:`read_opening` accepts exactly the bytes :func:`encode_opening`
writes for those expectations and nothing else. Any other message is read by
:func:`~mpdp.runtime.codec.decode_envelope`, which returns the same values or names what is wrong; neither
function changes the format (``encode_opening`` is ``encode_envelope`` byte for byte).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from mpdp.runtime.codec.encoder import ARRAY_HEADS, encode_array, encode_value
from mpdp.runtime.codec.envelope import (
    BODY_KEY,
    ENV_HEAD,
    ENV_HEAD_SIZE,
    LABEL_KEY,
    OPENING_HEAD,
    OPENING_LIST,
    ROUND_KEY,
    encode_envelope,
    read_array,
)
from mpdp.runtime.codec.wire import ARRAY, CACHE_LIMIT, CACHED_TEXT, DEFAULT_LIMITS, DIMS, LITTLE, U32, CodecLimits

__all__ = ["encode_opening", "read_opening"]

_U64_CODE = 8  # DTYPES[8] is uint64
_UINT64 = np.dtype(np.uint64)
_SEQ_ROUND = struct.Struct("<q10sq")  # seq, "round" key and INT tag, round (after ENV_HEAD)
_U64_HEADS: dict[tuple[int, ...], bytes] = {}  # shape -> a uint64 array's header (a computation uses a few dozen)
_OPENING_PIECES: dict[str, bytes] = {}  # label -> label key, size, utf8, "body" key and the opening's head
_OPENING_COUNTS = tuple(OPENING_LIST + U32.pack(n) for n in range(16))  # "v" key, LIST tag and count


def _opening_piece(label: str) -> bytes | None:
    try:
        raw = label.encode("utf-8")
    except UnicodeEncodeError:
        return None
    piece = LABEL_KEY + U32.pack(len(raw)) + raw + BODY_KEY + OPENING_HEAD
    if len(label) <= CACHED_TEXT and len(_OPENING_PIECES) < CACHE_LIMIT:
        _OPENING_PIECES[label] = piece
    return piece


def encode_opening(seq: int, stamp: int, label: str, sharing_id: bytes, values: list[Any] | tuple[Any, ...]
                   ) -> bytes:
    """``encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})``, byte for byte."""
    piece = _OPENING_PIECES.get(label) if type(label) is str else None
    if piece is None and type(label) is str:
        piece = _opening_piece(label)
    if piece is None or type(seq) is not int or type(stamp) is not int or type(sharing_id) is not bytes \
            or len(sharing_id) != 16 or not LITTLE:
        return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})
    count = len(values)
    try:
        parts: list[Any] = [ENV_HEAD, _SEQ_ROUND.pack(seq, ROUND_KEY, stamp), piece, sharing_id,
                            _OPENING_COUNTS[count] if count < 16 else OPENING_LIST + U32.pack(count)]
    except struct.error:  # beyond int64: a BIGINT, written by the generic encoder
        return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})
    for value in values:
        if type(value) is np.ndarray:
            if value.dtype is _UINT64:  # most arrays: uint64, their header remembered by shape
                head = _U64_HEADS.get(value.shape)
                if head is None:
                    head = _u64_head(value.shape)
                    if head is None:  # more than 8 dimensions
                        encode_array(value, parts)
                        continue
                parts.append(head)
                parts.append(value)
            else:
                encode_array(value, parts)
        else:
            encode_value(value, parts, 3)
    try:
        return b"".join(parts)
    except TypeError:  # a strided vector (no contiguous buffer): the generic encoder copies it
        return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})


def read_opening(data: bytes | bytearray | memoryview, seq: int, label: str, sharing_id: bytes, count: int,
                 limits: CodecLimits = DEFAULT_LIMITS) -> tuple[int, list[Any]] | None:
    """``(stamp, arrays)`` when ``data`` is ``encode_opening(seq, stamp, label, sharing_id, arrays)`` for some
    ``stamp >= 1`` and ``count`` arrays that :func:`decode` reads within ``limits``; None for anything else,
    which the caller reads with :func:`decode_envelope` (the same values, or the error that names the fault).
    The arrays are copies the receiver owns, as :func:`decode` returns them."""
    size = len(data)
    if type(data) is not bytes or size > limits.max_bytes or type(sharing_id) is not bytes or not LITTLE:
        return None
    if limits is not DEFAULT_LIMITS and (limits.max_depth < 3 or limits.max_items < max(4, count)):
        return None
    layout = _OPENING_LAYOUTS.get((label, count)) if type(label) is str else None
    if layout is None:
        layout = _opening_layout(label, count)
        if layout is None:
            return None
    # the whole head in one read: envelope, label and the opening's fixed part
    fields, piece, counted = layout
    try:
        head, got, round_key, stamp, got_piece, got_id, got_count = fields.unpack_from(data)
    except struct.error:  # shorter than the head
        return None
    if got != seq or stamp < 1 or head != ENV_HEAD or round_key != ROUND_KEY or got_piece != piece \
            or got_id != sharing_id or got_count != counted:
        return None
    pos = fields.size  # the first array
    values: list[Any] = []
    max_bytes = limits.max_bytes
    try:
        for _ in range(count):
            ndim = data[pos + 2]
            if data[pos] == ARRAY and data[pos + 1] == _U64_CODE and 0 < ndim <= 8:  # uint64, most arrays
                dims = DIMS[ndim].unpack_from(data, pos + 3)
                first = pos + 3 + 8 * ndim
                n = dims[0] if ndim == 1 else math.prod(dims)
                pos = first + 8 * n
                # (no element: each dimension on its own within the limit, as the reader checks)
                if pos > size or (not n and max(dims) > max_bytes):
                    return None
                values.append(np.ndarray(dims, _UINT64, data, first).copy())
            else:
                array = read_array(data, pos, size, max_bytes) if data[pos] == ARRAY else None
                if array is None:
                    return None
                value, pos = array
                values.append(value)
    except (IndexError, struct.error):  # a truncated array header
        return None
    if pos != size:
        return None
    return stamp, values


_OPENING_LAYOUTS: dict[tuple[str, int], tuple[struct.Struct, bytes, bytes]] = {}


def _opening_layout(label: Any, count: int) -> tuple[struct.Struct, bytes, bytes] | None:
    """How an opening of ``count`` arrays for step ``label`` starts: a struct reading the envelope's head up to the
    first array, the label's piece and the list's count."""
    if type(label) is not str or not 0 <= count < 1 << 32:
        return None
    piece = _opening_piece(label)
    if piece is None:
        return None
    counted = OPENING_LIST + U32.pack(count)
    fields = struct.Struct(f"<{ENV_HEAD_SIZE}sq10sq{len(piece)}s16s{len(counted)}s")
    layout = (fields, piece, counted)
    if len(label) <= CACHED_TEXT and len(_OPENING_LAYOUTS) < CACHE_LIMIT:
        _OPENING_LAYOUTS[(label, count)] = layout
    return layout


def _u64_head(shape: tuple[int, ...]) -> bytes | None:
    """The header of a uint64 array of ``shape`` (remembered), or None beyond 8 dimensions."""
    ndim = len(shape)
    if ndim > 8:
        return None
    head = ARRAY_HEADS[ndim].pack(ARRAY, _U64_CODE, ndim, *shape)
    if len(_U64_HEADS) < CACHE_LIMIT:
        _U64_HEADS[shape] = head
    return head
