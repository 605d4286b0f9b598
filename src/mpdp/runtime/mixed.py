"""Some parties forked into their own processes, the others greenlets of the calling thread: the mixed runner.

:func:`~mpdp.runtime.party.run_protocol` with ``cooperative=True, forked=("dealer",)`` runs the parties
named in ``forked`` each in its own forked OS process, as ``processes=True`` does
(:mod:`mpdp.runtime.processes`: socketpairs, length-prefixed frames, a report over a control socket), and
every other party as a greenlet of the calling thread, as ``cooperative=True`` does
(:mod:`mpdp.runtime.cooperative`).

What runs where: messages between two greenlet parties stay in the cooperative transport's queues; a greenlet
party's message to a forked party is written to the parent's end of their socketpair (never blocking: what
the kernel buffer cannot take waits in an outbox, flushed when the socket is writable); the bytes a forked
party sends a greenlet party are read into that pair's queue. When no greenlet can go on and some wait for a
forked party, the scheduler blocks in a selector on those sockets and on the forked parties' control sockets
(a report of failure, or a child's end, aborts the run) until the earliest waiting receive's timeout.
Forked parties talk to each other over their own socketpairs.

When to use it: greenlets save the thread hand-overs but leave a second core idle, so a run's wall time is
the sum of every party's work. A party that only serves the others (the trusted dealer of
:mod:`mpdp.protocols.mpc.dealer`) can take a second core without adding a hand-over per message: in the DPVI
step the two computing parties exchange ~35 messages each way, but each exchanges only a request and a reply
with the dealer. The parties request step ``t+1``'s correlations as step ``t`` starts
(:meth:`~mpdp.protocols.mpc.planning.PlannedProvider.planned` with ``ahead``), so the forked dealer computes
them while the parties compute step ``t``. The gain is at most the dealer's share of the greenlets' thread's
work, and only where a core is idle: on a busy host the forked dealer competes with the parties for their core
(and its replies cross a socketpair), and the run is slower. :class:`~mpdp.learning.dpvi.VerticalDPVI`
therefore keeps its dealer a greenlet by default; ``fork_services=True`` forks it (and a trusted noise party).
Measure on the target host before choosing it: ``python -m bench dpvi``, row "dpvi iteration (mpc, greenlets,
dealer in its own process)" against "dpvi iteration (mpc, 2 parties, greenlets)" (see bench/RESULTS.md).

Semantics are those of threads and greenlets: the same results and traffic counts for the same seed
(they never depend on the interleaving); a failure in either kind of party aborts the others, and the first genuine
failure is re-raised with a note naming its party (a forked party's rebuilt as with ``processes=True``; a
forked process that ends without a report is a PartyUnavailableError). Deadlock is detected at once when every
waiting greenlet waits for another greenlet; a receive from a forked party that gets nothing within the run's
``timeout`` fails with PartyUnavailableError.

Limitations: those of both runners. Linux/macOS only (fork); fork copies only the calling thread, so call it
from a process that holds no locks in other threads; a forked party's result comes back through the wire codec
(an object with ``to_wire()`` as its wire form).
"""

from __future__ import annotations

import functools
import os
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Collection, Sequence
from typing import Any

from mpdp.errors import MpdpError, PartyUnavailableError, ProtocolAbortError
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.cooperative import CooperativeTransport, run_cooperative
from mpdp.runtime.processes.child import unanswered
from mpdp.runtime.processes.fork import check_platform, fork_parties, reap, socketpairs
from mpdp.runtime.processes.frames import Inbox, Link
from mpdp.runtime.processes.reports import GRACE, settle, tell_abort
from mpdp.runtime.runners import Failure, RunOne

__all__ = ["MixedTransport", "can_fork", "run_mixed"]


def can_fork() -> bool:
    """Whether forking a party is safe here: the platform has ``os.fork`` and this process runs one thread (a
    fork copies only the calling thread, with any lock another thread held at that moment held forever)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class _ToForked(deque[bytes]):
    """The queue of a (greenlet party, forked party) pair in the parent: always empty, its append sends."""

    def __init__(self, transport: MixedTransport, link: Link) -> None:
        super().__init__()
        self._deliver = functools.partial(transport._deliver, link)

    def append(self, data: bytes) -> None:
        self._deliver(data)


class MixedTransport(CooperativeTransport):
    """The cooperative transport of the greenlet parties, with sockets to the parties forked elsewhere.

    Built by :func:`run_mixed` from the parent's ends of the socketpairs (``(greenlet party, forked party)``
    -> socket) and of the forked parties' control sockets; it reaps each child as its report arrives.
    """

    def __init__(self, parties: Sequence[str], forked: Collection[str],
                 pairs: dict[tuple[str, str], socket.socket], controls: dict[str, socket.socket],
                 pids: dict[str, int], *, max_bytes: int) -> None:
        super().__init__(parties)
        self.remote = frozenset(forked)
        self._selector = selectors.DefaultSelector()
        self._links: dict[tuple[str, str], Link] = {}  # (greenlet party, forked party) -> the greenlet's end
        for (owner, peer), sock in pairs.items():
            if owner not in self.remote:
                link = Link(peer, sock, max_bytes)
                self._links[(owner, peer)] = link
                self._queues[(peer, owner)] = link.inbox.frames  # read from the socket into the pair's queue
                self._queues[(owner, peer)] = _ToForked(self, link)
                self._selector.register(sock, selectors.EVENT_READ, link)
        self._controls = controls
        self._reports = {n: Inbox(n, 1 << 62) for n in controls}  # reports from our own children: no cap
        for n, sock in controls.items():
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ, n)
        self._pids = pids  # children not yet reaped
        self._writing: set[Link] = set()
        self._closing: set[Link] = set()  # links of finished greenlet parties with bytes still to deliver
        self._deadlines: dict[str, float] = {}  # greenlet party waiting for a forked one -> when it gives up
        self._expired: set[str] = set()
        self._broken: dict[Link, MpdpError] = {}  # links whose bytes the hub refused (an over-long frame)
        self.results: dict[str, Any] = {}
        self.traffic: dict[str, PartyTraffic] = {}
        self.failures: list[Failure] = []

    # -- the greenlets' side ----------------------------------------------------------------------------------
    # A greenlet party's message to a forked one goes through the base class's send, whose queue for the pair
    # is a _ToForked: its append writes the frame to the socket. Messages between greenlets cost what they cost
    # in the cooperative runner; so does a receive that finds its message queued (the fast path below).
    def _recv(self, dst: str, src: str, timeout: float) -> bytes:
        queue = self._queues.get((src, dst))
        if queue:
            self._waiting.pop(dst, None)
            return queue.popleft()
        if src not in self.remote:
            return super()._recv(dst, src, timeout)
        link = self._links[(dst, src)]
        frames, inbox = link.inbox.frames, link.inbox
        if not inbox.eof and link not in self._broken:
            link.read()  # what has arrived already, without blocking
        try:
            while True:
                if frames:
                    return frames.popleft()
                if link in self._broken:
                    raise self._broken.pop(link)
                if self._abort_reason is not None:
                    raise ProtocolAbortError(f"{dst} stopped waiting for {src}: {self._abort_reason}")
                if inbox.eof:
                    raise ProtocolAbortError(f"{dst} waits for a message from {src}, but {src} has finished its "
                                             "part of the protocol (or its process has failed)")
                if dst in self._expired:
                    raise PartyUnavailableError(unanswered(dst, src, timeout))
                self._deadlines.setdefault(dst, time.monotonic() + timeout)
                self._park(dst, src)
        finally:
            if self._deadlines:
                self._waiting.pop(dst, None)
                self._deadlines.pop(dst, None)
                self._expired.discard(dst)

    def runnable(self, name: str) -> bool:
        if self._writing:  # bytes the kernel could not take: hand them over as the greenlets take turns
            for link in list(self._writing):
                self._flush(link)
        src = self._waiting.get(name)
        if src is None or self._queues[(src, name)] or self._abort_reason is not None:
            return True
        if src in self.remote:
            link = self._links[(name, src)]
            return link.inbox.eof or name in self._expired or link in self._broken
        return src in self._finished

    def _deliver(self, link: Link, data: bytes) -> None:
        """A greenlet party's message to a forked one: framed onto the socket, or queued until it is writable."""
        if link.send(data) or link in self._writing:
            self._want_write(link)

    def party_finished(self, name: str) -> None:
        super().party_finished(name)
        for (owner, _), link in self._links.items():
            if owner == name:  # the forked party sees the socket closed, as a finished party
                if link.outbox and not link.gone:
                    self._closing.add(link)  # closed once delivered (finish() waits for that)
                else:
                    self._close(link)

    def abort(self, reason: str) -> None:
        first = self._abort_reason is None
        super().abort(reason)
        if first:  # the forked parties still running stop too (their waiting receives fail)
            tell_abort((self._controls[n] for n in self._pids), reason)

    # -- the hub's side -----------------------------------------------------------------------------------------
    def wait_outside(self) -> bool:
        waits = [dst for dst, src in self._waiting.items() if src in self.remote]
        if not waits:
            return False  # every waiting greenlet waits for another greenlet
        deadline = min(self._deadlines[dst] for dst in waits)
        now = time.monotonic()
        if deadline > now:
            self._pump(deadline - now)
            now = time.monotonic()
        self._expired.update(dst for dst in waits if self._deadlines[dst] <= now)
        return True

    def finish(self) -> None:
        """After the greenlet parties: deliver their last bytes and wait for every forked party's report
        (``GRACE`` seconds once the run is aborted; the caller kills whoever is left)."""
        give_up: float | None = None
        while self._pids or any(link.outbox for link in self._closing):
            if self._abort_reason is not None and give_up is None:
                give_up = time.monotonic() + GRACE
            if give_up is not None and time.monotonic() >= give_up:
                break
            self._pump(None if give_up is None else max(0.0, give_up - time.monotonic()))

    def close(self) -> None:
        self._selector.close()

    def _pump(self, wait: float | None) -> None:
        for key, events in self._selector.select(wait):
            data = key.data
            if isinstance(data, Link):
                if events & selectors.EVENT_READ:
                    try:
                        data.read()
                    except MpdpError as exc:  # raised in the greenlet that receives from this link
                        self._broken[data] = exc
                        self._close(data)
                        continue
                    if data.inbox.eof:  # the forked party has exited
                        self._close(data)
                        continue
                if events & selectors.EVENT_WRITE:
                    self._flush(data)
            else:
                self._report(data)

    def _report(self, name: str) -> None:
        inbox, sock = self._reports[name], self._controls[name]
        inbox.feed(sock)
        if not inbox.frames and not inbox.eof:
            return
        self._selector.unregister(sock)
        failed = len(self.failures)
        settle(name, inbox, self._pids, self.results, self.traffic, self.failures)
        if len(self.failures) > failed:
            exc = self.failures[-1][2]
            self.abort(f"{name} failed with {type(exc).__name__}: {exc}")

    def _flush(self, link: Link) -> None:
        link.flush()
        if link in self._closing and not link.outbox:  # a finished greenlet's last bytes are delivered
            self._close(link)
        else:
            self._want_write(link)

    def _want_write(self, link: Link) -> None:
        want = bool(link.outbox)
        if want != (link in self._writing):
            self._selector.modify(link.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0), link)
            (self._writing.add if want else self._writing.discard)(link)

    def _close(self, link: Link) -> None:
        self._closing.discard(link)
        self._writing.discard(link)
        if link.sock.fileno() >= 0:
            self._selector.unregister(link.sock)
            link.sock.close()
        link.gone = True


def run_mixed(names: Sequence[str], run_one: RunOne, forked: Collection[str], *, timeout: float,
              max_bytes: int = 1 << 32) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    """Fork a child for each party in ``forked``, run the others as greenlets of this thread (each calling
    ``run_one(name, transport)``); collect results, traffic and failures as the other runners do.

    Every child is reaped and every socket closed before this returns, whatever happens.
    """
    names = tuple(names)
    away = tuple(n for n in names if n in forked)
    check_platform(len(names))
    pids: dict[str, int] = {}
    sockets: list[socket.socket] = []
    transport: MixedTransport | None = None
    try:
        pairs, controls, sockets = socketpairs(names, away)
        pids.update(fork_parties(names, away, run_one, pairs, controls, sockets, timeout, max_bytes))
        transport = MixedTransport(names, away, {k: s for k, s in pairs.items() if k[0] not in away},
                                   {n: controls[n][0] for n in away}, pids, max_bytes=max_bytes)
        results, traffic, failures = run_cooperative(names, run_one, transport)
        transport.finish()
        results.update(transport.results)
        traffic.update(transport.traffic)
        return results, traffic, failures + transport.failures
    finally:
        if transport is not None:
            transport.close()
        reap(pids, sockets)
