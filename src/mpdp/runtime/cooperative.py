"""Parties as greenlets of the calling thread, switched when one waits for a message: cooperative scheduling.

:func:`~mpdp.runtime.party.run_protocol` with ``cooperative=True`` runs every party's role here, over a
:class:`CooperativeTransport`: the in-memory transport's per-pair FIFO queues of bytes, its counts and its
failure rules, without threads. Each party runs in its own greenlet (a stackful coroutine, `greenlet
<https://greenlet.readthedocs.io>`_) until it waits for a message that has not arrived; the scheduler then
switches to the next party that can go on (a message for it is queued, the run was aborted, or the party it
waits for has finished), in the parties' order.

When to use it: with threads the parties take turns on the GIL anyway when their work is Python and small
numpy arrays, and each hand-over costs a futex wake-up, the GIL's drop-and-take and a context switch (and
numpy's release of the GIL inside larger operations lets a woken party preempt the one computing); a greenlet
switch costs a small fraction of that. The saving grows with the number of messages per unit of work, and
with the host's other load, which makes each thread hand-over dearer: ``python -m bench dpvi`` compares the
rows "dpvi iteration (mpc, 2 parties)" and "dpvi iteration (mpc, 2 parties, greenlets)" (see
bench/RESULTS.md). Parties still see only their own objects and the bytes they receive; nothing is shared
that threads would not share.

Semantics: a party's role runs exactly as with threads (the results and traffic counts are the same: they
do not depend on the interleaving). A receive that no party can ever satisfy fails at once with
:class:`~mpdp.errors.ProtocolAbortError` (every running party waiting, nothing queued for them: deadlock),
as does waiting for a party that has finished, as in :class:`~mpdp.runtime.transport.InMemoryTransport`.
Receive timeouts do not apply: a party is only ever waiting while another computes, and a party that
computes forever keeps the run waiting, as it keeps its peers waiting with threads.

Limitations: no parallelism at all, so parties whose work is in C extensions that release the GIL (CKKS,
Paillier) lose the overlap threads give them; use threads (or processes) for those. A role must not block
in anything but this transport's receive (a socket, a lock another party releases, a thread it joins): that
would block every party.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import greenlet

from mpdp.errors import ParameterError, ProtocolAbortError, explain
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.runners import Failure, RunOne
from mpdp.runtime.transport import InMemoryTransport, Transport

__all__ = ["CooperativeTransport", "run_cooperative"]



class CooperativeTransport(InMemoryTransport):
    """The in-memory transport for parties that are greenlets of one thread (see the module docstring).

    A receive with nothing queued registers the party as waiting and switches to the scheduler's greenlet,
    which switches back once the party can go on.
    """

    remote: frozenset[str] = frozenset()  # parties that run elsewhere (mpdp.runtime.mixed): no greenlet here

    def __init__(self, parties: Sequence[str]) -> None:
        super().__init__(parties)
        self._hub: greenlet.greenlet | None = None

    def wait_outside(self) -> bool:
        """The hub's hook when no greenlet can go on: wait for what the :attr:`remote` parties send (or for
        their failure, or a receive's timeout) and return True; False when no greenlet waits for one (then
        every greenlet waits for another one: a deadlock)."""
        return False

    def runnable(self, name: str) -> bool:
        """Whether party ``name`` (not finished) can go on: it is not waiting, or what it waits for is there."""
        src = self._waiting.get(name)
        return src is None or bool(self._queues[(src, name)]) or self._abort_reason is not None \
            or src in self._finished

    def deadlock(self) -> None:
        """Abort the run: every running party waits for a message nobody will send."""
        waits = ", ".join(f"{dst} waits for {src}" for dst, src in sorted(self._waiting.items()))
        self.abort(f"deadlock: every running party is waiting ({waits})")

    def _send(self, src: str, dst: str, data: bytes) -> None:
        queue = self._queues.get((src, dst))
        if queue is None:
            raise ParameterError(
                explain("destination", dst, f"another party of {self.parties}", "send to a peer by its name")
            )
        if self._abort_reason is not None:
            raise ProtocolAbortError(f"{src} cannot send to {dst}: protocol aborted ({self._abort_reason})")
        queue.append(data)  # the receiver runs when the sender waits (nothing to wake)

    def _recv(self, dst: str, src: str, timeout: float) -> bytes:
        queue = self._queues.get((src, dst))
        if queue is None:
            raise ParameterError(
                explain("source", src, f"another party of {self.parties}", "receive from a peer by its name")
            )
        while True:
            if queue:
                self._waiting.pop(dst, None)
                return queue.popleft()
            if self._abort_reason is not None:
                self._waiting.pop(dst, None)
                raise ProtocolAbortError(f"{dst} stopped waiting for {src}: {self._abort_reason}")
            if src in self._finished:
                self._waiting.pop(dst, None)
                raise ProtocolAbortError(
                    f"{dst} waits for a message from {src}, but {src} has finished its part of the protocol"
                )
            self._park(dst, src)

    def _park(self, dst: str, src: str) -> None:
        """Register party ``dst`` (the current greenlet) as waiting for ``src`` and switch to the scheduler, which
        switches back once it can go on."""
        if self._hub is None or greenlet.getcurrent() is self._hub:
            raise ParameterError(explain("receive", f"{dst} from {src} outside a party's greenlet",
                                         "a receive inside run_cooperative's parties",
                                         "run the roles with run_protocol(..., cooperative=True)"))
        self._waiting[dst] = src
        self._hub.switch()


def run_cooperative(names: Sequence[str], run_one: RunOne, transport: Transport
                    ) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    """Run ``run_one(name, transport)`` for every party as a greenlet of this thread until all have returned
    (every party but the transport's :attr:`~CooperativeTransport.remote` ones, which run elsewhere).

    Returns results, traffic and failures as the threaded runner records them (``(time, party, exception)``;
    a failure aborts the transport, so the parties waiting stop with ProtocolAbortError).
    """
    if not isinstance(transport, CooperativeTransport) or tuple(transport.parties) != tuple(names):
        raise ParameterError(explain("transport", transport, f"a CooperativeTransport for {tuple(names)}",
                                     "let run_protocol(..., cooperative=True) build it"))
    results: dict[str, Any] = {}
    traffic: dict[str, PartyTraffic] = {}
    failures: list[Failure] = []
    hub = greenlet.getcurrent()
    transport._hub = hub

    def body(name: str) -> None:
        try:
            results[name], traffic[name] = run_one(name, transport)
        except BaseException as exc:  # re-raised by the caller, as with threads
            failures.append((time.monotonic(), name, exc))
            transport.abort(f"{name} failed with {type(exc).__name__}: {exc}")

    parties = [(name, greenlet.greenlet(functools.partial(body, name), parent=hub))
               for name in names if name not in transport.remote]
    try:
        while parties:
            progressed = False
            for name, party in parties:
                if not party.dead and transport.runnable(name):
                    party.switch()
                    progressed = True
            parties = [(name, party) for name, party in parties if not party.dead]
            if parties and not progressed and not transport.wait_outside():
                transport.deadlock()  # every party left waits: each raises ProtocolAbortError when switched to
    finally:
        transport._hub = None
    return results, traffic, failures
