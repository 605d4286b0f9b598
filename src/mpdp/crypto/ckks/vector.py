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

import math
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

__all__ = ["CkksVector", "wire_form"]


def _as_reals(values: Any, what: str, max_magnitude: float) -> npt.NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64).reshape(-1) if np.ndim(values) else np.asarray(
        [values], dtype=np.float64)
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
    """The message form of a vector: each chunk TenSEAL's serialised CKKS vector (read by
    :meth:`CkksVector.from_wire`)."""
    return {"type": "ckks.vector", "version": 1, "context_id": context.context_id, "params": context.params.name,
            "length": length, "depth_used": depth_used, "chunks": chunks}


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
        x = _as_reals(values, "values", context.params.max_magnitude)
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
        out = np.concatenate([np.asarray(c.decrypt(ctx.tenseal.secret_key()), dtype=np.float64)
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
        w = _as_reals(values, what, self.params.max_magnitude) * factor
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
        scalar = float(_as_reals(value, "scalar", self.params.max_magnitude)[0]) * self._rescale_factor()
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
        """Rebuild a received vector under ``context``, checking key, parameters, chunk count and levels."""
        fields = {"type", "version", "context_id", "params", "length", "depth_used", "chunks"}
        if not isinstance(wire, dict) or set(wire) != fields or wire["type"] != "ckks.vector" or wire[
            "version"
        ] != 1:
            raise MalformedMessageError(explain("ckks.vector", type(wire).__name__, f"a dict with {sorted(fields)}",
                                                "send it with CkksVector.to_wire()"))
        if wire["context_id"] != context.context_id:
            raise KeyMismatchError(explain("CkksVector context_id", wire["context_id"], context.context_id,
                                           "decode it with the context it was encrypted under"))
        params = context.params
        length, depth, chunks = wire["length"], wire["depth_used"], wire["chunks"]
        if wire["params"] != params.name or not isinstance(length, int) or isinstance(length, bool) or length < 1 or (
            not isinstance(depth, int) or not 0 <= depth <= params.depth) or not isinstance(chunks, list) or len(
            chunks
        ) != math.ceil(length / params.slots) or not all(isinstance(c, bytes) for c in chunks):
            raise MalformedMessageError(explain("ckks.vector", {k: wire[k] for k in ("params", "length", "depth_used")},
                                                "fields consistent with the context", "reject the sender"))
        levels = len(params.coeff_mod_bit_sizes) - 1 - depth  # primes left after `depth` rescales
        out = []
        for raw in chunks:
            try:
                vector = ts.ckks_vector_from(context.tenseal, raw)
            except (ValueError, RuntimeError) as exc:
                raise MalformedMessageError(explain("CKKS chunk", "bytes that do not parse", "a CKKS ciphertext",
                                                    "reject the sender")) from exc
            ciphertext = vector.ciphertext()
            sizes = (params.slots, 1) if length == 1 else (params.slots,)  # sum() and dot() results hold 1 value
            if vector.size() not in sizes or len(ciphertext) != 1 or ciphertext[0].coeff_modulus_size() != levels:
                raise TamperedCiphertextError(explain("CKKS chunk", f"size {vector.size()}", f"{params.slots} slots "
                                                      f"at level {levels}", "reject the sender"))
            out.append(vector)
        return cls(context, out, length, depth_used=depth)
