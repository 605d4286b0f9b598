"""Sealed boxes: a message encrypted to the holder of an X25519 public key, bound to a context.

:func:`seal` draws a fresh ephemeral X25519 key, agrees a secret with the recipient's public key, derives an
AES-256-GCM key with HKDF-SHA256 (the context in its info) and encrypts with the context as associated data; the
box is the ephemeral public key followed by the ciphertext and tag. :func:`open_sealed` reverses it.

Security
--------
Confidentiality and integrity towards anyone without the recipient's private key (IND-CCA2 under the gap
Diffie-Hellman assumption on X25519, with AES-GCM and HKDF as a random-oracle-like KDF). The sender is anonymous:
the box does not authenticate who sealed it. Each box uses a fresh key, so the constant nonce is never reused
under one key. Opening with the wrong key, under another context, or a box altered by a single bit raises
:class:`~mpdp.errors.TamperedCiphertextError`; a box or key of the wrong length a
:class:`~mpdp.errors.MalformedMessageError`.

References
----------
RFC 7748 (X25519), RFC 5869 (HKDF), NIST SP 800-38D (GCM); the construction follows libsodium's sealed boxes
and HPKE's base mode (RFC 9180) in spirit.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mpdp.errors import MalformedMessageError, TamperedCiphertextError, explain
from mpdp.randomness import RandomSource

__all__ = ["KEY_BYTES", "keypair", "open_sealed", "public_key_of", "seal"]

KEY_BYTES = 32
_NONCE = bytes(12)  # each box uses a fresh key (fresh ephemeral X25519 key), so a constant nonce is safe
_RAW = serialization.Encoding.Raw


def keypair(rng: RandomSource) -> tuple[bytes, bytes]:
    """A fresh X25519 key pair ``(private, public)`` (raw 32-byte encodings) drawn from ``rng``."""
    private = X25519PrivateKey.from_private_bytes(rng.bytes(KEY_BYTES))
    return private.private_bytes_raw(), private.public_key().public_bytes(_RAW, serialization.PublicFormat.Raw)


def public_key_of(private: bytes) -> bytes:
    """The raw public key of a raw X25519 private key."""
    return X25519PrivateKey.from_private_bytes(_check_key(private, "private key")).public_key().public_bytes(
        _RAW, serialization.PublicFormat.Raw)


def _check_key(key: bytes, what: str) -> bytes:
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        raise MalformedMessageError(explain(what, f"{len(key) if isinstance(key, bytes) else type(key).__name__}",
                                            f"{KEY_BYTES} raw bytes (X25519)", "pass the aggregator's raw key"))
    return key


def _box_key(shared: bytes, context: bytes) -> AESGCM:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mpdp.sealed-box:" + context)
    return AESGCM(derived.derive(shared))


def seal(public_key: bytes, plaintext: bytes, context: bytes, *, rng: RandomSource) -> bytes:
    """``plaintext`` encrypted to the holder of ``public_key``, bound to ``context`` (e.g. run, round, names)."""
    ephemeral = X25519PrivateKey.from_private_bytes(rng.bytes(KEY_BYTES))
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(_check_key(public_key, "public key")))
    header = ephemeral.public_key().public_bytes(_RAW, serialization.PublicFormat.Raw)
    return header + _box_key(shared, context).encrypt(_NONCE, plaintext, context)


def open_sealed(private_key: bytes, box: bytes, context: bytes) -> bytes:
    """The plaintext of a :func:`seal` box; a wrong key, context or altered byte raises a typed error."""
    if not isinstance(box, bytes) or len(box) < KEY_BYTES + 16:
        raise MalformedMessageError(explain("sealed box", len(box) if isinstance(box, bytes) else type(box).__name__,
                                            f"at least {KEY_BYTES + 16} bytes", "relay the box unchanged"))
    private = X25519PrivateKey.from_private_bytes(_check_key(private_key, "private key"))
    shared = private.exchange(X25519PublicKey.from_public_bytes(box[:KEY_BYTES]))
    try:
        return _box_key(shared, context).decrypt(_NONCE, box[KEY_BYTES:], context)
    except InvalidTag as exc:
        raise TamperedCiphertextError(
            "a sealed box failed authentication: altered in transit, sealed to another key or under another "
            "context (e.g. another round); it cannot be used") from exc
