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

Every message between parties goes through here, so both directions are written for few Python operations
per value. The modules:

* :mod:`~mpdp.runtime.codec.wire`: the header, tags, dtype table and :class:`CodecLimits`;
* :mod:`~mpdp.runtime.codec.encoder`: :func:`encode`;
* :mod:`~mpdp.runtime.codec.decoder`: :func:`decode`;
* :mod:`~mpdp.runtime.codec.envelope`: :func:`encode_envelope` and :func:`decode_envelope`, the same bytes
  and values for :class:`~mpdp.runtime.comm.Comm`'s envelope, its fixed bytes compared at once;
* :mod:`~mpdp.runtime.codec.opening`: :func:`encode_opening` and :func:`read_opening`, an MPC opening's
  message in one pass each way.

None of the fast paths changes the format: the tests hold the codec to a plain reference implementation
(``tests/runtime/codec/wire_reference.py``: identical bytes; identical values or typed errors on truncated,
flipped, extended or over-limit input).
"""

from mpdp.runtime.codec.decoder import decode
from mpdp.runtime.codec.encoder import encode
from mpdp.runtime.codec.envelope import decode_envelope, encode_envelope
from mpdp.runtime.codec.opening import encode_opening, read_opening
from mpdp.runtime.codec.wire import DEFAULT_LIMITS, MAGIC, WIRE_VERSION, CodecLimits, WireEncodable

__all__ = [
    "DEFAULT_LIMITS",
    "MAGIC",
    "WIRE_VERSION",
    "CodecLimits",
    "WireEncodable",
    "decode",
    "decode_envelope",
    "encode",
    "encode_envelope",
    "encode_opening",
    "read_opening",
]
