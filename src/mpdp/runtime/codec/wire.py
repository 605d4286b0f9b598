"""The wire format's constants and the limits a decoder enforces.

Everything here is shared by the encoder, the decoder and the envelope and opening fast paths: the header,
the type tags and the array dtype table of wire version 1 (the layout is in :mod:`mpdp.runtime.codec`), the
precompiled structs for its fixed-size fields, and :class:`CodecLimits`. Changing the header, a tag, the
dtype table or a struct changes the bytes on the wire: ``WIRE_VERSION`` must change with it.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mpdp.errors import ParameterError, explain

__all__ = ["DEFAULT_LIMITS", "MAGIC", "WIRE_VERSION", "CodecLimits", "WireEncodable"]

MAGIC = b"MPDP"
WIRE_VERSION = 1
HEADER = MAGIC + bytes([WIRE_VERSION])  # what every message starts with

# The type tags, in the order of the layout (NONE 0x00 ... BIGARRAY 0x0B).
NONE, FALSE, TRUE, INT, BIGINT, FLOAT, STR, BYTES, LIST, DICT, ARRAY, BIGARRAY = range(12)

# ARRAY's dtype codes: the index into DTYPES, each stored little-endian.
DTYPES: tuple[np.dtype[Any], ...] = tuple(
    np.dtype(name).newbyteorder("<")
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64")
)
DTYPE_CODE = {dt.newbyteorder("="): code for code, dt in enumerate(DTYPES)}  # native dtype -> code
NATIVE = tuple(dt.newbyteorder("=") for dt in DTYPES)
ITEMSIZE = tuple(dt.itemsize for dt in DTYPES)
DTYPE_COUNT = len(DTYPES)
LITTLE = sys.byteorder == "little"  # the host's order is the wire's: arrays cross without a byte swap

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # INT's range; anything beyond is a BIGINT
U32, U64, I64, F64 = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<q"), struct.Struct("<d")
TAG_LEN32, TAG_LEN64 = struct.Struct("<BI"), struct.Struct("<BQ")  # a tag and its u32 / u64 length or count
DIMS = tuple(struct.Struct(f"<{ndim}Q") for ndim in range(9))  # an array's dimensions, up to 8

# The encoders remember the encoding of short strings (dict keys, labels, str values): protocols use a few
# dozen distinct ones, so the caches stay small; past CACHE_LIMIT entries they stop growing.
CACHE_LIMIT = 4096
CACHED_TEXT = 64  # longest str (in characters) whose encoding is remembered


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
