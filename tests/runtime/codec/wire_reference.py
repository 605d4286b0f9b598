"""The wire format as first written: a plain, unoptimised encoder and decoder of wire version 1.

mpdp.runtime.codec is written for speed (cached headers, one join, decoding with its checks written out in
place); the tests hold it to this reference: the same bytes for every value, and for any input, the same
value or a MalformedMessageError from both.
"""
# ruff: noqa
# mypy: ignore-errors

from __future__ import annotations

import functools
import math
import struct
from typing import Any

import numpy as np

from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.runtime.codec import DEFAULT_LIMITS, MAGIC, WIRE_VERSION, CodecLimits, WireEncodable

_NONE, _FALSE, _TRUE, _INT, _BIGINT, _FLOAT, _STR, _BYTES, _LIST, _DICT, _ARRAY, _BIGARRAY = range(12)

_DTYPES = tuple(
    np.dtype(name).newbyteorder("<")
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64")
)
_DTYPE_CODE = {dt.newbyteorder("="): code for code, dt in enumerate(_DTYPES)}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_U32, _U64S, _I64 = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<q")
_TAG_DICT, _TAG_LIST, _TAG_STR, _TAG_BYTES, _TAG_INT = (bytes([t]) for t in (_DICT, _LIST, _STR, _BYTES, _INT))
_ARRAY_HEAD = struct.Struct("<BBB")
_MAX_DEPTH = 32


# -- encoding ------------------------------------------------------------------------------------------------
def encode(value: Any) -> bytes:
    """Serialise plain data (and ``to_wire()`` objects) to bytes.

    Raises :class:`~mpdp.errors.ParameterError` for a value the format cannot carry (a set, an object array
    of floats, a dict with non-str keys, ...), naming its type.
    """
    out = bytearray(MAGIC)
    out.append(WIRE_VERSION)
    big: list[tuple[int, memoryview]] = []
    _encode_value(value, out, 0, big)
    if not big:
        return bytes(out)
    # Large array payloads were not appended to ``out`` (growing a bytearray by megabytes re-copies it):
    # splice them in at their offsets, so each payload is copied exactly once, into the result.
    view = memoryview(out)
    pieces: list[memoryview] = []
    start = 0
    for offset, payload in big:
        pieces += [view[start:offset], payload]
        start = offset
    pieces.append(view[start:])
    return b"".join(pieces)


_SPLICE_BYTES = 1 << 14  # array payloads at least this large are spliced in by encode() instead of appended


def _encode_int(value: int, out: bytearray) -> None:
    if _INT64_MIN <= value <= _INT64_MAX:
        out += _TAG_INT
        out += _I64.pack(value)
    else:
        magnitude = abs(value)
        raw = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "little")
        out.append(_BIGINT)
        out += struct.pack("<BI", 1 if value < 0 else 0, len(raw))
        out += raw


def _encode_value(value: Any, out: bytearray, depth: int, big: list[tuple[int, memoryview]]) -> None:
    if depth > _MAX_DEPTH:
        raise ParameterError(explain("message", "nesting deeper than 32", "shallower data", "flatten the message"))
    # The exact types messages are made of first (one dict lookup instead of a chain of isinstance checks:
    # every message between parties is encoded here); subclasses and numpy scalars take the general path.
    kind = type(value)
    if kind is dict:
        out += _TAG_DICT
        out += _U32.pack(len(value))
        for key, item in value.items():
            if type(key) is not str:
                raise ParameterError(
                    explain("dict key", key, "a str", "use str keys in messages, e.g. {'share': ...}")
                )
            raw = key.encode("utf-8")
            out += _U32.pack(len(raw))
            out += raw
            _encode_value(item, out, depth + 1, big)
    elif kind is np.ndarray:
        _encode_array(value, out, big)
    elif kind is list or kind is tuple:
        out += _TAG_LIST
        out += _U32.pack(len(value))
        for item in value:
            _encode_value(item, out, depth + 1, big)
    elif kind is str:
        raw = value.encode("utf-8")
        out += _TAG_STR
        out += _U32.pack(len(raw))
        out += raw
    elif kind is int:
        _encode_int(value, out)
    elif kind is bytes:
        out += _TAG_BYTES
        out += _U64S.pack(len(value))
        out += value
    else:
        _encode_other(value, out, depth, big)


def _encode_other(value: Any, out: bytearray, depth: int, big: list[tuple[int, memoryview]]) -> None:
    if value is None:
        out.append(_NONE)
    elif value is True or value is False or isinstance(value, np.bool_):
        out.append(_TRUE if bool(value) else _FALSE)
    elif isinstance(value, (int, np.integer)) or type(value).__name__ == "mpz":
        _encode_int(int(value), out)
    elif isinstance(value, (float, np.floating)):
        out.append(_FLOAT)
        out += struct.pack("<d", float(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out.append(_STR)
        out += struct.pack("<I", len(raw))
        out += raw
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        out.append(_BYTES)
        out += struct.pack("<Q", len(raw))
        out += raw
    elif isinstance(value, np.ndarray):
        _encode_array(value, out, big)
    elif isinstance(value, (list, tuple, dict)):
        _encode_value(list(value) if not isinstance(value, dict) else dict(value), out, depth, big)
    elif isinstance(value, WireEncodable):
        _encode_value(value.to_wire(), out, depth + 1, big)
    else:
        raise ParameterError(
            explain(
                "message value", type(value).__name__,
                "None, bool, int, float, str, bytes, list, tuple, dict, numpy array or an object with to_wire()",
                "convert the value to plain data before sending it",
            )
        )


def _encode_array(array: np.ndarray[Any, Any], out: bytearray, big: list[tuple[int, memoryview]]) -> None:
    if array.ndim > 255:
        raise ParameterError(explain("array.ndim", array.ndim, "<= 255", "reshape the array"))
    if array.dtype == object:
        _encode_bigarray(array, out)
        return
    code = _DTYPE_CODE.get(array.dtype)
    if code is None:
        code = _DTYPE_CODE.get(array.dtype.newbyteorder("="))
    if code is None:
        raise ParameterError(
            explain("array dtype", str(array.dtype), "bool, int8-64, uint8-64, float32 or float64",
                    "cast the array, e.g. array.astype(np.float64)")
        )
    out += _ARRAY_HEAD.pack(_ARRAY, code, array.ndim)
    out += _dims_struct(array.ndim).pack(*array.shape)
    # flat first: memoryview cannot cast a view with a zero in its shape (e.g. (0, 4))
    payload = memoryview(np.ascontiguousarray(array, dtype=_DTYPES[code]).reshape(-1)).cast("B")  # type: ignore[arg-type]
    if len(payload) >= _SPLICE_BYTES:
        big.append((len(out), payload))  # keeps the (contiguous) array alive until encode() joins
    else:
        out += payload


def _encode_bigarray(array: np.ndarray[Any, Any], out: bytearray) -> None:
    flat = [_bigarray_element(x) for x in array.reshape(-1)]
    width = max(((abs(x).bit_length() + 7) // 8 for x in flat), default=0)
    out.append(_BIGARRAY)
    out += struct.pack("<B", array.ndim)
    out += struct.pack(f"<{array.ndim}Q", *array.shape)
    out += struct.pack("<I", width)
    out += bytes(1 if x < 0 else 0 for x in flat)
    for x in flat:
        out += abs(x).to_bytes(width, "little")


def _bigarray_element(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if type(value).__name__ == "mpz" or isinstance(value, np.integer):
        return int(value)
    raise ParameterError(
        explain("object array element", value, "int or gmpy2.mpz",
                "send floats and bools as numpy float64/bool arrays, not object arrays")
    )


# -- decoding ------------------------------------------------------------------------------------------------
def decode(data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS) -> Any:
    """Parse bytes from another party, strictly. Raises :class:`~mpdp.errors.MalformedMessageError`."""
    buf: bytes | memoryview = data if isinstance(data, bytes) else memoryview(data).cast("B")
    size = len(buf)
    if size > limits.max_bytes:
        raise MalformedMessageError(
            explain("message size", f"{size} bytes", f"<= {limits.max_bytes} bytes",
                    "raise CodecLimits.max_bytes if such messages are legitimate, else reject the sender")
        )
    if size < len(MAGIC) + 1 or bytes(buf[:4]) != MAGIC:
        raise MalformedMessageError(
            explain("message header", bytes(buf[:5]), "b'MPDP' and a version byte", "the peer is not speaking mpdp")
        )
    if buf[4] != WIRE_VERSION:
        raise MalformedMessageError(
            explain("wire version", buf[4], f"{WIRE_VERSION}", "run the same mpdp version on every party")
        )
    value, pos = _Reader(buf, limits).value(5, 0)
    if pos != size:
        raise MalformedMessageError(
            explain("message", f"{size - pos} trailing bytes", "no bytes after the value",
                    "the message was corrupted or concatenated; reject it")
        )
    return value


_U8, _F64 = struct.Struct("<B"), struct.Struct("<d")
_BIGINT_HEAD, _ARRAY_CODE = struct.Struct("<BI"), struct.Struct("<BB")
_NATIVE = tuple(dt.newbyteorder("=") for dt in _DTYPES)


@functools.cache
def _dims_struct(ndim: int) -> struct.Struct:
    return struct.Struct(f"<{ndim}Q")


class _Reader:
    """Parses one message. Every read checks the remaining length first, so a truncated or lying message fails
    with MalformedMessageError before anything is sliced or allocated. Each message between parties goes
    through :meth:`value`: it is written with few Python calls per value (the cursor is passed and returned,
    fixed-size fields are read with precompiled structs in place)."""

    __slots__ = ("buf", "end", "limits")

    def __init__(self, buf: bytes | memoryview, limits: CodecLimits) -> None:
        self.buf = buf
        self.end = len(buf)
        self.limits = limits

    def truncated(self, pos: int, n: int) -> MalformedMessageError:
        return MalformedMessageError(
            explain("message", f"{n} bytes wanted at offset {pos} of {self.end}",
                    "a complete message", "the message is truncated; ask the sender to resend")
        )

    def fixed(self, fmt: struct.Struct, pos: int) -> tuple[Any, ...]:
        if pos + fmt.size > self.end:
            raise self.truncated(pos, fmt.size)
        return fmt.unpack_from(self.buf, pos)

    def count(self, n: int, what: str) -> int:
        if n > self.limits.max_items:
            raise MalformedMessageError(
                explain(what, n, f"<= {self.limits.max_items} items", "send fewer items, or raise CodecLimits")
            )
        return n

    def text(self, pos: int) -> tuple[str, int]:
        if pos + 4 > self.end:
            raise self.truncated(pos, 4)
        n = _U32.unpack_from(self.buf, pos)[0]
        pos += 4
        if pos + n > self.end:
            raise self.truncated(pos, n)
        try:
            return str(self.buf[pos : pos + n], "utf-8"), pos + n
        except UnicodeDecodeError as exc:
            raise MalformedMessageError(
                explain("str", "invalid UTF-8", "UTF-8 text", "the message was corrupted; reject it")
            ) from exc

    def dims(self, ndim: int, pos: int) -> tuple[tuple[int, ...], int]:
        dims: tuple[int, ...] = self.fixed(_dims_struct(ndim), pos) if ndim else ()
        total = math.prod(dims)
        # Each dimension on its own too: (0, 2^63) has no elements but no array can have that shape.
        if total > self.limits.max_bytes or any(d > self.limits.max_bytes for d in dims):
            raise MalformedMessageError(
                explain("array shape", dims, "a size within the message limit", "reject the sender")
            )
        return dims, pos + 8 * ndim

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        """The value starting at ``pos`` and the position after it."""
        if depth > self.limits.max_depth:
            raise MalformedMessageError(
                explain("nesting depth", depth, f"<= {self.limits.max_depth}", "reject the sender")
            )
        if pos >= self.end:
            raise self.truncated(pos, 1)
        tag = self.buf[pos]
        pos += 1
        if tag == _DICT:
            (n,) = self.fixed(_U32, pos)
            pos += 4
            result: dict[str, Any] = {}
            for _ in range(self.count(n, "dict size")):
                key, pos = self.text(pos)
                if key in result:
                    raise MalformedMessageError(explain("dict key", key, "unique keys", "reject the sender"))
                result[key], pos = self.value(pos, depth + 1)
            return result, pos
        if tag == _ARRAY:
            code, ndim = self.fixed(_ARRAY_CODE, pos)
            if code >= len(_DTYPES):
                raise MalformedMessageError(explain("array dtype code", code, f"< {len(_DTYPES)}", "reject it"))
            dtype = _DTYPES[code]
            dims, pos = self.dims(ndim, pos + 2)
            count = math.prod(dims)
            nbytes = count * dtype.itemsize
            if pos + nbytes > self.end:
                raise self.truncated(pos, nbytes)
            # a copy in native byte order: the array owns writable memory instead of aliasing the message
            array = np.frombuffer(self.buf, dtype=dtype, count=count, offset=pos).astype(_NATIVE[code], copy=True)
            return array.reshape(dims), pos + nbytes
        if tag == _INT:
            return self.fixed(_I64, pos)[0], pos + 8
        if tag == _STR:
            return self.text(pos)
        if tag == _LIST:
            (n,) = self.fixed(_U32, pos)
            pos += 4
            items = []
            for _ in range(self.count(n, "list length")):
                item, pos = self.value(pos, depth + 1)
                items.append(item)
            return items, pos
        if tag == _BYTES:
            (n,) = self.fixed(_U64S, pos)
            pos += 8
            if pos + n > self.end:
                raise self.truncated(pos, n)
            return bytes(self.buf[pos : pos + n]), pos + n
        if tag == _NONE:
            return None, pos
        if tag == _FALSE:
            return False, pos
        if tag == _TRUE:
            return True, pos
        if tag == _FLOAT:
            return self.fixed(_F64, pos)[0], pos + 8
        if tag == _BIGINT:
            sign, n = self.fixed(_BIGINT_HEAD, pos)
            pos += 5
            if sign > 1:
                raise MalformedMessageError(explain("bigint sign", sign, "0 or 1", "reject the sender"))
            if pos + n > self.end:
                raise self.truncated(pos, n)
            magnitude = int.from_bytes(self.buf[pos : pos + n], "little")
            return (-magnitude if sign else magnitude), pos + n
        if tag == _BIGARRAY:
            (ndim,) = self.fixed(_U8, pos)
            dims, pos = self.dims(ndim, pos + 1)
            n = math.prod(dims)
            (width,) = self.fixed(_U32, pos)
            pos += 4
            if pos + n + n * width > self.end:
                raise self.truncated(pos, n + n * width)
            signs = bytes(self.buf[pos : pos + n])
            if any(s > 1 for s in signs):
                raise MalformedMessageError(explain("bigarray sign", "byte > 1", "0 or 1", "reject the sender"))
            raw = self.buf[pos + n : pos + n + n * width]
            out = np.empty(n, dtype=object)
            for i in range(n):
                magnitude = int.from_bytes(raw[i * width : (i + 1) * width], "little")
                out[i] = -magnitude if signs[i] else magnitude
            return out.reshape(dims), pos + n + n * width
        raise MalformedMessageError(
            explain("type tag", tag, "a tag of wire version 1", "run the same mpdp version on every party")
        )
