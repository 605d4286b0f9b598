"""A party's handle on the network: typed messages with sequence numbers, labels, counters and rounds.

Every message travels as ``encode({"seq", "round", "label", "body"})`` (written and read by the codec's
``encode_envelope``/``decode_envelope``: the same bytes, fewer Python operations per message):

* ``seq`` counts messages per (sender, receiver) pair from 0. A receiver that sees any other number than
  the one it expects has been sent a replayed, dropped or reordered message and aborts the protocol with
  :class:`~mpdp.errors.ProtocolAbortError` naming the sender.
* ``label`` names the protocol step. ``recv(src, label="open")`` refuses a message sent for another step,
  which turns a desynchronised protocol into an immediate, readable error.
* ``round`` is a logical clock: a send is stamped ``clock + 1``; a receive advances the clock to at least
  the stamp. The largest clock any party reaches is the protocol's number of communication rounds (the
  longest chain of messages each of which had to wait for the previous), which is independent of thread
  scheduling and identical in memory and over the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mpdp.errors import MalformedMessageError, ParameterError, ProtocolAbortError, explain
from mpdp.randomness import RandomSource
from mpdp.runtime.codec import (
    DEFAULT_LIMITS,
    CodecLimits,
    decode_envelope,
    encode_envelope,
    encode_opening,
    read_opening,
)
from mpdp.runtime.transport import Endpoint

__all__ = ["Comm", "PartyTraffic"]

@dataclass
class PartyTraffic:
    """What one party sent and received."""

    bytes_sent: int = 0
    bytes_received: int = 0
    messages_sent: int = 0
    messages_received: int = 0
    rounds: int = 0
    sent_to: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "messages_sent": self.messages_sent,
            "messages_received": self.messages_received,
            "rounds": self.rounds,
        }


class Comm:
    """One party's messaging interface: the only way a party's code talks to other parties.

    Parameters
    ----------
    endpoint:
        The party's attachment to a transport; ``endpoint.name`` is the party's name.
    parties:
        Every party's name, in the protocol's canonical order (the same on every party).
    rng:
        This party's own random source.
    timeout:
        Seconds a receive waits before :class:`~mpdp.errors.PartyUnavailableError`.
    limits:
        Decoding limits for incoming messages.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        parties: Iterable[str],
        *,
        rng: RandomSource,
        timeout: float = 120.0,
        limits: CodecLimits = DEFAULT_LIMITS,
    ) -> None:
        self.parties = tuple(parties)
        if endpoint.name not in self.parties:
            raise ParameterError(
                explain("endpoint.name", endpoint.name, f"one of {self.parties}", "list every party in `parties`")
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ParameterError(explain("timeout", timeout, "a number of seconds > 0", "pass e.g. timeout=60"))
        self._endpoint = endpoint
        self.name = endpoint.name
        self.rng = rng
        self.timeout = float(timeout)
        self.limits = limits
        self.traffic = PartyTraffic()
        # the next sequence number to and from each peer (a name not here is not a peer)
        self._send_seq: dict[str, int] = {p: 0 for p in self.parties if p != self.name}
        self._recv_seq: dict[str, int] = dict(self._send_seq)
        self._send_bytes = endpoint.send  # bound once: one attribute lookup less per message
        self._recv_bytes = endpoint.recv

    # -- identity -----------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> Endpoint:
        """The party's attachment to its transport (a later protocol run of the same party reuses it)."""
        return self._endpoint

    @property
    def peers(self) -> tuple[str, ...]:
        """Every other party, in canonical order."""
        return tuple(p for p in self.parties if p != self.name)

    @property
    def index(self) -> int:
        """This party's position in the canonical order."""
        return self.parties.index(self.name)

    # -- point to point -------------------------------------------------------------------------------------
    # Every message goes through send()/recv() (a DPVI step: ~40 each way per party), so they are written for few
    # Python operations: the sequence numbers of the peers (only) are pre-set, so one dict lookup both finds the
    # next number and validates the peer name.
    def send(self, dst: str, body: Any, *, label: str = "") -> None:
        """Send ``body`` (plain data, numpy arrays, big ints, ``to_wire()`` objects) to ``dst``."""
        seq = self._next_seq(self._send_seq, "dst", dst)
        data = encode_envelope(seq, self.traffic.rounds + 1, label, body)  # encode({"seq", "round", "label", "body"})
        self._deliver(dst, seq, data)

    def send_opening(self, dst: str, sharing_id: bytes, values: list[Any], *, label: str = "") -> None:
        """``send(dst, {"id": sharing_id, "v": values}, label=label)``, the message of an MPC opening: the same
        bytes, written in one pass (see :meth:`recv_opening`)."""
        seq = self._next_seq(self._send_seq, "dst", dst)
        self._deliver(dst, seq, encode_opening(seq, self.traffic.rounds + 1, label, sharing_id, values))

    def _next_seq(self, table: dict[str, int], role: str, name: Any) -> int:
        """The next sequence number to or from peer ``name`` (``role`` "dst" or "src"); refuses a non-peer."""
        try:
            seq = table.get(name)
        except TypeError:  # unhashable: not a name
            seq = None
        if seq is None:
            raise self._not_a_peer(role, name, "send to a peer" if role == "dst" else "receive from a peer")
        return seq

    def _deliver(self, dst: str, seq: int, data: bytes) -> None:
        """Hand ``data`` (message ``seq`` to ``dst``) to the transport and count it."""
        self._send_bytes(dst, data)
        self._send_seq[dst] = seq + 1
        size = len(data)
        traffic = self.traffic
        traffic.bytes_sent += size
        traffic.messages_sent += 1
        sent_to = traffic.sent_to
        sent_to[dst] = sent_to.get(dst, 0) + size

    def recv(self, src: str, *, label: str = "", timeout: float | None = None) -> Any:
        """The next message from ``src``; it must carry ``label``.

        ``timeout`` (seconds, default the Comm's) bounds this receive only: a dropout-tolerant protocol
        waits for a phase deadline and treats a party that misses it as dropped.
        """
        expected = self._next_seq(self._recv_seq, "src", src)
        data = self._recv_bytes(src, self.timeout if timeout is None else max(float(timeout), 1e-3))
        return self._accept(src, label, expected, data)

    def recv_opening(self, src: str, sharing_id: bytes, count: int, *, label: str = "") -> tuple[list[Any] | None, Any]:
        """The next message from ``src``, expected to be an MPC opening ``{"id": sharing_id, "v": [count
        arrays]}`` for step ``label``: ``(arrays, None)`` when it is exactly that (read in one pass), else
        ``(None, body)`` with the body :meth:`recv` returns (which the caller checks and rejects).

        Either way the message passed :meth:`recv`'s checks (sequence number, label, round stamp; a
        message that fails them raises the same error) and was counted.
        """
        expected = self._next_seq(self._recv_seq, "src", src)
        data = self._recv_bytes(src, self.timeout)
        opened = read_opening(data, expected, label, sharing_id, count, self.limits)
        if opened is None:
            return None, self._accept(src, label, expected, data)
        stamp, values = opened
        self._received(src, expected, stamp, data)
        return values, None

    def _accept(self, src: str, label: str, expected: int, data: bytes) -> Any:
        """The body of ``data``, the next message from ``src``, after the envelope's checks; counts it."""
        envelope = decode_envelope(data, limits=self.limits)  # decode(data), read as (seq, round, label, body)
        if envelope is None:
            raise MalformedMessageError(
                explain(f"envelope from {src}", "a message of another shape", "a mpdp message envelope",
                        f"{src} is not running a compatible mpdp protocol")
            )
        seq, stamp, got_label, body = envelope
        if seq != expected:
            raise ProtocolAbortError(
                f"{self.name} got message #{seq!r} from {src}, expected #{expected}: a replayed, dropped or "
                f"reordered message. The protocol is aborted; restart it with fresh randomness"
            )
        if got_label != label:
            raise ProtocolAbortError(
                f"{self.name} expected step {label!r} from {src} but got {got_label!r}: the parties are running "
                "different protocol steps (mismatched code or configuration)"
            )
        if not isinstance(stamp, int) or stamp < 1:
            raise MalformedMessageError(explain(f"round stamp from {src}", stamp, "an int >= 1", "reject it"))
        self._received(src, expected, stamp, data)
        return body

    def _received(self, src: str, seq: int, stamp: int, data: bytes) -> None:
        """Count ``data``, the accepted message ``seq`` from ``src`` stamped with round ``stamp``."""
        self._recv_seq[src] = seq + 1
        traffic = self.traffic
        if stamp > traffic.rounds:
            traffic.rounds = stamp
        traffic.bytes_received += len(data)
        traffic.messages_received += 1

    def _not_a_peer(self, what: str, name: Any, fix: str) -> ParameterError:
        return ParameterError(explain(what, name, f"a peer of {self.name}: {self.peers}", fix))

    # -- collective helpers ------------------------------------------------------------------------------
    def exchange(self, peer: str, body: Any, *, label: str = "") -> Any:
        """Send ``body`` to ``peer`` and receive its message for the same step (one round)."""
        self.send(peer, body, label=label)
        return self.recv(peer, label=label)

    def broadcast(self, body: Any, *, label: str = "", to: Iterable[str] | None = None) -> None:
        """Send the same ``body`` to every peer (or to ``to``)."""
        for dst in self.peers if to is None else tuple(to):
            self.send(dst, body, label=label)

    def gather(self, sources: Iterable[str] | None = None, *, label: str = "") -> dict[str, Any]:
        """One message from each of ``sources`` (default: every peer), keyed by sender."""
        return {src: self.recv(src, label=label) for src in (self.peers if sources is None else tuple(sources))}

    def all_gather(self, body: Any, *, label: str = "") -> dict[str, Any]:
        """Everyone sends ``body`` to everyone; returns every party's body, this party's included."""
        self.broadcast(body, label=label)
        received = self.gather(label=label)
        received[self.name] = body
        return {p: received[p] for p in self.parties}

    def scatter(self, bodies: Mapping[str, Any], *, label: str = "") -> None:
        """Send a different body to each named peer."""
        for dst, body in bodies.items():
            self.send(dst, body, label=label)

    def close(self) -> None:
        self._endpoint.close()
