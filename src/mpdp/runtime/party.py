"""Parties and the runner that executes a protocol with one thread (or process) per party.

A protocol is a mapping from party name to that party's *role*: a :class:`Party` object (whose ``run``
method holds its side of the protocol) or any callable taking the party's :class:`~mpdp.runtime.comm.Comm`.
A role sees its own constructor arguments, its own random source (``comm.rng``) and the messages it
receives, nothing else: the same role runs in a thread here and in its own process over the network.

>>> from mpdp.randomness import RandomSource
>>> def alice(comm):
...     comm.send("bob", 20, label="x")
...     return comm.recv("bob", label="y")
>>> def bob(comm):
...     comm.send("alice", comm.recv("alice", label="x") + 1, label="y")
>>> run = run_protocol({"alice": alice, "bob": bob}, rng=RandomSource.seeded(0))
>>> run.results["alice"], run.rounds
(21, 2)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mpdp.errors import ParameterError, ProtocolAbortError, explain
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime.codec import DEFAULT_LIMITS, CodecLimits
from mpdp.runtime.comm import Comm, PartyTraffic
from mpdp.runtime.cooperative import CooperativeTransport, run_cooperative
from mpdp.runtime.placement import one_blas_thread, party_threads_on_one_cpu, pin_this_thread
from mpdp.runtime.transport import InMemoryTransport, Transport

__all__ = ["Party", "ProtocolRun", "Role", "run_party", "run_protocol"]

T = TypeVar("T")


class Party:
    """Base class for a participant that keeps its own private state between protocol runs.

    Subclasses store their data in attributes and implement :meth:`run`; they never reach into another
    party's object. ``name`` must match the name the protocol uses for this party.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ParameterError(explain("name", name, "a non-empty str", "name the party, e.g. Party('alice')"))
        self.name = name

    def run(self, comm: Comm) -> Any:
        """This party's side of the protocol."""
        raise NotImplementedError(f"{type(self).__name__} must implement run(comm)")

    def __call__(self, comm: Comm) -> Any:
        return self.run(comm)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


Role = Callable[[Comm], Any]


@dataclass
class ProtocolRun(Generic[T]):
    """The outcome of one protocol execution: each party's return value and traffic."""

    results: dict[str, T]
    traffic: dict[str, PartyTraffic]
    seconds: float

    @property
    def bytes(self) -> int:
        """Total bytes sent by all parties."""
        return sum(t.bytes_sent for t in self.traffic.values())

    @property
    def messages(self) -> int:
        return sum(t.messages_sent for t in self.traffic.values())

    @property
    def rounds(self) -> int:
        """Communication rounds: the longest chain of causally dependent messages."""
        return max((t.rounds for t in self.traffic.values()), default=0)

    def communication(self) -> dict[str, int]:
        """``{"bytes", "messages", "rounds"}`` as the CLI's JSON reports them."""
        return {"bytes": self.bytes, "messages": self.messages, "rounds": self.rounds}


def run_party(
    name: str,
    role: Role,
    transport: Transport,
    *,
    rng: RandomSource | None = None,
    timeout: float = 120.0,
    limits: CodecLimits = DEFAULT_LIMITS,
) -> tuple[Any, PartyTraffic]:
    """Run one party's role in the calling thread over ``transport`` (how a networked process runs)."""
    comm = Comm(transport.endpoint(name), transport.parties, rng=resolve(rng), timeout=timeout, limits=limits)
    try:
        return role(comm), comm.traffic
    finally:
        transport.party_finished(name)
        comm.close()


def run_protocol(
    roles: Mapping[str, Role],
    *,
    rng: RandomSource | None = None,
    transport: Transport | None = None,
    timeout: float = 120.0,
    limits: CodecLimits = DEFAULT_LIMITS,
    processes: bool = False,
    one_cpu: bool = False,
    cooperative: bool = False,
    forked: Collection[str] = (),
) -> ProtocolRun[Any]:
    """Run every party's role concurrently, one thread (or one forked process) each; collect results and traffic.

    While two or more parties run, numpy's BLAS uses one thread (a pool per party on the same cores slows
    interleaved matrix products many times over; :mod:`mpdp.runtime.placement`); restored after the run.

    Parameters
    ----------
    roles:
        Party name -> role. The mapping's order is the canonical party order every party sees.
    rng:
        Root random source; party ``p`` draws from ``rng.spawn(p)``. Default: fresh OS entropy.
    transport:
        Default: a new :class:`~mpdp.runtime.transport.InMemoryTransport` for these parties.
    timeout:
        Seconds any receive may wait before the run fails with PartyUnavailableError. It bounds the run when a
        party is stuck: the party waiting for it fails after ``timeout``, and the run reports that failure at
        most ``min(timeout, ABORT_GRACE)`` seconds later, even if the stuck party's thread still computes (it
        is left behind as a daemon thread; with ``processes=True`` its process is killed). With
        ``cooperative=True`` a party that computes without waiting holds the only thread, so no timeout applies.
    processes:
        Run each party in its own forked OS process (:mod:`mpdp.runtime.processes`, Linux/macOS), messages
        over socketpairs: the parties' Python work runs in parallel instead of taking turns on the GIL. The
        same seed gives the same results and traffic as threads. A result comes back through the wire codec:
        plain data unchanged, an object with ``to_wire()`` as its wire form (rebuild it with ``from_wire``).

    one_cpu:
        Party threads share the CPU the caller runs on (Linux; ignored with ``processes``): they take turns on
        the GIL anyway, and hand-overs within one CPU are cheaper (:mod:`mpdp.runtime.placement`), which pays
        for parties whose work is Python and small arrays (the DPVI step). Leave it off for parties whose work
        is in C extensions that release the GIL (CKKS, Paillier), which then run in parallel.

    cooperative:
        Run the parties as greenlets of the calling thread (:mod:`mpdp.runtime.cooperative`), switched when
        one waits for a message: no thread hand-overs (they cost most on a loaded host), the same results and
        traffic. For parties whose work is Python and small arrays; parties whose C extensions release the GIL
        (CKKS, Paillier) lose the overlap threads give them. Receive timeouts do not apply (a run in which
        every party waits fails at once, as a deadlock).

    forked:
        With ``cooperative=True``: the parties to run each in its own forked OS process instead (as with
        ``processes``; Linux/macOS), the others staying greenlets of the calling thread
        (:mod:`mpdp.runtime.mixed`). For a party that works apart from the others, e.g. ``("dealer",)``: the
        trusted dealer computes the next step's correlations on another core while the greenlet parties
        compute, and its few messages cross a socketpair (it gains wall time only where a core is idle; see
        :mod:`mpdp.runtime.mixed`). The same results and traffic as the other runners; receives from a forked
        party time out after ``timeout``; its result comes back through the wire codec.

    Raises
    ------
    Exception
        When a party's role raises, the others are aborted and the *first* failure is re-raised with a
        note naming the party, so the root cause is not hidden behind the aborts it caused. With
        ``processes=True`` it is rebuilt in the parent: the same type for mpdp and built-in errors (else a
        ProtocolError naming the type), with the child's traceback as a note. A child process that dies
        without reporting is a PartyUnavailableError.
    """
    names = tuple(roles)
    if not names:
        raise ParameterError(explain("roles", dict(roles), "at least one party", "pass {'alice': role, ...}"))
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ParameterError(explain("timeout", timeout, "a number of seconds > 0", "pass e.g. timeout=60"))
    for name, role in roles.items():
        if not callable(role):
            raise ParameterError(explain(f"role of {name}", role, "a Party or a callable(comm)", "pass a callable"))
    if cooperative and (processes or (transport is not None and not isinstance(transport, CooperativeTransport))):
        raise ParameterError(explain("cooperative", True, "without processes=True or another transport",
                                     "choose one way to run the parties (a CooperativeTransport may be passed)"))
    forked = _forked_parties(names, forked, cooperative, transport)
    if processes and transport is not None:
        raise ParameterError(explain("transport", transport, "None with processes=True",
                                     "drop transport=: forked parties talk over their own socketpairs"))
    root = resolve(rng)

    def run_one(name: str, over: Transport) -> tuple[Any, PartyTraffic]:
        return run_party(name, roles[name], over, rng=root.spawn(name), timeout=timeout, limits=limits)

    with one_blas_thread(len(names)):
        return _run(names, run_one, transport, processes, timeout, limits.max_bytes, one_cpu, cooperative, forked)


def _forked_parties(names: tuple[str, ...], forked: Collection[str], cooperative: bool,
                    transport: Transport | None) -> tuple[str, ...]:
    """``forked`` checked against the parties and the other options; in the parties' order."""
    if isinstance(forked, str) or not all(isinstance(n, str) for n in forked):
        raise ParameterError(explain("forked", forked, "a collection of party names",
                                     f"pass e.g. forked=({forked!r},)" if isinstance(forked, str) else
                                     "pass the names of the parties to fork, e.g. forked=('dealer',)"))
    if not forked:
        return ()
    unknown = sorted(set(forked) - set(names))
    if unknown:
        raise ParameterError(explain("forked", tuple(forked), f"names among the parties {names}",
                                     f"drop {unknown} or name them as the roles do"))
    if not cooperative or transport is not None:
        raise ParameterError(explain("forked", tuple(forked), "only with cooperative=True and no transport",
                                     "pass cooperative=True (the other parties run as greenlets) and drop "
                                     "transport=, or fork every party with processes=True"))
    from mpdp.runtime.processes.fork import check_platform

    check_platform(len(names))
    return tuple(n for n in names if n in forked)


def _run(names: tuple[str, ...], run_one: Callable[[str, Transport], tuple[Any, PartyTraffic]],
         transport: Transport | None, processes: bool, timeout: float, max_bytes: int,
         one_cpu: bool, cooperative: bool, forked: tuple[str, ...] = ()) -> ProtocolRun[Any]:
    start = time.perf_counter()
    if forked:
        from mpdp.runtime.mixed import run_mixed

        mixed = run_mixed(names, run_one, forked, timeout=timeout, max_bytes=max_bytes)
        return _outcome(names, *mixed, time.perf_counter() - start)
    if processes:
        from mpdp.runtime.processes import run_forked

        children = run_forked(names, run_one, timeout=timeout, max_bytes=max_bytes)
        return _outcome(names, *children, time.perf_counter() - start)
    if transport is None:
        transport = CooperativeTransport(names) if cooperative else InMemoryTransport(names)
    elif tuple(transport.parties) != names:
        raise ParameterError(
            explain("transport.parties", transport.parties, f"the roles' parties {names}", "build it for these roles")
        )
    if cooperative:
        return _outcome(names, *run_cooperative(names, run_one, transport), time.perf_counter() - start)
    memory: Transport = transport
    results: dict[str, Any] = {}
    traffic: dict[str, PartyTraffic] = {}
    failures: list[tuple[float, str, BaseException]] = []
    ended: set[str] = set()
    changed = threading.Condition()
    cpus = party_threads_on_one_cpu(len(names)) if one_cpu else None

    def target(name: str) -> None:
        try:
            pin_this_thread(cpus)  # the thread ends with the run: nothing to restore
            result, party_traffic = run_one(name, memory)
            with changed:
                results[name] = result
                traffic[name] = party_traffic
        except BaseException as exc:  # re-raised in the caller's thread below
            with changed:
                failures.append((time.monotonic(), name, exc))
            memory.abort(f"{name} failed with {type(exc).__name__}: {exc}")
        finally:
            with changed:
                ended.add(name)
                changed.notify_all()

    threads = [threading.Thread(target=target, args=(n,), name=f"mpdp-party-{n}", daemon=True) for n in names]
    for thread in threads:
        thread.start()
    stuck = _wait_for_parties(names, ended, failures, changed, grace=min(timeout, ABORT_GRACE))
    if stuck:
        _, first, exc = min(failures, key=lambda f: (isinstance(f[2], ProtocolAbortError), f[0]))
        exc.add_note(f"{' and '.join(stuck)} still running {min(timeout, ABORT_GRACE):g} s after {first} failed, "
                     "computing without sending or receiving (stuck or spinning): left behind as a daemon thread, "
                     "since a thread cannot be stopped from outside (processes=True kills a stuck party's process)")
    return _outcome(names, results, traffic, failures, time.perf_counter() - start)


#: seconds the threaded runner waits, once a party has failed, for the others to end before it reports the failure
ABORT_GRACE = 1.0


def _wait_for_parties(names: tuple[str, ...], ended: set[str], failures: list[tuple[float, str, BaseException]],
                      changed: threading.Condition, *, grace: float) -> list[str]:
    """Wait until every party thread has ended, or until ``grace`` seconds after the first failure; returns the
    parties still running then.

    After a failure the transport is aborted, so a party waiting for a message or sending one ends at once; one
    that computes without communicating (a stuck or spinning role) would keep the run waiting for as long as it
    computes: the run reports the failure without it instead, so a ``timeout`` bounds the run as it does over the
    network.
    """
    with changed:
        while len(ended) < len(names):
            if failures:
                deadline = min(f[0] for f in failures) + grace
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return [n for n in names if n not in ended]
                changed.wait(remaining)
            else:
                changed.wait()
    return []


def _outcome(names: tuple[str, ...], results: dict[str, Any], traffic: dict[str, PartyTraffic],
             failures: list[tuple[float, str, BaseException]], seconds: float) -> ProtocolRun[Any]:
    if failures:
        # Prefer a genuine failure over the ProtocolAbortErrors it induced in the other parties.
        failures.sort(key=lambda f: (isinstance(f[2], ProtocolAbortError), f[0]))
        _, name, exc = failures[0]
        exc.add_note(f"raised by party {name!r}")
        raise exc
    return ProtocolRun(results={n: results[n] for n in names}, traffic={n: traffic[n] for n in names},
                       seconds=seconds)
