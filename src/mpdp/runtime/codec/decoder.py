"""Decoding: the bytes of wire version 1 back to plain data, strictly.

:func:`decode` only ever builds plain data (None, bool, int, float, str, bytes, list, dict with str keys,
numpy arrays, big-integer arrays); it never imports, calls or constructs anything named by the input.

Invariants: every read checks the remaining length first, so a truncated or lying message fails with
:class:`~mpdp.errors.MalformedMessageError` before anything is sliced or allocated; a declared length or
shape beyond ``CodecLimits.max_bytes``, a list or dict beyond ``max_items``, nesting beyond ``max_depth``,
duplicate dict keys, invalid UTF-8, an unknown version or tag and trailing bytes are all refused. Arrays are
copied once into memory the receiver owns (writable, native byte order), never views of the message.
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Any

import numpy as np

from mpdp.errors import MalformedMessageError, explain
from mpdp.runtime.codec.wire import (
    ARRAY,
    BIGARRAY,
    BIGINT,
    BYTES,
    DEFAULT_LIMITS,
    DICT,
    DTYPE_COUNT,
    DTYPES,
    F64,
    FALSE,
    FLOAT,
    I64,
    INT,
    ITEMSIZE,
    LIST,
    LITTLE,
    MAGIC,
    NATIVE,
    NONE,
    STR,
    TRUE,
    U32,
    U64,
    WIRE_VERSION,
    CodecLimits,
)

__all__ = ["decode"]


def decode(data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS) -> Any:
    """Parse bytes from another party, strictly. Raises :class:`~mpdp.errors.MalformedMessageError`."""
    try:
        buf: bytes | bytearray | memoryview = data if type(data) in (bytes, bytearray) else memoryview(data).cast(
            "B")
    except (TypeError, ValueError) as exc:
        raise MalformedMessageError(explain("message", type(data).__name__, "bytes", "pass the bytes received"))\
            from exc
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
    value, pos = Reader(buf, limits).value(5, 0)
    if pos != size:
        raise MalformedMessageError(
            explain("message", f"{size - pos} trailing bytes", "no bytes after the value",
                    "the message was corrupted or concatenated; reject it")
        )
    return value


_U8 = struct.Struct("<B")
_BIGINT_HEAD = struct.Struct("<BI")  # sign, len


@functools.cache
def _dims_struct(ndim: int) -> struct.Struct:
    return struct.Struct(f"<{ndim}Q")


class Reader:
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
        n = U32.unpack_from(self.buf, pos)[0]
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
        if tag == DICT:
            if pos + 4 > end:
                raise self.truncated(pos, 4)
            (n,) = U32.unpack_from(buf, pos)
            pos += 4
            if n > self.max_items:
                self.count(n, "dict size")
            result: dict[str, Any] = {}
            for _ in range(n):
                if pos + 4 > end:
                    raise self.truncated(pos, 4)
                (size,) = U32.unpack_from(buf, pos)
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
        if tag == ARRAY:
            if pos + 2 > end:
                raise self.truncated(pos, 2)
            code, ndim = buf[pos], buf[pos + 1]
            if code >= DTYPE_COUNT:
                raise MalformedMessageError(explain("array dtype code", code, f"< {DTYPE_COUNT}", "reject it"))
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
            nbytes = count * ITEMSIZE[code]
            if pos + nbytes > end:
                raise self.truncated(pos, nbytes)
            # a copy in native byte order: the array owns writable memory instead of aliasing the message
            array = np.ndarray(dims, DTYPES[code], buf, pos)
            return (array.copy() if LITTLE else array.astype(NATIVE[code])), pos + nbytes
        if tag == LIST:
            if pos + 4 > end:
                raise self.truncated(pos, 4)
            (n,) = U32.unpack_from(buf, pos)
            pos += 4
            if n > self.max_items:
                self.count(n, "list length")
            items = []
            for _ in range(n):
                item, pos = self.value(pos, depth + 1)
                items.append(item)
            return items, pos
        if tag == BYTES:
            if pos + 8 > end:
                raise self.truncated(pos, 8)
            (n,) = U64.unpack_from(buf, pos)
            pos += 8
            if pos + n > end:
                raise self.truncated(pos, n)
            return bytes(buf[pos : pos + n]), pos + n
        if tag == INT:
            if pos + 8 > end:
                raise self.truncated(pos, 8)
            return I64.unpack_from(buf, pos)[0], pos + 8
        if tag == STR:
            return self.text(pos)
        if tag == NONE:
            return None, pos
        if tag == FALSE:
            return False, pos
        if tag == TRUE:
            return True, pos
        if tag == FLOAT:
            return self.fixed(F64, pos)[0], pos + 8
        if tag == BIGINT:
            sign, n = self.fixed(_BIGINT_HEAD, pos)
            pos += 5
            if sign > 1:
                raise MalformedMessageError(explain("bigint sign", sign, "0 or 1", "reject the sender"))
            if pos + n > end:
                raise self.truncated(pos, n)
            magnitude = int.from_bytes(buf[pos : pos + n], "little")
            return (-magnitude if sign else magnitude), pos + n
        if tag == BIGARRAY:
            (ndim,) = self.fixed(_U8, pos)
            bdims, pos = self.dims(ndim, pos + 1)
            n = math.prod(bdims)
            (width,) = self.fixed(U32, pos)
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
