"""CKKS key material on TenSEAL: a private context (secret key) and the public context peers receive.

:meth:`CkksContext.generate` makes a private context for a named :class:`~mpdp.crypto.ckks.params.CkksParameters`
set, with relinearisation keys and the Galois (rotation) keys that summing the slots of a ciphertext needs.
:meth:`CkksContext.public` drops the secret key; ``to_wire()`` sends only public keys, and a private context
serialises its secret key only through :meth:`CkksContext.to_private_bytes`.

Public contexts are large: the Galois keys dominate (about 18 MB for ``ckks-8192-d1``, 35 MB for
``ckks-8192-d2``); they are sent once per key, not per message.

Context id
----------
``context_id`` is the SHA-256 of the parameter set and of the serialised public key material: the public
encryption key, the relinearisation keys, the Galois keys and the encryption parameters (TenSEAL's serialisation
of the context without its secret key). Every holder computes it from the material it holds; it never travels
in a context's wire form. The key owner fixes that serialisation once, at generation, and sends exactly those
bytes, and a receiver hashes exactly the bytes it loaded, so a context whose material differs in any byte
(Galois keys of another context, a changed prime) gets another id, and the key owner's
:meth:`CkksVector.from_wire <mpdp.crypto.ckks.CkksVector.from_wire>` refuses every result computed under it with
:class:`~mpdp.errors.KeyMismatchError`. (TenSEAL regenerates the relinearisation and Galois keys whenever a
private context is copied or reloaded, so a private context keeps the bytes it sent rather than re-serialising.)

A received context is also checked against the parameter set it declares: ring dimension, prime sizes, scale,
a public key and relinearisation keys present, TenSEAL's automatic relinearisation, rescaling and modulus
switching on, and no secret key. The id binds the material; it does not prove that the Galois keys belong to
the public key (only the secret key could): keys of another context are detected when the results computed with
them reach the key owner.

Randomness
----------
Key generation and encryption randomness come from SEAL's own CSPRNG (BLAKE2xb seeded from the operating
system), not from :class:`mpdp.randomness.RandomSource`: TenSEAL exposes no way to inject a source. CKKS keys
and ciphertexts are therefore not reproducible from a seed, which is the one exception to mpdp's rule of
injected randomness.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Any

import numpy as np
import tenseal as ts

from mpdp.crypto.ckks.params import CkksParameters
from mpdp.errors import KeyMismatchError, MalformedMessageError, ParameterError, explain

__all__ = ["CkksContext"]

_ID_DOMAIN = b"mpdp.ckks.context/v2\x00"
_PRIVATE_MAGIC = b"mpdp.ckks.private/v1\x00"
_LENGTH = struct.Struct("<Q")


def _public_material(ctx: Any) -> bytes:
    """TenSEAL's serialisation of every public part of ``ctx``: parameters, public, relinearisation and Galois
    keys (deterministic for one in-memory context)."""
    return bytes(ctx.serialize(save_public_key=True, save_secret_key=False, save_galois_keys=True,
                               save_relin_keys=True))


def _context_id(params: CkksParameters, material: bytes) -> str:
    digest = hashlib.sha256(_ID_DOMAIN)
    digest.update(repr(sorted(params.to_wire().items())).encode())
    digest.update(_LENGTH.pack(len(material)))
    digest.update(material)
    return digest.hexdigest()


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
    """TenSEAL CKKS context bound to a named parameter set. Private if it holds the secret key.

    ``context_id`` identifies the public key material (see the module docstring); two contexts share it only if
    they hold the same public, relinearisation and Galois keys under the same parameters.
    """

    __slots__ = ("_ctx", "_material", "_secret", "context_id", "params", "rescale_factors")

    def __init__(self, ctx: Any, params: CkksParameters) -> None:
        """Wrap a TenSEAL CKKS context; its id is computed from its public material (one serialisation)."""
        if not isinstance(params, CkksParameters):
            raise ParameterError(explain("params", params, "a CkksParameters", "use parameters_for_depth(depth)"))
        self._bind(ctx, params, _public_material(ctx), ctx if ctx.is_private() else None)

    def _bind(self, ctx: Any, params: CkksParameters, material: bytes, secret: Any) -> None:
        """``ctx``: the TenSEAL context holding ``material``; ``secret``: one holding the secret key, or None."""
        self._ctx = ctx
        self._material = material
        self._secret = secret
        self.params = params
        self.context_id = _context_id(params, material)
        #: rescale_factors[k]: the factor q / 2^scale to apply to a plaintext multiplied in at depth k.
        self.rescale_factors = _rescale_factors(ctx, params.scale_bits)

    @classmethod
    def _of(cls, ctx: Any, params: CkksParameters, material: bytes, secret: Any) -> CkksContext:
        out = cls.__new__(cls)
        out._bind(ctx, params, material, secret)
        return out

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
        return self._secret is not None

    @property
    def has_galois_keys(self) -> bool:
        return bool(self._ctx.has_galois_keys())

    @property
    def tenseal(self) -> Any:
        """The underlying ``tenseal.Context`` holding the public material (for this package's vector type)."""
        return self._ctx

    @property
    def secret_key(self) -> Any:
        """TenSEAL's secret key (private contexts only): secret, for decryption on this party."""
        self.require_private("secret_key")
        return self._secret.secret_key()

    def public(self) -> CkksContext:
        """A context without the secret key, holding exactly the public material this one sends: what peers
        may hold (same ``context_id``)."""
        if not self.is_private:
            return self
        return CkksContext._of(ts.context_from(self._material), self.params, self._material, None)

    def require_private(self, what: str) -> None:
        if not self.is_private:
            raise ParameterError(explain(what, "a public context", "the private context holding the secret key",
                                         "decrypt on the party that generated the context"))

    def __repr__(self) -> str:
        kind = "private" if self.is_private else "public"
        return f"CkksContext({self.params.name}, {kind}, id={self.context_id[:12]}...)"

    # -- wire ----------------------------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """The *public* context (never the secret key), for the runtime codec: the bytes ``context_id`` hashes."""
        return {"type": "ckks.context", "version": 2, "params": self.params.to_wire(), "context": self._material}

    @classmethod
    def from_wire(cls, wire: Any, *, expected: CkksParameters | None = None) -> CkksContext:
        """A peer's public context, checked against its declared (and, if given, the expected) parameters; its
        ``context_id`` is computed here from the bytes received."""
        if not isinstance(wire, dict) or set(wire) != {"type", "version", "params", "context"} or wire.get(
            "type"
        ) != "ckks.context" or wire.get("version") != 2 or not isinstance(wire.get("context"), bytes):
            raise MalformedMessageError(explain("ckks.context", type(wire).__name__, "a CkksContext.to_wire() dict",
                                                "send the context with CkksContext.to_wire()"))
        params = CkksParameters.from_wire(wire["params"])
        if expected is not None and params != expected:
            raise ParameterError(explain("CKKS parameter set", params.name, expected.name,
                                         "agree on the parameter set before exchanging keys"))
        material = wire["context"]
        ctx = cls._load(material, params)
        if ctx.has_secret_key():
            raise MalformedMessageError(explain("public context", "a context carrying a secret key",
                                                "public keys only", "send CkksContext.public().to_wire()"))
        _require_public_parts(ctx)
        return cls._of(ctx, params, material, None)

    def to_private_bytes(self) -> bytes:
        """The private context: its public material (as sent) and its secret key, with a SHA-256 over both.
        Secret: store it, never send it."""
        self.require_private("to_private_bytes")
        key = bytes(self._secret.serialize(save_public_key=False, save_secret_key=True, save_galois_keys=False,
                                     save_relin_keys=False))
        body = _LENGTH.pack(len(self._material)) + self._material + key
        return _PRIVATE_MAGIC + hashlib.sha256(body).digest() + body

    @classmethod
    def from_private_bytes(cls, data: bytes, params: CkksParameters) -> CkksContext:
        """A private context stored with :meth:`to_private_bytes`, checked: digest, parameters, and that its
        secret key decrypts what its public key encrypts (:class:`~mpdp.errors.KeyMismatchError` if not)."""
        if not isinstance(params, CkksParameters):
            raise ParameterError(explain("params", params, "a CkksParameters", "pass the set the keys were made for"))
        if not isinstance(data, bytes) or not data.startswith(_PRIVATE_MAGIC):
            raise ParameterError(explain("data", "not bytes of CkksContext.to_private_bytes()",
                                         "a stored private context", "a public context is read with: use from_wire"))
        head = len(_PRIVATE_MAGIC)
        digest, body = data[head: head + 32], data[head + 32:]
        if len(body) < _LENGTH.size or not hmac.compare_digest(digest, hashlib.sha256(body).digest()):
            raise MalformedMessageError(explain("private CKKS context", "bytes failing their SHA-256",
                                                "the bytes to_private_bytes() wrote", "restore the key file"))
        (size,) = _LENGTH.unpack_from(body)
        material, key = body[_LENGTH.size: _LENGTH.size + size], body[_LENGTH.size + size:]
        public = cls._load(material, params)
        _require_public_parts(public)
        secret = cls._load(key, params)
        if public.has_secret_key() or not secret.has_secret_key():
            raise MalformedMessageError(explain("private CKKS context", "misplaced keys", "public material and "
                                                "a secret key", "restore the key file"))
        out = cls._of(public, params, material, secret)
        probe = np.linspace(-0.5, 0.5, 8)
        seen = np.asarray(ts.ckks_vector(public, probe.tolist()).decrypt(secret.secret_key()), dtype=np.float64)
        if not np.all(np.abs(seen - probe) <= 1e-3):
            raise KeyMismatchError(explain("private CKKS context", "a secret key of another public key",
                                           "the pair generated together", "restore the key file"))
        return out

    @staticmethod
    def _load(data: bytes, params: CkksParameters) -> Any:
        try:
            ctx = ts.context_from(data)
        except (ValueError, RuntimeError, TypeError) as exc:
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


def _require_public_parts(ctx: Any) -> None:
    """A usable public context: public and relinearisation keys, and TenSEAL's automatic relinearisation,
    rescaling and modulus switching on (the levels :class:`~mpdp.crypto.ckks.CkksVector` tracks assume them)."""
    flags = {"public key": ctx.has_public_key(), "relinearisation keys": ctx.has_relin_keys(),
             "auto_relin": ctx.auto_relin, "auto_rescale": ctx.auto_rescale, "auto_mod_switch": ctx.auto_mod_switch}
    missing = [name for name, present in flags.items() if not present]
    if missing:
        raise MalformedMessageError(explain("CKKS context", f"without {', '.join(missing)}",
                                            "a context made by CkksContext.generate", "reject the sender"))
