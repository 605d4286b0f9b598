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

Every message between parties goes through here (a DPVI step sends ~40 per party), so both directions are
written for few Python operations per value: :func:`encode` collects precompiled headers, cached dict keys
and short strings and the arrays themselves (read through the buffer protocol) and joins them once;
:func:`decode` checks the common tags' lengths in place and copies each array once into memory the receiver
owns. :func:`encode_envelope` and :func:`decode_envelope` do the same for :class:`~mpdp.runtime.comm.Comm`'s
envelope and an MPC opening's body, comparing their fixed bytes at once. None of this changes the format:
the tests hold the codec to a plain reference implementation (identical bytes; identical values or typed
errors on truncated, flipped, extended or over-limit input).
"""

from __future__ import annotations

import functools
import math
import struct
import sys
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["WIRE_VERSION", "CodecLimits", "WireEncodable", "decode", "decode_envelope", "encode",
           "encode_envelope", "encode_opening", "read_opening"]

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
_U32, _U64S, _I64 = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<q")
_BIGINT_HEAD_TAG = struct.Struct("<BBI")  # tag, sign, len
_MAX_DEPTH = 32  # deepest nesting encode() writes (DEFAULT_LIMITS.max_depth: what a default decoder accepts)


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
    parts: list[Any] = [_HEADER]
    _encode_value(value, parts, 0)
    return b"".join(parts)


# Every message between parties is encoded here, so the encoder is written for few Python operations per
# value: it collects the message's pieces (precompiled headers, cached dict keys and short strings, and the
# arrays themselves, read through the buffer protocol) and encode() joins them once, copying each payload
# exactly once, into the result.
_HEADER = MAGIC + bytes([WIRE_VERSION])
_LITTLE = sys.byteorder == "little"
_TAG_LEN32, _TAG_LEN64, _TAG_I64, _TAG_F64 = (struct.Struct(f) for f in ("<BI", "<BQ", "<Bq", "<Bd"))
_NONE_B, _FALSE_B, _TRUE_B = bytes([_NONE]), bytes([_FALSE]), bytes([_TRUE])
_CACHE_LIMIT = 4096  # distinct dict keys / short strings remembered encoded (protocols use a few dozen)
_CACHED_TEXT = 64  # longest str (in characters) whose encoding is remembered
_KEYS: dict[str, bytes] = {}  # dict key -> len:u32 utf8
_STRS: dict[str, bytes] = {}  # str value -> STR tag, len:u32, utf8


def _encode_key(key: Any) -> bytes:
    if type(key) is not str:
        raise ParameterError(explain("dict key", key, "a str", "use str keys in messages, e.g. {'share': ...}"))
    raw = key.encode("utf-8")
    piece = _U32.pack(len(raw)) + raw
    if len(key) <= _CACHED_TEXT and len(_KEYS) < _CACHE_LIMIT:
        _KEYS[key] = piece
    return piece


def _encode_str(value: str) -> bytes:
    raw = value.encode("utf-8")
    piece = _TAG_LEN32.pack(_STR, len(raw)) + raw
    if type(value) is str and len(value) <= _CACHED_TEXT and len(_STRS) < _CACHE_LIMIT:
        _STRS[value] = piece
    return piece


def _encode_int(value: int) -> bytes:
    if _INT64_MIN <= value <= _INT64_MAX:
        return _TAG_I64.pack(_INT, value)
    magnitude = abs(value)
    raw = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "little")
    return _BIGINT_HEAD_TAG.pack(_BIGINT, 1 if value < 0 else 0, len(raw)) + raw


def _encode_value(value: Any, parts: list[Any], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ParameterError(explain("message", "nesting deeper than 32", "shallower data", "flatten the message"))
    # The exact types messages are made of first (one type test each instead of a chain of isinstance
    # checks); subclasses and numpy scalars take the general path.
    kind = type(value)
    if kind is dict:
        parts.append(_TAG_LEN32.pack(_DICT, len(value)))
        for key, item in value.items():
            piece = _KEYS.get(key) if type(key) is str else None
            parts.append(_encode_key(key) if piece is None else piece)
            _encode_value(item, parts, depth + 1)
    elif kind is np.ndarray:
        _encode_array(value, parts)
    elif kind is list or kind is tuple:
        parts.append(_TAG_LEN32.pack(_LIST, len(value)))
        for item in value:
            _encode_value(item, parts, depth + 1)
    elif kind is bytes:
        parts.append(_TAG_LEN64.pack(_BYTES, len(value)))
        parts.append(value)
    elif kind is int:
        parts.append(_encode_int(value))
    elif kind is str:
        piece = _STRS.get(value)
        parts.append(_encode_str(value) if piece is None else piece)
    elif kind is float:
        parts.append(_TAG_F64.pack(_FLOAT, value))
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
        parts.append(_TAG_F64.pack(_FLOAT, float(value)))
    elif isinstance(value, str):
        parts.append(_encode_str(value))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        parts.append(_TAG_LEN64.pack(_BYTES, len(raw)))
        parts.append(raw)
    elif isinstance(value, np.ndarray):
        _encode_array(value, parts)
    elif isinstance(value, (list, tuple, dict)):
        _encode_value(list(value) if not isinstance(value, dict) else dict(value), parts, depth)
    elif isinstance(value, WireEncodable):
        _encode_value(value.to_wire(), parts, depth + 1)
    else:
        raise ParameterError(
            explain(
                "message value", type(value).__name__,
                "None, bool, int, float, str, bytes, list, tuple, dict, numpy array or an object with to_wire()",
                "convert the value to plain data before sending it",
            )
        )


def _encode_array(array: np.ndarray[Any, Any], parts: list[Any]) -> None:
    ndim = array.ndim
    if ndim > 255:
        raise ParameterError(explain("array.ndim", ndim, "<= 255", "reshape the array"))
    code = _DTYPE_CODE.get(array.dtype)
    if code is None:
        if array.dtype.kind == "O":
            _encode_bigarray(array, parts)
            return
        code = _DTYPE_CODE.get(array.dtype.newbyteorder("="))
        if code is None:
            raise ParameterError(
                explain("array dtype", str(array.dtype), "bool, int8-64, uint8-64, float32 or float64",
                        "cast the array, e.g. array.astype(np.float64)")
            )
        array = np.ascontiguousarray(array, dtype=_DTYPES[code])
    elif not _LITTLE or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=_DTYPES[code])
    parts.append((_ARRAY_HEADS[ndim] if ndim < 9 else _array_head(ndim)).pack(_ARRAY, code, ndim, *array.shape))
    # The array itself: encode() reads its (C-contiguous, little-endian) memory through the buffer protocol,
    # before it returns, so the caller's array is neither copied twice nor kept.
    parts.append(array)


def _encode_bigarray(array: np.ndarray[Any, Any], parts: list[Any]) -> None:
    flat = [_bigarray_element(x) for x in array.reshape(-1)]
    width = max(((abs(x).bit_length() + 7) // 8 for x in flat), default=0)
    parts.append(struct.pack(f"<BB{array.ndim}QI", _BIGARRAY, array.ndim, *array.shape, width))
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


_ARRAY_HEADS = tuple(_array_head(ndim) for ndim in range(9))


# -- decoding ------------------------------------------------------------------------------------------------
def decode(data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS) -> Any:
    """Parse bytes from another party, strictly. Raises :class:`~mpdp.errors.MalformedMessageError`."""
    buf: bytes | bytearray | memoryview = data if type(data) in (bytes, bytearray) else memoryview(data).cast("B")
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
_ITEMSIZE = tuple(dt.itemsize for dt in _DTYPES)
_DTYPE_COUNT = len(_DTYPES)


@functools.cache
def _dims_struct(ndim: int) -> struct.Struct:
    return struct.Struct(f"<{ndim}Q")


class _Reader:
    """Parses one message. Every read checks the remaining length first, so a truncated or lying message fails
    with MalformedMessageError before anything is sliced or allocated. Each message between parties goes
    through :meth:`value`: it is written with few Python calls per value (the cursor is passed and returned,
    fixed-size fields are read with precompiled structs in place)."""

    __slots__ = ("buf", "end", "limits", "max_bytes", "max_depth", "max_items", "sliceable")

    def __init__(self, buf: bytes | bytearray | memoryview, limits: CodecLimits) -> None:
        self.buf = buf
        self.sliceable = type(buf) is not memoryview  # its slices have .decode()
        self.end = len(buf)
        self.limits = limits
        self.max_bytes, self.max_depth, self.max_items = limits.max_bytes, limits.max_depth, limits.max_items

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
            raw = self.buf[pos : pos + n]
            return (raw.decode() if self.sliceable else str(raw, "utf-8")), pos + n  # type: ignore[union-attr]
        except UnicodeDecodeError as exc:
            raise _bad_utf8() from exc

    def dims(self, ndim: int, pos: int) -> tuple[tuple[int, ...], int]:
        dims: tuple[int, ...] = self.fixed(_dims_struct(ndim), pos) if ndim else ()
        total = math.prod(dims)
        # Each dimension on its own too: (0, 2^63) has no elements but no array can have that shape.
        if total > self.max_bytes or any(d > self.max_bytes for d in dims):
            raise _bad_shape(dims)
        return dims, pos + 8 * ndim

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        """The value starting at ``pos`` and the position after it."""
        if depth > self.max_depth:
            raise MalformedMessageError(
                explain("nesting depth", depth, f"<= {self.max_depth}", "reject the sender")
            )
        buf, end = self.buf, self.end
        if pos >= end:
            raise self.truncated(pos, 1)
        tag = buf[pos]
        pos += 1
        # The tags every message between parties is made of first, their length checks written out in place.
        if tag == _DICT:
            if pos + 4 > end:
                raise self.truncated(pos, 4)
            (n,) = _U32.unpack_from(buf, pos)
            pos += 4
            if n > self.max_items:
                self.count(n, "dict size")
            result: dict[str, Any] = {}
            for _ in range(n):
                if pos + 4 > end:
                    raise self.truncated(pos, 4)
                (size,) = _U32.unpack_from(buf, pos)
                pos += 4
                if pos + size > end:
                    raise self.truncated(pos, size)
                try:
                    raw = buf[pos : pos + size]
                    key = raw.decode() if self.sliceable else str(raw, "utf-8")  # type: ignore[union-attr]
                except UnicodeDecodeError as exc:
                    raise _bad_utf8() from exc
                if key in result:
                    raise MalformedMessageError(explain("dict key", key, "unique keys", "reject the sender"))
                result[key], pos = self.value(pos + size, depth + 1)
            return result, pos
        if tag == _ARRAY:
            if pos + 2 > end:
                raise self.truncated(pos, 2)
            code, ndim = buf[pos], buf[pos + 1]
            if code >= _DTYPE_COUNT:
                raise MalformedMessageError(explain("array dtype code", code, f"< {_DTYPE_COUNT}", "reject it"))
            pos += 2
            if ndim:
                if pos + 8 * ndim > end:
                    raise self.truncated(pos, 8 * ndim)
                dims: tuple[int, ...] = _dims_struct(ndim).unpack_from(buf, pos)
                pos += 8 * ndim
                count = math.prod(dims)
                # Each dimension on its own too: (0, 2^63) has no elements but no array can have that shape.
                if count > self.max_bytes or max(dims) > self.max_bytes:
                    raise _bad_shape(dims)
            else:
                dims, count = (), 1
            nbytes = count * _ITEMSIZE[code]
            if pos + nbytes > end:
                raise self.truncated(pos, nbytes)
            # a copy in native byte order: the array owns writable memory instead of aliasing the message
            array = np.ndarray(dims, _DTYPES[code], buf, pos)
            return (array.copy() if _LITTLE else array.astype(_NATIVE[code])), pos + nbytes
        if tag == _LIST:
            if pos + 4 > end:
                raise self.truncated(pos, 4)
            (n,) = _U32.unpack_from(buf, pos)
            pos += 4
            if n > self.max_items:
                self.count(n, "list length")
            items = []
            for _ in range(n):
                item, pos = self.value(pos, depth + 1)
                items.append(item)
            return items, pos
        if tag == _BYTES:
            if pos + 8 > end:
                raise self.truncated(pos, 8)
            (n,) = _U64S.unpack_from(buf, pos)
            pos += 8
            if pos + n > end:
                raise self.truncated(pos, n)
            return bytes(buf[pos : pos + n]), pos + n
        if tag == _INT:
            if pos + 8 > end:
                raise self.truncated(pos, 8)
            return _I64.unpack_from(buf, pos)[0], pos + 8
        if tag == _STR:
            return self.text(pos)
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
            if pos + n > end:
                raise self.truncated(pos, n)
            magnitude = int.from_bytes(buf[pos : pos + n], "little")
            return (-magnitude if sign else magnitude), pos + n
        if tag == _BIGARRAY:
            (ndim,) = self.fixed(_U8, pos)
            bdims, pos = self.dims(ndim, pos + 1)
            n = math.prod(bdims)
            (width,) = self.fixed(_U32, pos)
            pos += 4
            if pos + n + n * width > end:
                raise self.truncated(pos, n + n * width)
            signs = bytes(buf[pos : pos + n])
            if any(s > 1 for s in signs):
                raise MalformedMessageError(explain("bigarray sign", "byte > 1", "0 or 1", "reject the sender"))
            raw = buf[pos + n : pos + n + n * width]
            out = np.empty(n, dtype=object)
            for i in range(n):
                magnitude = int.from_bytes(raw[i * width : (i + 1) * width], "little")
                out[i] = -magnitude if signs[i] else magnitude
            return out.reshape(bdims), pos + n + n * width
        raise MalformedMessageError(
            explain("type tag", tag, "a tag of wire version 1", "run the same mpdp version on every party")
        )


def _bad_utf8() -> MalformedMessageError:
    return MalformedMessageError(explain("str", "invalid UTF-8", "UTF-8 text", "the message was corrupted; reject it"))


def _bad_shape(dims: tuple[int, ...]) -> MalformedMessageError:
    return MalformedMessageError(explain("array shape", dims, "a size within the message limit", "reject the sender"))


# -- the message envelope ------------------------------------------------------------------------------------
# Every message between parties is the envelope {"seq": int, "round": int, "label": str, "body": value} that
# mpdp.runtime.comm.Comm writes. encode_envelope() writes exactly the bytes encode() writes for it, and
# decode_envelope() reads its fixed part with one prefix comparison and one struct instead of five values,
# handing everything else (other key orders, big ints, a malformed header) to decode(): the same values and
# the same errors either way, for a few microseconds less per message.
_ENV_HEAD = _HEADER + _TAG_LEN32.pack(_DICT, 4) + _U32.pack(3) + b"seq" + bytes([_INT])
_ENV_MID = struct.Struct("<q10sq10sI")  # seq, "round" key and INT tag, round, "label" key and STR tag, label size
_ROUND_KEY, _LABEL_KEY = _U32.pack(5) + b"round" + bytes([_INT]), _U32.pack(5) + b"label" + bytes([_STR])
_BODY_KEY = _U32.pack(4) + b"body"
_ENV_FIXED = len(_ENV_HEAD) + _ENV_MID.size  # where the label's bytes start
_ENV_KEYS = frozenset({"seq", "round", "label", "body"})
_LABELS: dict[str, tuple[int, bytes]] = {}  # label -> (utf8 size, utf8 + "body" key)
_LABEL_OF: dict[bytes, str] = {}  # utf8 -> label


def encode_envelope(seq: int, stamp: int, label: str, body: Any) -> bytes:
    """``encode({"seq": seq, "round": stamp, "label": label, "body": body})``, byte for byte."""
    known = _LABELS.get(label) if type(label) is str else None
    if known is None:
        if type(label) is not str:
            return encode({"seq": seq, "round": stamp, "label": label, "body": body})
        raw = label.encode("utf-8")
        known = (len(raw), raw + _BODY_KEY)
        if len(label) <= _CACHED_TEXT and len(_LABELS) < _CACHE_LIMIT:
            _LABELS[label] = known
    if type(seq) is not int or type(stamp) is not int or not (
            _INT64_MIN <= seq <= _INT64_MAX and _INT64_MIN <= stamp <= _INT64_MAX):
        return encode({"seq": seq, "round": stamp, "label": label, "body": body})
    parts: list[Any] = [_ENV_HEAD, _ENV_MID.pack(seq, _ROUND_KEY, stamp, _LABEL_KEY, known[0]), known[1]]
    if type(body) is dict and len(body) == 2 and next(iter(body)) == "id":  # an opening, {"id", "v"}?
        sharing_id, values = body["id"], body.get("v")
        if type(sharing_id) is bytes and len(sharing_id) == 16 and type(values) is list:
            parts += (_OPENING_HEAD, sharing_id, _OPENING_LIST, _U32.pack(len(values)))
            for value in values:
                if type(value) is np.ndarray:
                    _encode_array(value, parts)
                else:
                    _encode_value(value, parts, 3)
            return b"".join(parts)
    _encode_value(body, parts, 1)
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
    if (kind is bytes or kind is bytearray) and size >= _ENV_FIXED and buf.startswith(_ENV_HEAD) \
            and size <= limits.max_bytes and limits.max_items >= 4:
        seq, round_key, stamp, label_key, n = _ENV_MID.unpack_from(buf, _ENV_HEAD_SIZE)
        stop = _ENV_FIXED + n
        if round_key == _ROUND_KEY and label_key == _LABEL_KEY and buf.startswith(_BODY_KEY, stop):
            raw = buf[_ENV_FIXED:stop] if kind is bytes else bytes(buf[_ENV_FIXED:stop])
            label = _LABEL_OF.get(raw)
            if label is None:
                try:
                    label = raw.decode()
                except UnicodeDecodeError:
                    label = None  # decode() below names the error
                else:
                    if n <= _CACHED_TEXT and len(_LABEL_OF) < _CACHE_LIMIT:
                        _LABEL_OF[bytes(raw)] = label
            if label is not None:
                start = stop + _BODY_KEY_SIZE
                body: Any = None
                pos = -1
                if buf.startswith(_OPENING_HEAD, start):
                    opening = _read_opening(buf, start, size, limits)
                    if opening is not None:
                        body, pos = opening
                elif start < size and buf[start] == _ARRAY:
                    array = _read_array(buf, start, size, limits.max_bytes)
                    if array is not None:
                        body, pos = array
                else:
                    body, pos = _Reader(buf, limits).value(start, 1)
                if pos == size:
                    return seq, stamp, label, body
    value = decode(data, limits=limits)
    if type(value) is not dict or value.keys() != _ENV_KEYS:
        return None
    return value["seq"], value["round"], value["label"], value["body"]


_ENV_HEAD_SIZE, _BODY_KEY_SIZE = len(_ENV_HEAD), len(_BODY_KEY)
_DIMS = tuple(struct.Struct(f"<{ndim}Q") for ndim in range(9))


def _read_array(data: bytes | bytearray, pos: int, size: int, max_bytes: int) -> tuple[Any, int] | None:
    """The ARRAY value at ``pos`` as :meth:`_Reader.value` reads it (1 to 8 dimensions, little-endian host), or
    None when anything differs from that common case (the caller then leaves the message to :func:`decode`)."""
    if pos + 11 > size or not _LITTLE:
        return None
    code, ndim = data[pos + 1], data[pos + 2]
    if code >= _DTYPE_COUNT:
        return None
    if ndim == 1:  # most arrays: one dimension, its size the element count
        (count,) = _U64S.unpack_from(data, pos + 3)
        first = pos + 11
        stop = first + count * _ITEMSIZE[code]
        if count > max_bytes or stop > size:
            return None
        return np.frombuffer(data, _DTYPES[code], count, first).copy(), stop
    if not 1 < ndim <= 8:
        return None
    first = pos + 3 + 8 * ndim
    if first > size:
        return None
    dims = _DIMS[ndim].unpack_from(data, pos + 3)
    count = math.prod(dims)
    stop = first + count * _ITEMSIZE[code]
    if count > max_bytes or max(dims) > max_bytes or stop > size:
        return None
    # a copy the receiver owns (native order on a little-endian host), as the reader's
    return np.frombuffer(data, _DTYPES[code], count, first).copy().reshape(dims), stop


# An MPC opening's body, {"id": 16 bytes, "v": [arrays]} (mpdp.protocols.mpc.session), the body of most messages:
# its fixed part compared at once, the arrays read by the reader as decode() reads them.
_OPENING_HEAD = _TAG_LEN32.pack(_DICT, 2) + _U32.pack(2) + b"id" + _TAG_LEN64.pack(_BYTES, 16)
_OPENING_LIST = _U32.pack(1) + b"v" + bytes([_LIST])
_OPENING_FIXED = len(_OPENING_HEAD) + 16 + len(_OPENING_LIST) + 4


def _read_opening(data: bytes | bytearray, pos: int, size: int, limits: CodecLimits
                  ) -> tuple[dict[str, Any], int] | None:
    """The opening body at ``pos`` (an envelope's body, depth 1), or None to leave the message to :func:`decode`."""
    if limits.max_depth < 3 or limits.max_items < 2 or pos + _OPENING_FIXED > size:
        return None
    start = pos + _OPENING_HEAD_SIZE
    if not data.startswith(_OPENING_LIST, start + 16):
        return None
    sharing_id = bytes(data[start : start + 16])
    (n,) = _U32.unpack_from(data, start + 16 + _OPENING_LIST_SIZE)
    if n > limits.max_items:
        return None
    pos += _OPENING_FIXED
    max_bytes = limits.max_bytes
    values = []
    for _ in range(n):
        if pos >= size or data[pos] != _ARRAY:
            return None
        array = _read_array(data, pos, size, max_bytes)
        if array is None:
            return None
        value, pos = array
        values.append(value)
    return {"id": sharing_id, "v": values}, pos


_OPENING_HEAD_SIZE, _OPENING_LIST_SIZE = len(_OPENING_HEAD), len(_OPENING_LIST)


# -- an MPC opening, end to end ------------------------------------------------------------------------------
# Most messages of an MPC computation are openings: the envelope around {"id": sharing id, "v": [arrays]}, the
# arrays mostly uint64 vectors. The receiver knows what it expects (the next sequence number, the step's label,
# the sharing id and how many arrays), so encode_opening() writes such a message in one pass and read_opening()
# accepts exactly the bytes encode_opening() writes for those expectations and nothing else (any other message
# is read by decode_envelope(), which returns the same values or names what is wrong).
_U64_CODE = 8  # _DTYPES[8] is uint64
_U64 = np.dtype(np.uint64)
_SEQ_ROUND = struct.Struct("<q10sq")  # seq, "round" key and INT tag, round (after _ENV_HEAD)
_U64_HEADS: dict[tuple[int, ...], bytes] = {}  # shape -> a uint64 array's header (a computation uses a few dozen)
_OPENING_AT = len(_ENV_HEAD) + _SEQ_ROUND.size  # where the label key starts
_OPENING_PIECES: dict[str, bytes] = {}  # label -> label key, size, utf8, "body" key and the opening's head
_OPENING_COUNTS = tuple(_OPENING_LIST + _U32.pack(n) for n in range(16))  # "v" key, LIST tag and count


def _opening_piece(label: str) -> bytes | None:
    try:
        raw = label.encode("utf-8")
    except UnicodeEncodeError:
        return None
    piece = _LABEL_KEY + _U32.pack(len(raw)) + raw + _BODY_KEY + _OPENING_HEAD
    if len(label) <= _CACHED_TEXT and len(_OPENING_PIECES) < _CACHE_LIMIT:
        _OPENING_PIECES[label] = piece
    return piece


def encode_opening(seq: int, stamp: int, label: str, sharing_id: bytes, values: list[Any] | tuple[Any, ...]
                   ) -> bytes:
    """``encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})``, byte for byte."""
    piece = _OPENING_PIECES.get(label) if type(label) is str else None
    if piece is None and type(label) is str:
        piece = _opening_piece(label)
    if piece is None or type(seq) is not int or type(stamp) is not int or type(sharing_id) is not bytes \
            or len(sharing_id) != 16 or not _LITTLE:
        return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})
    count = len(values)
    try:
        parts: list[Any] = [_ENV_HEAD, _SEQ_ROUND.pack(seq, _ROUND_KEY, stamp), piece, sharing_id,
                            _OPENING_COUNTS[count] if count < 16 else _OPENING_LIST + _U32.pack(count)]
    except struct.error:  # beyond int64: a BIGINT, written by the generic encoder
        return encode_envelope(seq, stamp, label, {"id": sharing_id, "v": list(values)})
    for value in values:
        if type(value) is np.ndarray:
            if value.dtype is _U64:  # most arrays: uint64, their header remembered by shape
                head = _U64_HEADS.get(value.shape)
                if head is None:
                    head = _u64_head(value.shape)
                    if head is None:  # more than 8 dimensions
                        _encode_array(value, parts)
                        continue
                parts.append(head)
                parts.append(value)
            else:
                _encode_array(value, parts)
        else:
            _encode_value(value, parts, 3)
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
    if type(data) is not bytes or size > limits.max_bytes or type(sharing_id) is not bytes or not _LITTLE:
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
    if got != seq or stamp < 1 or head != _ENV_HEAD or round_key != _ROUND_KEY or got_piece != piece \
            or got_id != sharing_id or got_count != counted:
        return None
    pos = fields.size  # the first array
    values: list[Any] = []
    max_bytes = limits.max_bytes
    try:
        for _ in range(count):
            ndim = data[pos + 2]
            if data[pos] == _ARRAY and data[pos + 1] == _U64_CODE and 0 < ndim <= 8:  # uint64, most arrays
                dims = _DIMS[ndim].unpack_from(data, pos + 3)
                first = pos + 3 + 8 * ndim
                n = dims[0] if ndim == 1 else math.prod(dims)
                pos = first + 8 * n
                # (no element: each dimension on its own within the limit, as the reader checks)
                if pos > size or (not n and max(dims) > max_bytes):
                    return None
                values.append(np.ndarray(dims, _U64, data, first).copy())
            else:
                array = _read_array(data, pos, size, max_bytes) if data[pos] == _ARRAY else None
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
    counted = _OPENING_LIST + _U32.pack(count)
    fields = struct.Struct(f"<{_ENV_HEAD_SIZE}sq10sq{len(piece)}s16s{len(counted)}s")
    layout = (fields, piece, counted)
    if len(label) <= _CACHED_TEXT and len(_OPENING_LAYOUTS) < _CACHE_LIMIT:
        _OPENING_LAYOUTS[(label, count)] = layout
    return layout


def _u64_head(shape: tuple[int, ...]) -> bytes | None:
    """The header of a uint64 array of ``shape`` (remembered), or None beyond 8 dimensions."""
    ndim = len(shape)
    if ndim > 8:
        return None
    head = _ARRAY_HEADS[ndim].pack(_ARRAY, _U64_CODE, ndim, *shape)
    if len(_U64_HEADS) < _CACHE_LIMIT:
        _U64_HEADS[shape] = head
    return head
