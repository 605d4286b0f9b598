"""One protocol step of a party, run against a batch of relayed messages: how mpdp roles ride on Flower rounds.

Flower delivers messages in rounds through a hub (the ServerApp): a node receives one message, computes and
replies once. :func:`relay_comm` gives a party a real :class:`~mpdp.runtime.comm.Comm` for one such step: its
inbox is the batch the hub forwarded (mpdp codec bytes, envelopes, sequence numbers and labels checked as on
any transport), and everything it sends is captured for the hub to forward in the next round. The protocol
code (:mod:`mpdp.protocols.aggregation`) runs unchanged; a receive with nothing in the batch from that party
fails at once with :class:`~mpdp.errors.PartyUnavailableError`, which the aggregation protocol treats as a
dropout.

Messages to an aggregator pass through the hub sealed to that aggregator (:func:`seal`: X25519 key agreement
with a fresh ephemeral key, HKDF-SHA256, AES-256-GCM, the round's context bound as associated data), so the hub
relays shares it cannot read or alter undetected.

Security
--------
Semi-honest hub: it relays and may drop messages (a dropout), but hands the clients the aggregators' genuine
public keys (they come from the run configuration the operator publishes). A sealed box opened with the
wrong key, or under another round's context, raises :class:`~mpdp.errors.TamperedCiphertextError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mpdp.errors import MalformedMessageError, PartyUnavailableError, TamperedCiphertextError, explain
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.transport import Endpoint

__all__ = ["KEY_BYTES", "RelayEndpoint", "keypair", "open_sealed", "public_key_of", "relay_comm", "seal"]

KEY_BYTES = 32
_NONCE = bytes(12)  # each box uses a fresh key (fresh ephemeral X25519 key), so a constant nonce is safe
_RAW = serialization.Encoding.Raw


class RelayEndpoint(Endpoint):
    """An endpoint whose inbox is a fixed batch of messages and whose sends are captured in :attr:`outbox`."""

    def __init__(self, name: str, inbox: Mapping[str, Sequence[bytes]]) -> None:
        self.name = name
        self._inbox = {src: deque(bytes(m) for m in batch) for src, batch in inbox.items()}
        self.outbox: dict[str, list[bytes]] = {}

    def send(self, dst: str, data: bytes) -> None:
        self.outbox.setdefault(dst, []).append(bytes(data))

    def recv(self, src: str, timeout: float) -> bytes:
        queue = self._inbox.get(src)
        if not queue:
            raise PartyUnavailableError(f"{self.name}: no message from {src} reached this round (it dropped out, "
                                        "or its reply missed the round's deadline)")
        return queue.popleft()


def relay_comm(name: str, parties: Iterable[str], inbox: Mapping[str, Sequence[bytes]], *,
               rng: RandomSource) -> tuple[Comm, RelayEndpoint]:
    """A :class:`Comm` for party ``name`` over one relayed batch, and its endpoint (read ``outbox`` after)."""
    endpoint = RelayEndpoint(name, inbox)
    return Comm(endpoint, parties, rng=rng, timeout=1.0), endpoint


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
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mpdp.flower.seal:" + context)
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
            "a sealed share failed authentication: altered in transit, sealed to another aggregator's key or "
            "for another round; the round cannot use it") from exc
