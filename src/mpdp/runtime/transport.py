"""Transports move opaque byte strings between named parties.

A protocol never touches a transport directly: it talks through its :class:`~mpdp.runtime.comm.Comm`,
which encodes, stamps and counts messages. A transport only has to deliver bytes from one named party to
another, in order per (sender, receiver) pair, and to give up with a typed error instead of hanging:

* :class:`InMemoryTransport` (the default) connects parties that run as threads of one process. Because
  every receive names its sender and each pair's queue is FIFO, a protocol's results and traffic counts do
  not depend on how the threads interleave.
* The network transport (``mpdp.runtime.grpc_transport``, extra ``net``) implements the same
  :class:`Endpoint` for a party in its own process, so protocol code runs unchanged.
"""

from __future__ import annotations

import abc
import functools
import threading
import time
from collections import deque
from collections.abc import Iterable

from mpdp.errors import ParameterError, PartyUnavailableError, ProtocolAbortError, explain

__all__ = ["Endpoint", "InMemoryTransport", "Transport"]


class Endpoint(abc.ABC):
    """One party's attachment to a transport."""

    name: str

    @abc.abstractmethod
    def send(self, dst: str, data: bytes) -> None:
        """Queue ``data`` for party ``dst``; returns without waiting for delivery."""

    @abc.abstractmethod
    def recv(self, src: str, timeout: float) -> bytes:
        """The next message from ``src``; raises PartyUnavailableError after ``timeout`` seconds."""

    def close(self) -> None:  # noqa: B027 - optional hook, most endpoints hold nothing
        """Release resources held for this party."""


class Transport(abc.ABC):
    """Connects a fixed set of named parties."""

    parties: tuple[str, ...]

    @abc.abstractmethod
    def endpoint(self, name: str) -> Endpoint:
        """The endpoint of party ``name``."""

    def abort(self, reason: str) -> None:  # noqa: B027 - transports without shared state ignore aborts
        """Make every pending and future receive fail with ``reason`` (a party has failed)."""

    def party_finished(self, name: str) -> None:  # noqa: B027
        """Party ``name`` will send and receive nothing more."""


def _check_names(parties: Iterable[str]) -> tuple[str, ...]:
    names = tuple(parties)
    if len(names) < 1 or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise ParameterError(
            explain("parties", names, "distinct non-empty party names", "pass e.g. ('alice', 'bob')")
        )
    return names


class InMemoryTransport(Transport):
    """Parties as threads of one process, exchanging bytes through per-pair FIFO queues.

    Besides timeouts it detects deadlock: when every party still running is blocked in a receive that no
    queued message can satisfy, all of them fail at once with :class:`~mpdp.errors.ProtocolAbortError`
    instead of waiting for the timeout.
    """

    def __init__(self, parties: Iterable[str]) -> None:
        self.parties = _check_names(parties)
        self._queues: dict[tuple[str, str], deque[bytes]] = {
            (a, b): deque() for a in self.parties for b in self.parties if a != b
        }
        # One lock guards the waiting/finished/abort state. A receiver with nothing to read blocks on its own
        # wake-up lock, held while it sleeps and released by a send from the party it waits for (a send wakes
        # only that receiver), by an abort or by a party finishing: a C-level lock where a Condition would
        # build and notify a Python-level waiter list on every message.
        self._lock = threading.Lock()
        self._wake = {name: threading.Lock() for name in self.parties}
        for wake in self._wake.values():
            wake.acquire()
        self._waiting: dict[str, str] = {}  # receiver -> sender it waits for
        self._finished: set[str] = set()
        self._abort_reason: str | None = None

    def endpoint(self, name: str) -> Endpoint:
        if name not in self.parties:
            raise ParameterError(explain("party", name, f"one of {self.parties}", "use a configured party name"))
        return _MemoryEndpoint(self, name)

    def abort(self, reason: str) -> None:
        with self._lock:
            if self._abort_reason is None:
                self._abort_reason = reason
            self._wake_all()

    def party_finished(self, name: str) -> None:
        with self._lock:
            self._finished.add(name)
            self._check_deadlock()
            self._wake_all()

    # Called with the lock held. A receiver woken for nothing (it was not waiting) returns from its next wait at
    # once, finds nothing and waits again.
    def _wake_all(self) -> None:
        for wake in self._wake.values():
            if wake.locked():
                wake.release()

    # Called with the lock held.
    def _check_deadlock(self) -> None:
        running = len(self.parties) - len(self._finished)  # every receiver waiting is running
        if not running or len(self._waiting) < running:
            return
        # A receiver waiting for a party that has finished is about to fail with its own, clearer error (or,
        # in a dropout-tolerant protocol, to count that party as dropped): that is not a deadlock.
        if all(not self._queues[(src, dst)] and src not in self._finished for dst, src in self._waiting.items()):
            waits = ", ".join(f"{dst} waits for {src}" for dst, src in sorted(self._waiting.items()))
            if self._abort_reason is None:
                self._abort_reason = f"deadlock: every running party is waiting ({waits})"
                self._wake_all()

    def _send(self, src: str, dst: str, data: bytes) -> None:
        queue = self._queues.get((src, dst))
        if queue is None:
            raise ParameterError(
                explain("destination", dst, f"another party of {self.parties}", "send to a peer by its name")
            )
        with self._lock:
            if self._abort_reason is not None:
                raise ProtocolAbortError(f"{src} cannot send to {dst}: protocol aborted ({self._abort_reason})")
            queue.append(data)
            if self._waiting.get(dst) == src:
                wake = self._wake[dst]
                if wake.locked():
                    wake.release()

    def _recv(self, dst: str, src: str, timeout: float) -> bytes:
        queue = self._queues.get((src, dst))
        if queue is None:
            raise ParameterError(
                explain("source", src, f"another party of {self.parties}", "receive from a peer by its name")
            )
        if queue:  # what is queued is the receiver's to take, without the lock (deque.popleft is atomic)
            try:
                return queue.popleft()
            except IndexError:  # another thread of this party took it: wait below
                pass
        deadline = time.monotonic() + timeout
        wake = self._wake[dst]
        lock = self._lock
        lock.acquire()
        try:
            while True:  # the lock is held at the top of each pass
                if queue:
                    return queue.popleft()
                if self._abort_reason is not None:
                    raise ProtocolAbortError(f"{dst} stopped waiting for {src}: {self._abort_reason}")
                if src in self._finished:
                    raise ProtocolAbortError(
                        f"{dst} waits for a message from {src}, but {src} has finished its part of the protocol"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise PartyUnavailableError(
                        f"{dst} received nothing from {src} within {timeout:g} s; {src} has stopped answering. "
                        "Fix: check that party, or raise the timeout if it is legitimately slow"
                    )
                self._waiting[dst] = src
                self._check_deadlock()
                blocked = self._abort_reason is None
                lock.release()
                try:
                    if blocked:  # registered as waiting under the lock: from now on a send from ``src`` releases it
                        wake.acquire(True, remaining)
                finally:
                    lock.acquire()
                self._waiting.pop(dst, None)
        finally:
            lock.release()


class _MemoryEndpoint(Endpoint):
    def __init__(self, transport: InMemoryTransport, name: str) -> None:
        self._transport = transport
        self.name = name
        # The transport's methods (a subclass's, if it overrides them) bound to this party: every message passes
        # here, and a partial is one Python call less than the methods below.
        self.send = functools.partial(transport._send, name)  # type: ignore[method-assign]
        self.recv = functools.partial(transport._recv, name)  # type: ignore[method-assign]

    def send(self, dst: str, data: bytes) -> None:
        self._transport._send(self.name, dst, data)

    def recv(self, src: str, timeout: float) -> bytes:
        return self._transport._recv(self.name, src, timeout)
