"""Wire forms of Paillier objects: versioned recipes of public fields, decoded strictly.

Every object that crosses a party boundary travels as a plain dict the runtime codec carries::

    {"type": "paillier.<kind>", "version": 1, <fields>}

Decoding checks, in this order, and raises the first failure:

1. the shape of the recipe (a dict with exactly the expected fields, the right type tag and version):
   :class:`~mpdp.errors.MalformedMessageError`;
2. the key it claims (its ``key_id``, a SHA-256 fingerprint of the modulus, against the key the receiver
   expects): :class:`~mpdp.errors.KeyMismatchError`;
3. the range of every group element (a ciphertext must lie in [1, n^2)):
   :class:`~mpdp.errors.TamperedCiphertextError`;
4. for an encrypted array, its ``digest``: a SHA-256 over the key id, the shape, the packing, the fixed-point
   format (``frac_bits``, ``bound``) and every ciphertext (:func:`array_digest`), so no field that says how to
   read the ciphertexts can change on the way without :class:`~mpdp.errors.TamperedCiphertextError`. A changed
   ``frac_bits`` would otherwise rescale every decrypted value silently, a changed shape reorder them.

The digest is not a signature: the sender computes it, so it detects a form changed after it was made (a
corrupted or edited message), not a sender that encrypts wrong values; the channel (mutual TLS) authenticates
the sender.

Private material (private keys, key shares) has separate ``to_private_wire``/``from_private_wire`` methods, so
it is never serialised by accident: the runtime codec only calls ``to_wire``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import gmpy2
import numpy as np

from mpdp.errors import KeyMismatchError, MalformedMessageError, TamperedCiphertextError, explain

__all__ = [
    "ARRAY_WIRE_VERSION",
    "WIRE_VERSION",
    "array_digest",
    "array_header",
    "check_recipe",
    "ciphertext_digest",
    "key_fingerprint",
    "wire_int",
    "wire_ints",
]

WIRE_VERSION = 1
#: The version of ``paillier.array``: the one with a digest.
ARRAY_WIRE_VERSION = 2


def key_fingerprint(n: int) -> str:
    """A short public name for the key with modulus ``n``: the first 128 bits of SHA-256(n), in hex."""
    n = int(n)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return hashlib.sha256(b"mpdp.paillier.key:" + raw).hexdigest()[:32]


def ciphertext_digest(values: Any) -> str:
    """SHA-256 over a sequence of ciphertext integers: binds partial decryptions to the ciphertexts they open."""
    h = hashlib.sha256(b"mpdp.paillier.ciphertexts:")
    for value in values:
        v = int(value)
        raw = v.to_bytes((v.bit_length() + 7) // 8, "big")
        h.update(len(raw).to_bytes(4, "big"))
        h.update(raw)
    return h.hexdigest()


def array_header(key_id: str, shape: tuple[int, ...], slot_bits: int, slots: int, frac_bits: int,
                 bound: int) -> list[int | str]:
    """The fields of an encrypted array that :func:`array_digest` binds, in order."""
    return [key_id, len(shape), *shape, slot_bits, slots, frac_bits, bound]


def array_digest(header: Sequence[int | str], ciphertexts: Sequence[Any]) -> bytes:
    """SHA-256 over an encrypted array's header fields (ints and strs, in a fixed order) and its ciphertexts,
    every item length-prefixed so that no two different forms hash the same input."""
    h = hashlib.sha256(b"mpdp.paillier.array/v2:")
    for item in header:
        raw = item.encode() if isinstance(item, str) else str(int(item)).encode()
        h.update(len(raw).to_bytes(4, "big") + raw)
    h.update(len(ciphertexts).to_bytes(8, "big"))
    for value in ciphertexts:
        raw = gmpy2.to_binary(gmpy2.mpz(value))
        h.update(len(raw).to_bytes(4, "big") + raw)
    return h.digest()


def check_recipe(wire: Any, type_name: str, fields: set[str], version: int = WIRE_VERSION) -> Mapping[str, Any]:
    """Validate the envelope of a wire recipe and return it as a mapping."""
    expected = {"type", "version", *fields}
    if not isinstance(wire, Mapping) or set(wire) != expected:
        got = sorted(wire) if isinstance(wire, Mapping) else type(wire).__name__
        raise MalformedMessageError(
            explain(type_name, got, f"a dict with fields {sorted(expected)}",
                    f"build it with {type_name.split('.')[-1]}.to_wire() on the sending side")
        )
    if wire["type"] != type_name:
        raise MalformedMessageError(
            explain("type", wire["type"], repr(type_name), "pass the message to the matching from_wire()")
        )
    if wire["version"] != version:
        raise MalformedMessageError(
            explain(f"{type_name} version", wire["version"], str(version), "run the same mpdp on every party")
        )
    return wire


def wire_int(wire: Mapping[str, Any], field: str, *, low: int, high: int | None = None) -> int:
    """An int field with ``low <= value`` (and ``value < high`` when given)."""
    value = wire[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value >= high):
        bounds = f"an int >= {low}" + (f" and < {high}" if high is not None else "")
        raise MalformedMessageError(explain(field, value, bounds, "the sender is not running a compatible mpdp"))
    return value


def check_key_id(got: Any, expected: str, what: str) -> None:
    """Raise KeyMismatchError unless the recipe's key id is the receiver's key."""
    if got != expected:
        raise KeyMismatchError(
            explain(f"{what} key_id", got, f"{expected!r} (the key this party expects)",
                    "decode it with the public key it was made under, or re-encrypt under this key")
        )


def wire_ints(values: Any, count: int, *, low: int, high: int, what: str) -> list[int]:
    """A list (or object array) of ``count`` ints, each in ``[low, high)``; out of range is tampering."""
    if isinstance(values, np.ndarray):
        if values.dtype != object and values.dtype.kind not in "iu":
            raise MalformedMessageError(explain(what, str(values.dtype), "an array of ints", "reject the sender"))
        values = values.reshape(-1).tolist()
    if not isinstance(values, list) or len(values) != count:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise MalformedMessageError(explain(f"{what} count", got, str(count), "reject the sender"))
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise MalformedMessageError(explain(what, type(value).__name__, "int", "reject the sender"))
        if not low <= value < high:
            raise TamperedCiphertextError(
                explain(what, f"a value of {value.bit_length()} bits" if value > 0 else value,
                        f"every value in [{low}, n^2)", "the message was tampered with or corrupted; reject it")
            )
        out.append(value)
    return out
