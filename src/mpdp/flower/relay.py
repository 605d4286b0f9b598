"""One protocol step of a party, run against a batch of relayed messages: how mpdp roles ride on Flower rounds.

Flower delivers messages in rounds through a hub (the ServerApp): a node receives one message, computes and
replies once. :func:`relay_comm` gives a party a real :class:`~mpdp.runtime.comm.Comm` for one such step: its
inbox is the batch the hub forwarded (mpdp codec bytes, envelopes, sequence numbers and labels checked as on
any transport), and everything it sends is captured for the hub to forward in the next round. The protocol
code (:mod:`mpdp.protocols.aggregation`) runs unchanged; a receive with nothing in the batch from that party
fails at once with :class:`~mpdp.errors.PartyUnavailableError`, which the aggregation protocol treats as a
dropout.

Messages to an aggregator pass through the hub sealed to that aggregator (:func:`mpdp.crypto.sealed_box.seal`),
so the hub relays shares it cannot read or alter undetected.

Security
--------
Semi-honest hub: it relays and may drop messages (a dropout), but hands the clients the aggregators' genuine
public keys (they come from the run configuration the operator publishes). A sealed box opened with the
wrong key, or under another round's context, raises :class:`~mpdp.errors.TamperedCiphertextError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from mpdp.errors import PartyUnavailableError
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.transport import Endpoint

__all__ = ["RelayEndpoint", "relay_comm"]


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
