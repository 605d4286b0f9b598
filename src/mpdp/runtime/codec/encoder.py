"""Encoding: plain data (and ``to_wire()`` objects) to the bytes of wire version 1.

:func:`encode` collects a message's pieces (precompiled headers, cached dict keys and short strings, and the
arrays themselves, read through the buffer protocol) and joins them once, copying each payload exactly
once, into the result. The exact types messages are made of are tested first, one type test each;
subclasses, numpy scalars and ``to_wire()`` objects take the general path.

A value the format cannot carry (a set, an object array of floats, a dict with non-str keys, an array of
more than 255 dimensions, nesting deeper than 32) raises :class:`~mpdp.errors.ParameterError` naming it.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import numpy as np

from mpdp.errors import ParameterError, explain
from mpdp.runtime.codec.wire import (
    ARRAY,
    BIGARRAY,
    BIGINT,
    BYTES,
    CACHE_LIMIT,
    CACHED_TEXT,
    DICT,
    DTYPE_CODE,
    DTYPES,
    FALSE,
    FLOAT,
    HEADER,
    INT,
    INT64_MAX,
    INT64_MIN,
    LIST,
    LITTLE,
    NONE,
    STR,
    TAG_LEN32,
    TAG_LEN64,
    TRUE,
    U32,
    WireEncodable,
)

__all__ = ["encode"]

_MAX_DEPTH = 32  # deepest nesting encode() writes (DEFAULT_LIMITS.max_depth: what a default decoder accepts)
_BIGINT_HEAD_TAG = struct.Struct("<BBI")  # tag, sign, len
_TAG_I64, _TAG_F64 = struct.Struct("<Bq"), struct.Struct("<Bd")
_NONE_B, _FALSE_B, _TRUE_B = bytes([NONE]), bytes([FALSE]), bytes([TRUE])
_KEYS: dict[str, bytes] = {}  # dict key -> len:u32 utf8
_STRS: dict[str, bytes] = {}  # str value -> STR tag, len:u32, utf8


def encode(value: Any) -> bytes:
    """Serialise plain data (and ``to_wire()`` objects) to bytes.

    Raises :class:`~mpdp.errors.ParameterError` for a value the format cannot carry (a set, an object array
    of floats, a dict with non-str keys, ...), naming its type.
    """
    parts: list[Any] = [HEADER]
    encode_value(value, parts, 0)
    return b"".join(parts)


def _encode_key(key: Any) -> bytes:
    if type(key) is not str:
        raise ParameterError(explain("dict key", key, "a str", "use str keys in messages, e.g. {'share': ...}"))
    raw = key.encode("utf-8")
    piece = U32.pack(len(raw)) + raw
    if len(key) <= CACHED_TEXT and len(_KEYS) < CACHE_LIMIT:
        _KEYS[key] = piece
    return piece


def _encode_str(value: str) -> bytes:
    raw = value.encode("utf-8")
    piece = TAG_LEN32.pack(STR, len(raw)) + raw
    if type(value) is str and len(value) <= CACHED_TEXT and len(_STRS) < CACHE_LIMIT:
        _STRS[value] = piece
    return piece


def _encode_int(value: int) -> bytes:
    if INT64_MIN <= value <= INT64_MAX:
        return _TAG_I64.pack(INT, value)
    magnitude = abs(value)
    raw = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "little")
    return _BIGINT_HEAD_TAG.pack(BIGINT, 1 if value < 0 else 0, len(raw)) + raw


def encode_value(value: Any, parts: list[Any], depth: int) -> None:
    """Append the pieces of ``value`` (a value at nesting ``depth``) to ``parts``; ``b"".join`` makes the bytes."""
    if depth > _MAX_DEPTH:
        raise ParameterError(explain("message", "nesting deeper than 32", "shallower data", "flatten the message"))
    # The exact types messages are made of first (one type test each instead of a chain of isinstance
    # checks); subclasses and numpy scalars take the general path.
    kind = type(value)
    if kind is dict:
        parts.append(TAG_LEN32.pack(DICT, len(value)))
        for key, item in value.items():
            piece = _KEYS.get(key) if type(key) is str else None
            parts.append(_encode_key(key) if piece is None else piece)
            encode_value(item, parts, depth + 1)
    elif kind is np.ndarray:
        encode_array(value, parts)
    elif kind is list or kind is tuple:
        parts.append(TAG_LEN32.pack(LIST, len(value)))
        for item in value:
            encode_value(item, parts, depth + 1)
    elif kind is bytes:
        parts.append(TAG_LEN64.pack(BYTES, len(value)))
        parts.append(value)
    elif kind is int:
        parts.append(_encode_int(value))
    elif kind is str:
        piece = _STRS.get(value)
        parts.append(_encode_str(value) if piece is None else piece)
    elif kind is float:
        parts.append(_TAG_F64.pack(FLOAT, value))
    else:
        _encode_other(value, parts, depth)


def _encode_other(value: Any, parts: list[Any], depth: int) -> None:
    if value is None:
        parts.append(_NONE_B)
    elif value is True or value is False or isinstance(value, np.bool_):
        parts.append(_TRUE_B if bool(value) else _FALSE_B)
    elif isinstance(value, (int, np.integer)) or type(value).__name__ == "mpz":
        parts.append(_encode_int(int(value)))
    elif isinstance(value, (float, np.floating)):
        parts.append(_TAG_F64.pack(FLOAT, float(value)))
    elif isinstance(value, str):
        parts.append(_encode_str(value))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        parts.append(TAG_LEN64.pack(BYTES, len(raw)))
        parts.append(raw)
    elif isinstance(value, np.ndarray):
        encode_array(value, parts)
    elif isinstance(value, (list, tuple, dict)):
        encode_value(list(value) if not isinstance(value, dict) else dict(value), parts, depth)
    elif isinstance(value, WireEncodable):
        encode_value(value.to_wire(), parts, depth + 1)
    else:
        raise ParameterError(
            explain(
                "message value", type(value).__name__,
                "None, bool, int, float, str, bytes, list, tuple, dict, numpy array or an object with to_wire()",
                "convert the value to plain data before sending it",
            )
        )


def encode_array(array: np.ndarray[Any, Any], parts: list[Any]) -> None:
    """Append an ARRAY (or, for an object array of ints, a BIGARRAY) to ``parts``."""
    ndim = array.ndim
    if ndim > 255:
        raise ParameterError(explain("array.ndim", ndim, "<= 255", "reshape the array"))
    code = DTYPE_CODE.get(array.dtype)
    if code is None:
        if array.dtype.kind == "O":
            _encode_bigarray(array, parts)
            return
        code = DTYPE_CODE.get(array.dtype.newbyteorder("="))
        if code is None:
            raise ParameterError(
                explain("array dtype", str(array.dtype), "bool, int8-64, uint8-64, float32 or float64",
                        "cast the array, e.g. array.astype(np.float64)")
            )
        array = np.ascontiguousarray(array, dtype=DTYPES[code])
    elif not LITTLE or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=DTYPES[code])
    parts.append((ARRAY_HEADS[ndim] if ndim < 9 else _array_head(ndim)).pack(ARRAY, code, ndim, *array.shape))
    # The array itself: encode() reads its (C-contiguous, little-endian) memory through the buffer protocol,
    # before it returns, so the caller's array is neither copied twice nor kept.
    parts.append(array)


def _encode_bigarray(array: np.ndarray[Any, Any], parts: list[Any]) -> None:
    flat = [_bigarray_element(x) for x in array.reshape(-1)]
    width = max(((abs(x).bit_length() + 7) // 8 for x in flat), default=0)
    parts.append(struct.pack(f"<BB{array.ndim}QI", BIGARRAY, array.ndim, *array.shape, width))
    parts.append(bytes(1 if x < 0 else 0 for x in flat))
    parts.append(b"".join(abs(x).to_bytes(width, "little") for x in flat))


def _bigarray_element(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if type(value).__name__ == "mpz" or isinstance(value, np.integer):
        return int(value)
    raise ParameterError(
        explain("object array element", value, "int or gmpy2.mpz",
                "send floats and bools as numpy float64/bool arrays, not object arrays")
    )


@functools.cache
def _array_head(ndim: int) -> struct.Struct:
    return struct.Struct(f"<BBB{ndim}Q")


ARRAY_HEADS = tuple(_array_head(ndim) for ndim in range(9))  # ARRAY tag, dtype code, ndim, dims: up to 8 dims
