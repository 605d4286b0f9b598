"""CKKS key material on TenSEAL: a private context (secret key) and the public context peers receive.

:meth:`CkksContext.generate` makes a private context for a named :class:`~mpdp.crypto.ckks.params.CkksParameters`
set, with relinearisation keys and the Galois (rotation) keys that summing the slots of a ciphertext needs.
:meth:`CkksContext.public` drops the secret key; only the public form has a ``to_wire()``, and a private context
serialises its secret key only through :meth:`CkksContext.to_private_bytes`.

Public contexts are large: the Galois keys dominate (about 18 MB for ``ckks-8192-d1``, 35 MB for
``ckks-8192-d2``); they are sent once per key, not per message. ``context_id`` is the SHA-256 of the
serialised public encryption key alone, which both sides compute identically and which every ciphertext
message names.

Randomness
----------
Key generation and encryption randomness come from SEAL's own CSPRNG (BLAKE2xb seeded from the operating
system), not from :class:`mpdp.randomness.RandomSource`: TenSEAL exposes no way to inject a source. CKKS keys
and ciphertexts are therefore not reproducible from a seed, which is the one exception to mpdp's rule of
injected randomness.
"""

from __future__ import annotations

import hashlib
from typing import Any

import tenseal as ts

from mpdp.crypto.ckks.params import CkksParameters
from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["CkksContext"]


def _public_key_id(ctx: Any) -> str:
    raw = ctx.serialize(save_public_key=True, save_secret_key=False, save_galois_keys=False, save_relin_keys=False)
    return hashlib.sha256(b"mpdp.ckks.context:" + raw).hexdigest()[:32]


def _modulus_bits(ctx: Any) -> tuple[int, tuple[int, ...]]:
    import tenseal.sealapi  # noqa: F401  (registers the SEAL types the introspection below returns)

    parms = ctx.seal_context().data.key_context_data().parms()
    return int(parms.poly_modulus_degree()), tuple(int(q.bit_count()) for q in parms.coeff_modulus())


def _rescale_factors(ctx: Any, scale_bits: int) -> tuple[float, ...]:
    """q / 2^scale for the prime each successive rescale drops (the last data prime first).

    TenSEAL keeps the scale at exactly 2^scale_bits after a rescale although it divided by a prime q != 2^scale,
    which leaves a relative error |q / 2^scale - 1| (~1e-7 for 40-bit primes) in every product, an error that
    grows linearly with the length of a dot product. Multiplying the plaintext operand by q / 2^scale
    beforehand cancels it (measured: 400x smaller dot-product error).
    """
    import tenseal.sealapi  # noqa: F401

    data_primes = [int(q.value()) for q in ctx.seal_context().data.first_context_data().parms().coeff_modulus()]
    return tuple(q / 2**scale_bits for q in reversed(data_primes[1:]))


class CkksContext:
    """TenSEAL CKKS context bound to a named parameter set. Private if it holds the secret key."""

    __slots__ = ("_ctx", "context_id", "params", "rescale_factors")

    def __init__(self, ctx: Any, params: CkksParameters) -> None:
        self._ctx = ctx
        self.params = params
        self.context_id = _public_key_id(ctx)
        #: rescale_factors[k]: the factor q / 2^scale to apply to a plaintext multiplied in at depth k.
        self.rescale_factors = _rescale_factors(ctx, params.scale_bits)

    @classmethod
    def generate(cls, params: CkksParameters, *, galois_keys: bool = True) -> CkksContext:
        """A fresh private context (secret, public, relinearisation and, by default, Galois keys)."""
        if not isinstance(params, CkksParameters):
            raise ParameterError(explain("params", params, "a CkksParameters", "use parameters_for_depth(depth)"))
        ctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=params.poly_modulus_degree,
                         coeff_mod_bit_sizes=list(params.coeff_mod_bit_sizes))
        ctx.global_scale = float(2**params.scale_bits)
        if galois_keys:
            ctx.generate_galois_keys()
        return cls(ctx, params)

    @property
    def is_private(self) -> bool:
        return bool(self._ctx.is_private())

    @property
    def has_galois_keys(self) -> bool:
        return bool(self._ctx.has_galois_keys())

    @property
    def tenseal(self) -> Any:
        """The underlying ``tenseal.Context`` (for this package's vector type)."""
        return self._ctx

    def public(self) -> CkksContext:
        """A copy without the secret key: what peers may hold."""
        ctx = self._ctx.copy()
        if ctx.is_private():
            ctx.make_context_public()
        return CkksContext(ctx, self.params)

    def require_private(self, what: str) -> None:
        if not self.is_private:
            raise ParameterError(explain(what, "a public context", "the private context holding the secret key",
                                         "decrypt on the party that generated the context"))

    def __repr__(self) -> str:
        kind = "private" if self.is_private else "public"
        return f"CkksContext({self.params.name}, {kind}, id={self.context_id[:12]}...)"

    # -- wire ----------------------------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """The *public* context (never the secret key), for the runtime codec."""
        data = self._ctx.serialize(save_public_key=True, save_secret_key=False, save_galois_keys=True,
                                   save_relin_keys=True)
        return {"type": "ckks.context", "version": 1, "params": self.params.to_wire(), "context": data}

    @classmethod
    def from_wire(cls, wire: Any, *, expected: CkksParameters | None = None) -> CkksContext:
        """A peer's public context, checked against its declared (and, if given, the expected) parameters."""
        if not isinstance(wire, dict) or set(wire) != {"type", "version", "params", "context"} or wire.get(
            "type"
        ) != "ckks.context" or wire.get("version") != 1 or not isinstance(wire.get("context"), bytes):
            raise MalformedMessageError(explain("ckks.context", type(wire).__name__, "a CkksContext.to_wire() dict",
                                                "send the context with CkksContext.to_wire()"))
        params = CkksParameters.from_wire(wire["params"])
        if expected is not None and params != expected:
            raise ParameterError(explain("CKKS parameter set", params.name, expected.name,
                                         "agree on the parameter set before exchanging keys"))
        ctx = cls._load(wire["context"], params)
        if ctx.has_secret_key():
            raise MalformedMessageError(explain("public context", "a context carrying a secret key",
                                                "public keys only", "send CkksContext.public().to_wire()"))
        return cls(ctx, params)

    def to_private_bytes(self) -> bytes:
        """The private context including its secret key. Secret: store it, never send it."""
        self.require_private("to_private_bytes")
        return bytes(self._ctx.serialize(save_public_key=True, save_secret_key=True, save_galois_keys=True,
                                         save_relin_keys=True))

    @classmethod
    def from_private_bytes(cls, data: bytes, params: CkksParameters) -> CkksContext:
        ctx = cls._load(data, params)
        if not ctx.has_secret_key():
            raise ParameterError(explain("data", "a public context", "a private context", "use from_wire"))
        return cls(ctx, params)

    @staticmethod
    def _load(data: bytes, params: CkksParameters) -> Any:
        try:
            ctx = ts.context_from(data)
        except (ValueError, RuntimeError) as exc:
            raise MalformedMessageError(explain("CKKS context", "bytes that do not parse", "a TenSEAL context",
                                                "the message is corrupted; ask for it again")) from exc
        n, bits = _modulus_bits(ctx)
        if (n, bits) != (params.poly_modulus_degree, params.coeff_mod_bit_sizes) or ctx.global_scale != float(
            2**params.scale_bits
        ):
            raise MalformedMessageError(
                explain("CKKS context", f"N = {n}, primes {bits}, scale {ctx.global_scale}",
                        f"the declared set {params.name}", "reject a context whose keys do not match its parameters")
            )
        return ctx
