"""``run_protocol(..., processes=True)``: every party in its own forked process, the runner collecting reports.

:func:`run_forked` forks one child per party (:mod:`~mpdp.runtime.processes.fork`), each running its role
over socketpairs (:mod:`~mpdp.runtime.processes.child`), and waits for every child's report
(:mod:`~mpdp.runtime.processes.reports`). At the first failure it tells the other children to abort, as
:meth:`~mpdp.runtime.transport.InMemoryTransport.abort` does for threads, gives them ``GRACE`` seconds, and
then kills and reaps whoever is left.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Sequence
from typing import Any

from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.processes.fork import check_platform, fork_parties, reap, socketpairs
from mpdp.runtime.processes.frames import Inbox
from mpdp.runtime.processes.reports import GRACE, settle, tell_abort
from mpdp.runtime.runners import Failure, RunOne

__all__ = ["run_forked"]


def run_forked(names: Sequence[str], run_one: RunOne, *, timeout: float, max_bytes: int = 1 << 32
               ) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    """Fork one child per party, each calling ``run_one(name, transport)``; collect results, traffic and failures.

    ``failures`` holds ``(time, party, exception)`` as the threaded runner records them; the caller picks
    the one to raise. Every child is reaped and every socket closed before this returns, whatever happens.
    """
    names = tuple(names)
    check_platform(len(names))
    pids: dict[str, int] = {}
    sockets: list[socket.socket] = []
    try:
        pairs, controls, sockets = socketpairs(names, names)
        pids.update(fork_parties(names, names, run_one, pairs, controls, sockets, timeout, max_bytes))
        return _collect(names, {n: controls[n][0] for n in names}, pids)
    finally:
        reap(pids, sockets)


def _collect(names: tuple[str, ...], ends: dict[str, socket.socket], pids: dict[str, int]
             ) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    results: dict[str, Any] = {}
    traffic: dict[str, PartyTraffic] = {}
    failures: list[Failure] = []
    inboxes = {n: Inbox(n, 1 << 62) for n in names}  # reports from our own children: no cap
    selector = selectors.DefaultSelector()
    for n, sock in ends.items():
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, n)
    pending = set(names)
    give_up: float | None = None
    try:
        while pending:
            wait = None if give_up is None else max(0.0, give_up - time.monotonic())
            for key, _ in selector.select(wait):
                n = key.data
                inbox = inboxes[n]
                inbox.feed(ends[n])
                if not inbox.frames and not inbox.eof:
                    continue
                pending.discard(n)
                selector.unregister(ends[n])
                settle(n, inbox, pids, results, traffic, failures)
            if failures and give_up is None:
                # Like InMemoryTransport.abort: every party still waiting stops with ProtocolAbortError.
                _, who, exc = failures[0]
                tell_abort((ends[n] for n in pending), f"{who} failed with {type(exc).__name__}: {exc}")
                give_up = time.monotonic() + GRACE
            if give_up is not None and time.monotonic() >= give_up:
                break  # the caller's finally kills and reaps whoever has not finished
    finally:
        selector.close()
    return results, traffic, failures
