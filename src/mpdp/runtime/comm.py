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
from mpdp.runtime.codec import DEFAULT_LIMITS, CodecLimits, decode_envelope, encode_envelope
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
        if not timeout > 0:
            raise ParameterError(explain("timeout", timeout, "a number of seconds > 0", "pass e.g. timeout=60"))
        self._endpoint = endpoint
        self.name = endpoint.name
        self.rng = rng
        self.timeout = float(timeout)
        self.limits = limits
        self.traffic = PartyTraffic()
        self._send_seq: dict[str, int] = {}
        self._recv_seq: dict[str, int] = {}

    # -- identity -----------------------------------------------------------------------------------------
    @property
    def peers(self) -> tuple[str, ...]:
        """Every other party, in canonical order."""
        return tuple(p for p in self.parties if p != self.name)

    @property
    def index(self) -> int:
        """This party's position in the canonical order."""
        return self.parties.index(self.name)

    # -- point to point -------------------------------------------------------------------------------------
    def send(self, dst: str, body: Any, *, label: str = "") -> None:
        """Send ``body`` (plain data, numpy arrays, big ints, ``to_wire()`` objects) to ``dst``."""
        if dst not in self.parties or dst == self.name:
            raise ParameterError(explain("dst", dst, f"a peer of {self.name}: {self.peers}", "send to a peer"))
        seq = self._send_seq.get(dst, 0)
        traffic = self.traffic
        data = encode_envelope(seq, traffic.rounds + 1, label, body)  # encode({"seq", "round", "label", "body"})
        self._endpoint.send(dst, data)
        self._send_seq[dst] = seq + 1
        size = len(data)
        traffic.bytes_sent += size
        traffic.messages_sent += 1
        traffic.sent_to[dst] = traffic.sent_to.get(dst, 0) + size

    def recv(self, src: str, *, label: str = "", timeout: float | None = None) -> Any:
        """The next message from ``src``; it must carry ``label``.

        ``timeout`` (seconds, default the Comm's) bounds this receive only: a dropout-tolerant protocol
        waits for a phase deadline and treats a party that misses it as dropped.
        """
        if src not in self.parties or src == self.name:
            raise ParameterError(explain("src", src, f"a peer of {self.name}: {self.peers}", "receive from a peer"))
        wait = self.timeout if timeout is None else max(float(timeout), 1e-3)
        data = self._endpoint.recv(src, wait)
        envelope = decode_envelope(data, limits=self.limits)  # decode(data), read as (seq, round, label, body)
        if envelope is None:
            raise MalformedMessageError(
                explain(f"envelope from {src}", "a message of another shape", "a mpdp message envelope",
                        f"{src} is not running a compatible mpdp protocol")
            )
        seq, stamp, got_label, body = envelope
        expected = self._recv_seq.get(src, 0)
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
        self._recv_seq[src] = expected + 1
        traffic = self.traffic
        if stamp > traffic.rounds:
            traffic.rounds = stamp
        traffic.bytes_received += len(data)
        traffic.messages_received += 1
        return body

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
