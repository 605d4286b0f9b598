"""One party's protocol runs, one after the other, over the same connections: :class:`StepSession`.

An algorithm whose parties run several protocols in turn (a round of secure aggregation, then the model handed
out, then the next round) writes each party's part once, as a function that calls :meth:`StepSession.run` for
every run. The same function then runs

* in memory: every party's function is a role of :func:`~mpdp.runtime.run_protocol`, and builds its
  session on the endpoint of the :class:`~mpdp.runtime.Comm` it is given (threads, greenlets or forked
  processes, as the runner chooses);
* deployed: the party's process builds a session over its gRPC transport (:mod:`mpdp.deploy.session`, which
  adds the start-up handshake).

Each run gets a fresh :class:`~mpdp.runtime.Comm` on the same endpoint, its random source ``root.spawn(name)``
exactly as :func:`~mpdp.runtime.run_protocol` gives a role. Runs follow each other without interleaving:
per-pair delivery is in order and every run consumes the messages it was sent, so the next run's first
message is the next one each party reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpdp.randomness import RandomSource
from mpdp.runtime.codec import DEFAULT_LIMITS, CodecLimits
from mpdp.runtime.comm import Comm, PartyTraffic
from mpdp.runtime.party import run_protocol
from mpdp.runtime.transport import Endpoint

__all__ = ["RunRecord", "StepSession", "communication", "run_programs"]


@dataclass
class RunRecord:
    """One protocol run of the local party: who took part, its result, what it sent, how long it took, and
    whether it counts as the algorithm's communication (``counted=False``: coordination that a single process
    holding every party would not send, e.g. a model a central loop hands every owner)."""

    parties: tuple[str, ...]
    result: Any
    traffic: PartyTraffic
    seconds: float
    counted: bool = True


class StepSession:
    """The local party's protocol runs over one endpoint (module docstring)."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 120.0, limits: CodecLimits = DEFAULT_LIMITS) -> None:
        self.endpoint = endpoint
        self.name = endpoint.name
        self.timeout = float(timeout)
        self.limits = limits
        self.runs: list[RunRecord] = []

    def run(self, role: Callable[[Comm], Any], root: RandomSource, parties: Sequence[str], *,
            counted: bool = True) -> Any:
        """Run the local party's ``role`` in a protocol among ``parties`` (canonical order); returns its result."""
        comm = Comm(self.endpoint, tuple(parties), rng=root.spawn(self.name), timeout=self.timeout,
                    limits=self.limits)
        start = time.perf_counter()
        result = role(comm)
        self.runs.append(RunRecord(tuple(parties), result, comm.traffic, time.perf_counter() - start, counted))
        return result


def run_programs(programs: Mapping[str, Callable[[StepSession], Any]], *, rng: RandomSource,
                 timeout: float = 120.0, **options: Any) -> dict[str, Any]:
    """Run every party's ``program(session)`` at once over the in-memory transport (one role each of
    :func:`~mpdp.runtime.run_protocol`, whose runner ``options`` apply); each party's return value.

    A program that needs its runs' records returns them (``session.runs``). With ``processes=True`` the return
    values come back through the wire codec, so they must be plain data it carries."""

    def role(program: Callable[[StepSession], Any]) -> Callable[[Comm], Any]:
        def run(comm: Comm) -> Any:
            return program(StepSession(comm.endpoint, timeout=timeout, limits=comm.limits))

        return run

    done = run_protocol({name: role(program) for name, program in programs.items()}, rng=rng, timeout=timeout,
                        **options)
    return {name: done.results[name] for name in programs}


def communication(runs: Mapping[str, Sequence[RunRecord]]) -> dict[str, int]:
    """The algorithm's communication: bytes and messages every party sent in its counted runs, and rounds added up
    over the runs in order, each run's rounds its longest party's (as
    :meth:`~mpdp.runtime.ProtocolRun.communication` counts one run)."""
    counted = [[r for r in records if r.counted] for records in runs.values()]
    sent = sum(r.traffic.bytes_sent for records in counted for r in records)
    messages = sum(r.traffic.messages_sent for records in counted for r in records)
    steps = max((len(records) for records in counted), default=0)
    rounds = sum(max(records[k].traffic.rounds for records in counted if k < len(records)) for k in range(steps))
    return {"bytes": int(sent), "messages": int(messages), "rounds": int(rounds)}
