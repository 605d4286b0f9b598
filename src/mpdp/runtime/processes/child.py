"""A forked party's side: its endpoint over socketpairs, and the report it sends its runner.

:func:`run_child` runs one party's role in the forked process over a :class:`SocketEndpoint` (one
:class:`~mpdp.runtime.processes.frames.Link` per peer, plus the control socket on which the runner may tell
it to abort), then sends the runner one frame: its result and traffic counts, or its failure (exception type,
message, traceback and when its peers could first see it), encoded with the wire codec (no pickle).

A receive polls its socket for a moment (``_SPIN`` seconds, yielding the CPU between polls) before it sleeps
in the selector: in a protocol of many short rounds the reply usually arrives within that moment, and the
sleep and wake-up it saves cost more than the polls.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
import traceback
from collections.abc import Sequence

from mpdp.errors import MpdpError, ParameterError, PartyUnavailableError, ProtocolAbortError, explain
from mpdp.runtime.codec import decode, encode
from mpdp.runtime.processes.frames import FRAME, Inbox, Link
from mpdp.runtime.runners import RunOne
from mpdp.runtime.transport import Endpoint, Transport

__all__ = ["SocketEndpoint", "run_child", "unanswered"]

_SPIN = 1e-4  # seconds a receive polls its socket before it sleeps in the selector (see the module docstring)


class SocketEndpoint(Endpoint):
    """One child's sockets to its peers (and to the parent, which may tell it to abort).

    Sends never block (:class:`Link`): a frame the kernel buffer cannot take waits in an outbox that every
    later send and receive flushes, while receives keep reading every peer, so two parties sending each other
    large messages at once cannot deadlock.
    """

    def __init__(self, name: str, peers: dict[str, socket.socket], control: socket.socket, timeout: float,
                 max_bytes: int) -> None:
        self.name = name
        self._links = {p: Link(p, sock, max_bytes) for p, sock in peers.items()}
        self._control = control
        self._timeout = timeout
        self._control_inbox = Inbox("the runner", 1 << 20)
        self._abort_reason: str | None = None
        self.closed_at: float | None = None  # when the peers could first see this party gone
        self._selector = selectors.DefaultSelector()
        self._writing: set[str] = set()
        for peer, link in self._links.items():
            self._selector.register(link.sock, selectors.EVENT_READ, peer)
        control.setblocking(False)
        self._selector.register(control, selectors.EVENT_READ, None)

    def send(self, dst: str, data: bytes) -> None:
        link = self._links.get(dst)
        if link is None:
            raise ParameterError(
                explain("destination", dst, f"another party of {tuple(self._links)}", "send to a peer by its name")
            )
        if self._abort_reason is not None:
            raise ProtocolAbortError(f"{self.name} cannot send to {dst}: protocol aborted ({self._abort_reason})")
        if link.send(data) or dst in self._writing:
            self._want_write(link)

    def recv(self, src: str, timeout: float) -> bytes:
        link = self._links.get(src)
        if link is None:
            raise ParameterError(
                explain("source", src, f"another party of {tuple(self._links)}", "receive from a peer by its name")
            )
        deadline = time.monotonic() + timeout
        inbox = link.inbox
        while True:
            if inbox.frames:
                return inbox.frames.popleft()
            if self._abort_reason is not None:
                raise ProtocolAbortError(f"{self.name} stopped waiting for {src}: {self._abort_reason}")
            if inbox.eof:
                raise ProtocolAbortError(
                    f"{self.name} waits for a message from {src}, but {src} has finished its part of the protocol "
                    "(or its process has failed)"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PartyUnavailableError(unanswered(self.name, src, timeout))
            if not self._writing and self._spin(link):  # (pending writes: only the selector serves them)
                continue
            self._pump(remaining)

    def _spin(self, link: Link) -> bool:
        """Poll ``link`` for up to ``_SPIN`` seconds, yielding the CPU between polls; whether a frame came."""
        inbox = link.inbox
        stop = time.perf_counter() + _SPIN
        while not inbox.eof and not link.gone:
            link.read()
            if inbox.frames:
                return True
            if time.perf_counter() >= stop:
                break
            os.sched_yield()
        return False

    def close(self) -> None:
        """Deliver what is still queued (reading meanwhile, so peers sending to us are not blocked), then close."""
        deadline = time.monotonic() + self._timeout
        while any(link.outbox for link in self._links.values()) and self._abort_reason is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stuck = sorted(p for p, link in self._links.items() if link.outbox)
                raise PartyUnavailableError(
                    f"{self.name} could not deliver its last messages to {stuck} within {self._timeout:g} s. "
                    "Fix: check those parties, or raise the timeout"
                )
            self._pump(remaining)
        self.closed_at = time.monotonic()
        for link in self._links.values():
            self._forget(link.sock)
            link.sock.close()
        self._forget(self._control)
        self._selector.close()

    def _want_write(self, link: Link) -> None:
        """Ask the selector to report ``link``'s socket writable while its outbox holds bytes (only then)."""
        want = bool(link.outbox)
        if want != (link.peer in self._writing):
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._selector.modify(link.sock, events, link.peer)
            (self._writing.add if want else self._writing.discard)(link.peer)

    def _pump(self, wait: float) -> None:
        for key, events in self._selector.select(wait):
            peer = key.data
            if peer is None:
                self._control_inbox.feed(self._control)
                if self._control_inbox.frames:
                    message = decode(self._control_inbox.frames.popleft())
                    reason = message.get("abort") if isinstance(message, dict) else None
                    self._abort_reason = str(reason or "aborted by the runner")
                if self._control_inbox.eof:
                    self._abort_reason = self._abort_reason or "the runner's process has gone"
                    self._forget(self._control)
                continue
            link = self._links[peer]
            if events & selectors.EVENT_READ:
                link.read()
                if link.inbox.eof:  # the peer closed its socket: it has exited
                    self._writing.discard(peer)
                    self._forget(link.sock)
                    continue
            if events & selectors.EVENT_WRITE:
                link.flush()
                self._want_write(link)

    def _forget(self, sock: socket.socket) -> None:
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass


def unanswered(name: str, src: str, timeout: float) -> str:
    """The message of the PartyUnavailableError of a receive from ``src`` that timed out."""
    return (f"{name} received nothing from {src} within {timeout:g} s; {src} has stopped answering. "
            "Fix: check that party, or raise the timeout if it is legitimately slow")


class _ForkedTransport(Transport):
    """The transport a child sees: its one endpoint."""

    def __init__(self, parties: Sequence[str], endpoint: SocketEndpoint) -> None:
        self.parties = tuple(parties)
        self._endpoint = endpoint

    def endpoint(self, name: str) -> Endpoint:
        if name != self._endpoint.name:
            raise ParameterError(explain("party", name, self._endpoint.name, "a child runs only its own party"))
        return self._endpoint


def run_child(name: str, names: Sequence[str], run_one: RunOne, peers: dict[str, socket.socket],
              control: socket.socket, timeout: float, max_bytes: int) -> None:
    """Run one party in this (forked) process and send its report to the parent."""
    endpoint: SocketEndpoint | None = None
    try:
        endpoint = SocketEndpoint(name, peers, control, timeout, max_bytes)
        result, traffic = run_one(name, _ForkedTransport(names, endpoint))
        try:
            data = encode({"ok": True, "result": result,
                           "traffic": {**traffic.as_dict(), "sent_to": dict(traffic.sent_to)}})
        except MpdpError as exc:
            kind = type(result).__name__
            raise ParameterError(
                f"party {name!r} returned a {kind} that cannot travel back to the parent process ({exc}). Fix: "
                f"give {kind} to_wire() (and a from_wire() to rebuild it from the result), return plain data "
                "(numpy arrays, ints, floats, str, lists, dicts), or run the parties as threads (processes=False)"
            ) from exc
    except BaseException as exc:  # reported to the parent, which re-raises it
        # The failure's time is when the peers could first notice it (sockets closed), so that it sorts before
        # the aborts it causes in them.
        at = time.monotonic() if endpoint is None or endpoint.closed_at is None else endpoint.closed_at
        data = encode({"ok": False, "type": _type_name(exc), "message": str(exc), "at": at,
                       "traceback": "".join(traceback.format_exception(exc))})
    control.setblocking(True)
    control.sendall(FRAME.pack(len(data)) + data)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"
