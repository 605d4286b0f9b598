"""A small, versioned, typed wire format for messages between parties. No pickle.

Everything a party sends is encoded by :func:`encode` and decoded by :func:`decode`. Decoding only ever
builds plain data (None, bool, int, float, str, bytes, list, dict with str keys, numpy arrays, big-integer
arrays); it never imports, calls or constructs anything named by the input. A crypto object travels as its
public wire form: the sender passes ``obj`` with a ``to_wire()`` method (or its result), the receiver
rebuilds it explicitly, e.g. ``Ciphertext.from_wire(msg["ct"], public_key)``, which validates it.

Layout (all integers little-endian)::

    message  := b"MPDP" version:u8 value
    value    := tag:u8 payload
    NONE 0x00 | FALSE 0x01 | TRUE 0x02
    INT  0x03 i64                        BIGINT 0x04 sign:u8 len:u32 magnitude[len]
    FLOAT 0x05 f64                       STR 0x06 len:u32 utf8[len]
    BYTES 0x07 len:u64 raw[len]          LIST 0x08 count:u32 value*count
    DICT 0x09 count:u32 (STR-payload value)*count        (keys unique, str)
    ARRAY 0x0A dtype:u8 ndim:u8 dim:u64*ndim raw[prod(dim)*itemsize]
    BIGARRAY 0x0B ndim:u8 dim:u64*ndim width:u32 sign:u8[n] magnitude[n*width]

Decoding is strict: unknown version or tag, truncated or trailing bytes, lengths that exceed what remains,
nesting deeper than ``max_depth``, non-unique or non-str dict keys, a message longer than ``max_bytes``,
all raise :class:`~mpdp.errors.MalformedMessageError` before anything large is allocated.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["WIRE_VERSION", "CodecLimits", "WireEncodable", "decode", "encode"]

MAGIC = b"MPDP"
WIRE_VERSION = 1

_NONE, _FALSE, _TRUE, _INT, _BIGINT, _FLOAT, _STR, _BYTES, _LIST, _DICT, _ARRAY, _BIGARRAY = range(12)

_DTYPES: tuple[np.dtype[Any], ...] = tuple(
    np.dtype(name).newbyteorder("<")
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64")
)
_DTYPE_CODE = {dt.newbyteorder("="): code for code, dt in enumerate(_DTYPES)}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@runtime_checkable
class WireEncodable(Protocol):
    """An object that knows its public wire form (plain data the codec can encode)."""

    def to_wire(self) -> Any: ...


@dataclass(frozen=True)
class CodecLimits:
    """Bounds a decoder enforces on untrusted input.

    Attributes
    ----------
    max_bytes:
        Longest accepted message. The default, 4 GiB, admits a 45,222-long vector of 3072-bit Paillier
        ciphertexts many times over; lower it where messages are known to be small.
    max_depth:
        Deepest accepted nesting of lists and dicts.
    max_items:
        Most elements in one list or dict.
    """

    max_bytes: int = 1 << 32
    max_depth: int = 32
    max_items: int = 1 << 24

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_items"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ParameterError(explain(name, value, "a positive int", f"pass e.g. CodecLimits({name}=...)"))


DEFAULT_LIMITS = CodecLimits()


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
        out.append(_INT)
        out += struct.pack("<q", value)
    else:
        magnitude = abs(value)
        raw = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "little")
        out.append(_BIGINT)
        out += struct.pack("<BI", 1 if value < 0 else 0, len(raw))
        out += raw


def _encode_value(value: Any, out: bytearray, depth: int, big: list[tuple[int, memoryview]]) -> None:
    if depth > DEFAULT_LIMITS.max_depth:
        raise ParameterError(explain("message", "nesting deeper than 32", "shallower data", "flatten the message"))
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
    elif isinstance(value, (list, tuple)):
        out.append(_LIST)
        out += struct.pack("<I", len(value))
        for item in value:
            _encode_value(item, out, depth + 1, big)
    elif isinstance(value, dict):
        out.append(_DICT)
        out += struct.pack("<I", len(value))
        for key, item in value.items():
            if not isinstance(key, str):
                raise ParameterError(
                    explain("dict key", key, "a str", "use str keys in messages, e.g. {'share': ...}")
                )
            raw = key.encode("utf-8")
            out += struct.pack("<I", len(raw))
            out += raw
            _encode_value(item, out, depth + 1, big)
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
    code = _DTYPE_CODE.get(array.dtype.newbyteorder("="))
    if code is None:
        raise ParameterError(
            explain("array dtype", str(array.dtype), "bool, int8-64, uint8-64, float32 or float64",
                    "cast the array, e.g. array.astype(np.float64)")
        )
    out.append(_ARRAY)
    out += struct.pack("<BB", code, array.ndim)
    out += struct.pack(f"<{array.ndim}Q", *array.shape)
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
    view = memoryview(data).cast("B")
    if len(view) > limits.max_bytes:
        raise MalformedMessageError(
            explain("message size", f"{len(view)} bytes", f"<= {limits.max_bytes} bytes",
                    "raise CodecLimits.max_bytes if such messages are legitimate, else reject the sender")
        )
    if len(view) < len(MAGIC) + 1 or bytes(view[:4]) != MAGIC:
        raise MalformedMessageError(
            explain("message header", bytes(view[:5]), "b'MPDP' and a version byte", "the peer is not speaking mpdp")
        )
    if view[4] != WIRE_VERSION:
        raise MalformedMessageError(
            explain("wire version", view[4], f"{WIRE_VERSION}", "run the same mpdp version on every party")
        )
    reader = _Reader(view, 5, limits)
    value = reader.value(0)
    if reader.pos != len(view):
        raise MalformedMessageError(
            explain("message", f"{len(view) - reader.pos} trailing bytes", "no bytes after the value",
                    "the message was corrupted or concatenated; reject it")
        )
    return value


class _Reader:
    __slots__ = ("limits", "pos", "view")

    def __init__(self, view: memoryview, pos: int, limits: CodecLimits) -> None:
        self.view = view
        self.pos = pos
        self.limits = limits

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.view):
            raise MalformedMessageError(
                explain("message", f"{n} bytes wanted at offset {self.pos} of {len(self.view)}",
                        "a complete message", "the message is truncated; ask the sender to resend")
            )
        chunk = self.view[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def count(self, n: int, what: str) -> int:
        if n > self.limits.max_items:
            raise MalformedMessageError(
                explain(what, n, f"<= {self.limits.max_items} items", "send fewer items, or raise CodecLimits")
            )
        return n

    def text(self) -> str:
        (n,) = self.unpack("<I")
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessageError(
                explain("str", "invalid UTF-8", "UTF-8 text", "the message was corrupted; reject it")
            ) from exc

    def dims(self, ndim: int) -> tuple[int, ...]:
        dims = self.unpack(f"<{ndim}Q") if ndim else ()
        total = math.prod(dims)
        # Each dimension on its own too: (0, 2^63) has no elements but no array can have that shape.
        if total > self.limits.max_bytes or any(d > self.limits.max_bytes for d in dims):
            raise MalformedMessageError(
                explain("array shape", dims, "a size within the message limit", "reject the sender")
            )
        return tuple(int(d) for d in dims)

    def value(self, depth: int) -> Any:
        if depth > self.limits.max_depth:
            raise MalformedMessageError(
                explain("nesting depth", depth, f"<= {self.limits.max_depth}", "reject the sender")
            )
        (tag,) = self.unpack("<B")
        if tag == _NONE:
            return None
        if tag == _FALSE:
            return False
        if tag == _TRUE:
            return True
        if tag == _INT:
            return self.unpack("<q")[0]
        if tag == _BIGINT:
            sign, n = self.unpack("<BI")
            if sign > 1:
                raise MalformedMessageError(explain("bigint sign", sign, "0 or 1", "reject the sender"))
            magnitude = int.from_bytes(self.take(n), "little")
            return -magnitude if sign else magnitude
        if tag == _FLOAT:
            return self.unpack("<d")[0]
        if tag == _STR:
            return self.text()
        if tag == _BYTES:
            (n,) = self.unpack("<Q")
            return bytes(self.take(n))
        if tag == _LIST:
            (n,) = self.unpack("<I")
            return [self.value(depth + 1) for _ in range(self.count(n, "list length"))]
        if tag == _DICT:
            (n,) = self.unpack("<I")
            result: dict[str, Any] = {}
            for _ in range(self.count(n, "dict size")):
                key = self.text()
                if key in result:
                    raise MalformedMessageError(explain("dict key", key, "unique keys", "reject the sender"))
                result[key] = self.value(depth + 1)
            return result
        if tag == _ARRAY:
            code, ndim = self.unpack("<BB")
            if code >= len(_DTYPES):
                raise MalformedMessageError(explain("array dtype code", code, f"< {len(_DTYPES)}", "reject it"))
            dtype = _DTYPES[code]
            dims = self.dims(ndim)
            raw = self.take(math.prod(dims) * dtype.itemsize)
            array = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True)
            return array.reshape(dims)
        if tag == _BIGARRAY:
            (ndim,) = self.unpack("<B")
            dims = self.dims(ndim)
            n = math.prod(dims)
            (width,) = self.unpack("<I")
            signs = bytes(self.take(n))
            if any(s > 1 for s in signs):
                raise MalformedMessageError(explain("bigarray sign", "byte > 1", "0 or 1", "reject the sender"))
            raw = self.take(n * width)
            out = np.empty(n, dtype=object)
            for i in range(n):
                magnitude = int.from_bytes(raw[i * width : (i + 1) * width], "little")
                out[i] = -magnitude if signs[i] else magnitude
            return out.reshape(dims)
        raise MalformedMessageError(
            explain("type tag", tag, "a tag of wire version 1", "run the same mpdp version on every party")
        )
