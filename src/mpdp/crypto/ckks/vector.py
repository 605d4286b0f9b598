"""Encrypted real vectors of any length: explicit chunks of N / 2 slots, each a TenSEAL CKKS ciphertext.

A vector of length L is cut into ceil(L / slots) chunks; the last chunk is padded with zeros, so every chunk
holds exactly ``slots`` values and operations never depend on TenSEAL's implicit multi-ciphertext mode.
Operations with plaintexts (``mul_plain``, ``mul_scalar``, ``dot``) consume one level each; the vector
tracks ``depth_used`` and raises :class:`~mpdp.errors.PrecisionError` before exceeding the set's depth.

``dot(w)`` multiplies every chunk by its slice of w, adds the chunks, and sums the slots of the one result
with log2(slots) rotations (Galois keys needed): one rotation ladder for the whole vector, not one per chunk.

Security
--------
IND-CPA under RLWE at >= 128 bits for the vetted sets. A result computed from the holder's plaintext carries
noise that depends on that plaintext, and without :meth:`CkksVector.rerandomize` its ciphertext randomness is
the key owner's; results derived from private plaintext are marked not ``fresh`` and refuse ``to_wire()`` until
rerandomized (a fresh encryption of zero is added). Rerandomizing hides the randomness, not the noise:
CKKS offers no circuit privacy against the key owner without noise flooding, which mpdp does not add; protocols
that need it mask results before decryption.

Accuracy
--------
Approximate: see the per-set bounds in :mod:`mpdp.crypto.ckks.params` (results within those bounds for inputs
in [-1, 1]; the magnitude of any result must stay below ``params.max_magnitude``).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
from typing import Any

import numpy as np
import numpy.typing as npt
import tenseal as ts

from mpdp.crypto.ckks.context import CkksContext
from mpdp.errors import (
    CryptoError,
    DomainError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    PrecisionError,
    ShapeMismatchError,
    TamperedCiphertextError,
    explain,
)
from mpdp.numeric import real_array

__all__ = ["CkksVector", "wire_form"]


def as_reals(values: Any, what: str, max_magnitude: float) -> npt.NDArray[np.float64]:
    array = real_array(values, what).reshape(-1)
    if not np.all(np.isfinite(array)):
        raise DomainError(explain(what, "NaN or infinity", "finite reals", "clean the input first"))
    if array.size and float(np.max(np.abs(array))) >= max_magnitude:
        raise DomainError(explain(what, float(np.max(np.abs(array))), f"|x| < {max_magnitude}",
                                  "rescale the data or choose a parameter set with a larger first prime"))
    return array


def _times(chunk: Any, plain: Any) -> Any:
    """``chunk * plain`` (a list of reals or one real), consuming one level even when ``plain`` is zero.

    TenSEAL skips the product, and its rescale, for an all-zero plaintext and returns the ciphertext one level
    too high, which ``from_wire`` rightly rejects as tampered (and ``x - x`` is refused as transparent). A zero
    factor is therefore replaced by the constant ``2^-36`` (encoded exactly as the constant term 2^4 at scale
    2^40): each slot's product is off by at most ``2^-36 |x|`` (1.5e-11 for ``|x| <= 1``; 6e-8 summed over a
    whole 4096-slot dot product), far inside the documented ``mul_error`` and dot bounds.
    """
    if (any(plain) if isinstance(plain, list) else plain):
        return chunk * plain
    return chunk * 2.0**-36


def wire_form(context: CkksContext, length: int, depth_used: int, chunks: list[bytes]) -> dict[str, Any]:
    """The message form of a vector: each chunk TenSEAL's serialised CKKS vector, and a SHA-256 over the context
    id, the parameter set, the length, the depth and every chunk (read by :meth:`CkksVector.from_wire`)."""
    digest = _digest(context.context_id, context.params.name, length, depth_used, chunks)
    return {"type": "ckks.vector", "version": 2, "context_id": context.context_id, "params": context.params.name,
            "length": length, "depth_used": depth_used, "chunks": chunks, "digest": digest}


_WIRE_FIELDS = frozenset({"type", "version", "context_id", "params", "length", "depth_used", "chunks", "digest"})
_COUNT = struct.Struct("<Q")


def _digest(context_id: str, params: str, length: int, depth_used: int, chunks: list[bytes]) -> bytes:
    """SHA-256 over every field of a vector's wire form, each length-prefixed (so no two forms share an input)."""
    h = hashlib.sha256(b"mpdp.ckks.vector/v2\x00")
    for text in (context_id, params):
        raw = text.encode()
        h.update(_COUNT.pack(len(raw)) + raw)
    h.update(_COUNT.pack(length) + _COUNT.pack(depth_used) + _COUNT.pack(len(chunks)))
    for chunk in chunks:
        h.update(_COUNT.pack(len(chunk)))
        h.update(chunk)
    return h.digest()


def _varint_at(raw: bytes, pos: int) -> tuple[int, int]:
    """The protocol-buffer varint at ``raw[pos:]`` (at most 10 bytes) and the position after it."""
    value = 0
    for shift in range(0, 70, 7):
        if pos >= len(raw):
            break
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise TamperedCiphertextError(explain("CKKS chunk", "a truncated field", "a TenSEAL vector", "reject the sender"))


def _tenseal_fields(raw: bytes) -> tuple[list[int], float]:
    """The size list and the scale of TenSEAL's serialised CKKS vector, decoded strictly: exactly field 1 (the
    packed size list), field 2 (the SEAL ciphertext) and field 3 (the scale, a double), in that order, nothing
    after. The ciphertext itself is read by TenSEAL."""
    pos, sizes = 0, []
    if raw[:1] == b"\x0a":
        end, pos = _varint_at(raw, 1)
        end += pos
        while pos < min(end, len(raw)):
            size, pos = _varint_at(raw, pos)
            sizes.append(size)
    if raw[pos: pos + 1] == b"\x12":
        length, pos = _varint_at(raw, pos + 1)
        pos += length
    if raw[pos: pos + 1] != b"\x19" or len(raw) != pos + 9:
        raise TamperedCiphertextError(explain("CKKS chunk", "an unexpected layout", "fields 1, 2, 3 of a TenSEAL "
                                              "vector", "reject the sender"))
    (scale,) = struct.unpack_from("<d", raw, pos + 1)
    return sizes, scale


class CkksVector:
    """A CKKS-encrypted real vector of ``length`` values (see the module docstring)."""

    __slots__ = ("chunks", "context", "depth_used", "fresh", "length")

    def __init__(self, context: CkksContext, chunks: list[Any], length: int, *, depth_used: int = 0,
                 fresh: bool = True) -> None:
        self.context = context
        self.chunks = chunks
        self.length = int(length)
        self.depth_used = int(depth_used)
        self.fresh = fresh

    # -- construction ----------------------------------------------------------------------------------------
    @classmethod
    def encrypt(cls, context: CkksContext, values: Any) -> CkksVector:
        """Encrypt reals (any length >= 1) under ``context``'s public key."""
        x = as_reals(values, "values", context.params.max_magnitude)
        if x.size == 0:
            raise ShapeMismatchError(explain("values", "an empty vector", "at least one value", "pass data"))
        slots = context.params.slots
        chunks = [ts.ckks_vector(context.tenseal, chunk.tolist()) for chunk in cls._split(x, slots)]
        return cls(context, chunks, x.size)

    @staticmethod
    def _split(x: npt.NDArray[np.float64], slots: int) -> list[npt.NDArray[np.float64]]:
        padded = np.zeros(math.ceil(x.size / slots) * slots)
        padded[: x.size] = x
        return list(padded.reshape(-1, slots))

    def decrypt(self, context: CkksContext | None = None) -> npt.NDArray[np.float64]:
        """The approximate reals (needs the private context: ``context`` or this vector's own)."""
        ctx = self.context if context is None else context
        ctx.require_private("decrypt")
        self._require_same(ctx)
        out = np.concatenate([np.asarray(c.decrypt(ctx.secret_key), dtype=np.float64)
                              for c in self.chunks])
        return out[: self.length]

    def __len__(self) -> int:
        return self.length

    @property
    def params(self) -> Any:
        return self.context.params

    def __repr__(self) -> str:
        return (f"CkksVector(length={self.length}, chunks={len(self.chunks)}, depth_used={self.depth_used}/"
                f"{self.params.depth}, {self.params.name})")

    def _require_same(self, context: CkksContext) -> None:
        if context.context_id != self.context.context_id:
            raise KeyMismatchError(explain("CKKS context", context.context_id[:12], self.context.context_id[:12],
                                           "use the context the vector was encrypted under"))

    def _need_level(self, what: str) -> int:
        if self.depth_used >= self.params.depth:
            raise PrecisionError(
                explain(what, f"multiplication {self.depth_used + 1}", f"at most {self.params.depth} with "
                        f"{self.params.name}", "choose a deeper set: parameters_for_depth(needed_depth)")
            )
        return self.depth_used + 1

    def _derive(self, chunks: list[Any], length: int, depth_used: int, fresh: bool) -> CkksVector:
        return CkksVector(self.context, chunks, length, depth_used=depth_used, fresh=fresh)

    def _plain_chunks(self, values: Any, what: str, *, factor: float = 1.0) -> list[list[float]]:
        w = as_reals(values, what, self.params.max_magnitude) * factor
        if w.size == 1 and self.length != 1:
            w = np.full(self.length, w[0])
        if w.size != self.length:
            raise ShapeMismatchError(explain(what, w.size, f"{self.length} values (or one scalar)",
                                             "pass one value per entry"))
        return [c.tolist() for c in self._split(w, self.params.slots)]

    # -- operations ------------------------------------------------------------------------------------------
    def _require_compatible(self, other: CkksVector) -> None:
        self._require_same(other.context)
        if other.length != self.length:
            raise ShapeMismatchError(explain("operand length", other.length, str(self.length), "align vectors"))

    def __add__(self, other: object) -> CkksVector:
        if not isinstance(other, CkksVector):
            return NotImplemented
        self._require_compatible(other)
        chunks = [a + b for a, b in zip(self.chunks, other.chunks, strict=True)]
        return self._derive(chunks, self.length, max(self.depth_used, other.depth_used), self.fresh and other.fresh)

    def __neg__(self) -> CkksVector:
        return self._derive([-c for c in self.chunks], self.length, self.depth_used, self.fresh)

    def __sub__(self, other: object) -> CkksVector:
        if not isinstance(other, CkksVector):
            return NotImplemented
        return self + (-other)

    def add_plain(self, values: Any) -> CkksVector:
        """Add plaintext reals (one per entry, or a scalar).

        A length-1 vector (a :meth:`sum` or :meth:`dot` result) holds its value in *every* slot of its
        ciphertext: the rotation ladder leaves the total everywhere. Its addend is therefore encoded into every
        slot: an addend in slot 0 alone would mask slot 0 alone, and a key owner decrypting the raw ciphertext
        would read the unmasked product in the other 4,095 slots (:mod:`mpdp.protocols.inner_product.ckks`)."""
        plain = self._plain_chunks(values, "addend")
        if self.length == 1:  # a scalar: TenSEAL encodes it into every slot
            chunks = [self.chunks[0] + float(plain[0][0])]
        else:
            chunks = [c + p for c, p in zip(self.chunks, plain, strict=True)]
        return self._derive(chunks, self.length, self.depth_used, False)

    def mul_plain(self, values: Any) -> CkksVector:
        """Multiply elementwise by plaintext reals (one level)."""
        depth = self._need_level("mul_plain")
        plain = self._plain_chunks(values, "weights", factor=self._rescale_factor())
        chunks = [_times(c, p) for c, p in zip(self.chunks, plain, strict=True)]
        return self._derive(chunks, self.length, depth, False)

    def mul_scalar(self, value: float) -> CkksVector:
        """Multiply every value by one plaintext real (one level)."""
        depth = self._need_level("mul_scalar")
        reals = as_reals(value, "scalar", self.params.max_magnitude)
        if reals.size != 1:
            raise ShapeMismatchError(explain("scalar", reals.size, "one real", "use mul_plain for a vector"))
        scalar = float(reals[0]) * self._rescale_factor()
        return self._derive([_times(c, scalar) for c in self.chunks], self.length, depth, False)

    def sum(self) -> CkksVector:
        """The sum of all values, as a length-1 vector (rotations: needs Galois keys)."""
        self._require_galois()
        total = self.chunks[0]
        for c in self.chunks[1:]:
            total = total + c
        return self._derive([total.sum()], 1, self.depth_used, self.fresh)

    def dot(self, values: Any) -> CkksVector:
        """<x, w> with plaintext w: one level; the chunks' products are added before one rotation ladder."""
        depth = self._need_level("dot")
        self._require_galois()
        plain = self._plain_chunks(values, "weights", factor=self._rescale_factor())
        products = [_times(c, p) for c, p in zip(self.chunks, plain, strict=True)]
        total = products[0]
        for p in products[1:]:
            total = total + p
        return self._derive([total.sum()], 1, depth, False)

    def _rescale_factor(self) -> float:
        """q / 2^scale for the prime the next rescale drops (see CkksContext.rescale_factors)."""
        return self.context.rescale_factors[self.depth_used]

    def _require_galois(self) -> None:
        if not self.context.has_galois_keys:
            raise ParameterError(explain("CKKS context", "no Galois keys", "Galois (rotation) keys",
                                         "generate the context with CkksContext.generate(params, galois_keys=True)"))

    def rerandomize(self) -> CkksVector:
        """Add a fresh encryption of zero to every chunk (hides the ciphertext randomness; see Security)."""
        chunks = [c + ts.ckks_vector(self.context.tenseal, [0.0] * c.size()) for c in self.chunks]
        return self._derive(chunks, self.length, self.depth_used, True)

    # -- wire ----------------------------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        if not self.fresh:
            raise CryptoError(explain("CkksVector.to_wire", "a result derived from this party's plaintext",
                                      "a rerandomized ciphertext", "call .rerandomize() before sending"))
        return wire_form(self.context, self.length, self.depth_used, [bytes(c.serialize()) for c in self.chunks])

    @classmethod
    def from_wire(cls, wire: Any, context: CkksContext) -> CkksVector:
        """Rebuild a received vector under ``context``.

        Checked, in this order: the layout (:class:`~mpdp.errors.MalformedMessageError`); the digest over every
        field and chunk (any changed byte: :class:`~mpdp.errors.TamperedCiphertextError`); the context id
        (:class:`~mpdp.errors.KeyMismatchError`); then what the chunks declare, against what ``context``
        and the declared depth imply: chunk count, slot count, the TenSEAL and SEAL scales, polynomial count,
        NTT form and level (:class:`~mpdp.errors.TamperedCiphertextError`).

        The digest detects a form changed after it was made (a flipped bit, a swapped chunk or field); it is not
        a signature: a sender can encrypt anything, and the channel (mutual TLS) authenticates who sent it.
        """
        if not isinstance(wire, dict) or set(wire) != _WIRE_FIELDS or wire["type"] != "ckks.vector" or wire[
            "version"
        ] != 2 or not _well_typed(wire):
            raise MalformedMessageError(explain("ckks.vector", type(wire).__name__,
                                                f"a dict with {sorted(_WIRE_FIELDS)}, well typed",
                                                "send it with CkksVector.to_wire()"))
        length, depth, chunks = wire["length"], wire["depth_used"], wire["chunks"]
        expected = _digest(wire["context_id"], wire["params"], length, depth, chunks)
        if not hmac.compare_digest(expected, wire["digest"]):
            raise TamperedCiphertextError(explain("ckks.vector digest", wire["digest"][:8].hex() + "...",
                                                  "the SHA-256 of its fields and chunks",
                                                  "the message was changed after it was made; reject it"))
        if wire["context_id"] != context.context_id:
            raise KeyMismatchError(explain("CkksVector context_id", wire["context_id"], context.context_id,
                                           "decode it with the context it was encrypted under"))
        params = context.params
        if wire["params"] != params.name or not 0 <= depth <= params.depth or len(chunks) != math.ceil(
            length / params.slots
        ):
            raise TamperedCiphertextError(explain("ckks.vector", {k: wire[k] for k in ("params", "length",
                                                                                         "depth_used")},
                                                  f"fields consistent with {params.name}", "reject the sender"))
        return cls(context, [_chunk(raw, context, length, depth) for raw in chunks], length, depth_used=depth)


def _well_typed(wire: dict[str, Any]) -> bool:
    """The wire form's field types and ranges (before the digest is computed over them)."""
    ints = [wire["length"], wire["depth_used"]]
    return all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32 for v in ints) and ints[
        0
    ] >= 1 and all(isinstance(wire[k], str) and len(wire[k]) <= 256 for k in ("context_id", "params")) and (
        isinstance(wire["digest"], bytes) and len(wire["digest"]) == 32) and isinstance(wire["chunks"], list) and (
        all(isinstance(c, bytes) for c in wire["chunks"]))


def _chunk(raw: bytes, context: CkksContext, length: int, depth: int) -> Any:
    """One received chunk, parsed by TenSEAL and checked against what ``context`` and ``depth`` imply."""
    params = context.params
    sizes, scale = _tenseal_fields(raw)
    try:
        vector = ts.ckks_vector_from(context.tenseal, raw)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise MalformedMessageError(explain("CKKS chunk", "bytes that do not parse", "a CKKS ciphertext",
                                            "reject the sender")) from exc
    ciphertext = vector.ciphertext()
    levels = len(params.coeff_mod_bit_sizes) - 1 - depth  # primes left after `depth` rescales
    allowed = (params.slots, 1) if length == 1 else (params.slots,)  # sum() and dot() results hold 1 value
    seal = ciphertext[0] if len(ciphertext) == 1 else None
    if sizes != [vector.size()] or vector.size() not in allowed or seal is None or seal.coeff_modulus_size() != (
        levels
    ):
        raise TamperedCiphertextError(explain("CKKS chunk", f"size {sizes}", f"{params.slots} slots at level "
                                              f"{levels}", "reject the sender"))
    if scale != 2.0**params.scale_bits or seal.size() != 2 or not seal.is_ntt_form() or not _scale_ok(
        seal.scale, context, depth
    ):
        raise TamperedCiphertextError(explain("CKKS chunk scale", (scale, seal.scale, seal.size()),
                                              f"2^{params.scale_bits} for a 2-polynomial NTT ciphertext",
                                              "reject the sender: a wrong scale rescales every decrypted value"))
    return vector


def _scale_ok(scale: float, context: CkksContext, depth: int) -> bool:
    """The SEAL scale of a ciphertext ``depth`` products deep: ``2^s`` (TenSEAL resets it after each rescale),
    or ``2^(2s) / q`` after one product rescaled by SEAL (:mod:`~mpdp.crypto.ckks.dots`), ``q`` the prime that
    rescale dropped."""
    base = 2.0**context.params.scale_bits
    candidates = [base] + ([base / context.rescale_factors[depth - 1]] if depth >= 1 else [])
    return any(abs(scale - c) <= 1e-12 * c for c in candidates)
