"""Some parties forked, the others greenlets (run_protocol(..., cooperative=True, forked=...)): the same seeded
results and traffic as threads and greenlets, failures from either kind of party surfacing with their party's
name, and no process or socket left behind."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np
import pytest

from mpdp.errors import ParameterError, PartyUnavailableError, ProtocolAbortError, ShapeMismatchError
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.parties import DataParty, VerticalSetup
from mpdp.learning.dpvi.training import DPVISettings
from mpdp.learning.dpvi.variational import MeanFieldGaussian
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, CooperativeTransport, ProtocolRun, run_protocol
from mpdp.runtime.mixed import can_fork
from tests.runtime.roles import fails, mpc_program

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="forked parties need os.fork"),
              pytest.mark.usefixtures("nothing_left_behind")]


def _three_ways(roles: dict[str, Any], seed: int, forked: tuple[str, ...]) -> list[ProtocolRun[Any]]:
    """Threads, greenlets and greenlets with ``forked`` in their own processes; their traffic must agree."""
    runs = [run_protocol(roles, rng=RandomSource.seeded(seed)),
            run_protocol(roles, rng=RandomSource.seeded(seed), cooperative=True),
            run_protocol(roles, rng=RandomSource.seeded(seed), cooperative=True, forked=forked)]
    for run in runs[1:]:
        assert {n: t.as_dict() for n, t in run.traffic.items()} == {n: t.as_dict() for n, t in runs[0].traffic.items()}
        assert run.communication() == runs[0].communication()
    return runs


@pytest.mark.parametrize("forked", [("dealer",), ("bob",), ("bob", "dealer")])
def test_an_mpc_program_with_a_dealer_is_bit_identical(forked: tuple[str, ...]) -> None:
    # a forked dealer; a forked computing party (openings cross the socket); two forked parties (their own pair)
    roles = {"alice": mpc_program, "bob": mpc_program, "dealer": TrustedDealer(parties=("alice", "bob"))}
    threads, greenlets, mixed = _three_ways(roles, 5, forked)
    for name in ("alice", "bob"):
        assert np.array_equal(mixed.results[name], threads.results[name])
        assert np.array_equal(greenlets.results[name], threads.results[name])
    assert mixed.results["dealer"] == threads.results["dealer"] and mixed.rounds > 8
    np.testing.assert_allclose(mixed.results["alice"], threads.results["alice"])


def test_a_dpvi_step_releases_the_same_gradient() -> None:
    from mpdp.datasets.synthetic import mixed_tabular

    data = mixed_tabular(60, numeric=2, categorical=1, categories=3, rng=RandomSource.seeded(11))
    model = MixtureModel.from_dataset(data, components=2)
    groups = (("num0",), ("num1", "cat0", "y"))
    setup = VerticalSetup(model, ("alice", "bob"), groups, data.n,
                          DPVISettings(epochs=1, batch_size=20, clip=2.0, noise_multiplier=1.0))
    thetas = [MeanFieldGaussian.initial(model.dim, rng=RandomSource.seeded(i)).draw(RandomSource.seeded(i))[0]
              for i in range(3)]
    batch = np.arange(20, dtype=np.int64)

    def role(name: str) -> Any:
        party = DataParty(name, setup, model.values_of(data, groups[setup.parties.index(name)]))

        def run(comm: Comm) -> list[Any]:
            session, provider = party.open_session(comm)
            with session:  # the next step's correlations requested ahead, as in training
                return [party.secure_step(session, provider, theta, batch, next_batch_size=20 if i < 2 else None)
                        for i, theta in enumerate(thetas)]
        return run

    roles = {"alice": role("alice"), "bob": role("bob"), "dealer": TrustedDealer(parties=setup.parties)}
    threads, _, mixed = _three_ways(roles, 3, ("dealer",))
    for mine, theirs in zip(mixed.results["alice"], threads.results["alice"], strict=True):
        assert np.array_equal(mine, theirs)


def test_sums_with_large_messages_both_ways_do_not_block_the_greenlets() -> None:
    # more than a socket buffer each way at once: the greenlets' sends to the forked party are buffered
    def role(comm: Comm) -> list[int]:
        big = np.frombuffer(comm.rng.bytes(12_000_000), dtype=np.uint8)
        for peer in comm.peers:
            comm.send(peer, big, label="big")
        got = [comm.recv(peer, label="big") for peer in comm.peers]
        return [int(g[:1000].sum()) for g in got] + [int(big[:1000].sum())]

    threads, _, mixed = _three_ways({"a": role, "b": role, "c": role}, 6, ("b",))
    assert mixed.results == threads.results
    inputs = {p: RandomSource.seeded(7).spawn(p).integers(-(10**6), 10**6, 257) for p in ("a", "b", "c")}
    threads, _, mixed = _three_ways({p: secure_sum_role(v) for p, v in inputs.items()}, 7, ("a", "c"))
    for name in inputs:
        np.testing.assert_array_equal(mixed.results[name], threads.results[name])


@pytest.mark.parametrize("forked", [("bob",), ("alice",)])
def test_the_first_failure_surfaces_from_either_kind_of_party(forked: tuple[str, ...]) -> None:
    # bob fails in its own process (alice, a greenlet, is aborted) or as a greenlet (forked alice is aborted)
    start = time.monotonic()
    with pytest.raises(ShapeMismatchError, match="rows do not line up") as info:
        run_protocol({"alice": fails, "bob": fails, "carol": lambda c: c.recv("alice")},
                     cooperative=True, forked=forked, timeout=30)
    assert "raised by party 'bob'" in "\n".join(info.value.__notes__)
    assert time.monotonic() - start < 10  # the others were aborted, not timed out


def test_a_dead_forked_party_is_unavailable_and_a_hanging_one_times_out() -> None:
    def dies(comm: Comm) -> None:
        os._exit(3)

    start = time.monotonic()
    with pytest.raises(PartyUnavailableError, match=r"'alice'.*exit code 3"):
        run_protocol({"alice": dies, "bob": lambda c: c.recv("alice")}, cooperative=True, forked=("alice",),
                     timeout=30)
    assert time.monotonic() - start < 10  # found at once, not after the timeout

    def hangs(comm: Comm) -> None:
        time.sleep(60)

    with pytest.raises(PartyUnavailableError, match=r"bob received nothing from alice within 0\.5 s"):
        run_protocol({"alice": hangs, "bob": lambda c: c.recv("alice")}, cooperative=True, forked=("alice",),
                     timeout=0.5)


def test_greenlets_waiting_on_each_other_deadlock_at_once_while_a_forked_party_computes() -> None:
    def waits(comm: Comm) -> None:
        comm.recv("b" if comm.name == "a" else "a")

    def computes(comm: Comm) -> None:
        time.sleep(30)

    start = time.monotonic()
    with pytest.raises(ProtocolAbortError, match="deadlock"):
        run_protocol({"a": waits, "b": waits, "c": computes}, cooperative=True, forked=("c",), timeout=60)
    assert time.monotonic() - start < 10  # the sleeping child was told to abort, then killed after the grace


def test_a_finished_greenlet_is_finished_for_the_forked_party_once_its_last_bytes_are_delivered() -> None:
    big = np.arange(3_000_000, dtype=np.uint64)  # 24 MB: more than the socket buffers take at once

    def greenlet(comm: Comm) -> None:
        comm.send("b", big, label="big")  # and finishes at once: the runner delivers the rest, then closes

    def forked(comm: Comm, again: bool) -> int:
        total = int(comm.recv("a", label="big").sum())
        comm.send("c", total, label="total")
        if again:
            comm.recv("a")
        return total

    run = run_protocol({"a": greenlet, "b": lambda c: forked(c, False), "c": lambda c: c.recv("b", label="total")},
                       cooperative=True, forked=("b",))
    assert run.results["b"] == run.results["c"] == int(big.sum())
    start = time.monotonic()
    with pytest.raises(ProtocolAbortError, match="a has finished"):
        run_protocol({"a": greenlet, "b": lambda c: forked(c, True), "c": lambda c: c.recv("b", label="total")},
                     cooperative=True, forked=("b",), timeout=30)
    assert time.monotonic() - start < 10


def test_bad_forked_arguments_say_how_to_fix_them(monkeypatch: pytest.MonkeyPatch) -> None:
    roles = {"a": lambda c: 1, "b": lambda c: 2}
    with pytest.raises(ParameterError, match="cooperative=True"):
        run_protocol(roles, forked=("b",))
    with pytest.raises(ParameterError, match="cooperative=True"):
        run_protocol(roles, cooperative=True, forked=("b",), transport=CooperativeTransport(("a", "b")))
    with pytest.raises(ParameterError, match=r"drop \['dealer'\]"):
        run_protocol(roles, cooperative=True, forked=("dealer",))
    with pytest.raises(ParameterError, match=r"forked=\('b',\)"):
        run_protocol(roles, cooperative=True, forked="b")
    assert run_protocol(roles, cooperative=True, forked=()).results == {"a": 1, "b": 2}
    assert can_fork() == (threading.active_count() == 1)  # another thread may hold a lock a fork would keep
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert can_fork()
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not can_fork()
    monkeypatch.delattr(os, "fork")
    with pytest.raises(ParameterError, match=r"processes=False.*network transport"):
        run_protocol(roles, cooperative=True, forked=("b",))


def test_a_message_from_a_forked_party_longer_than_the_limits_is_refused_naming_its_sender() -> None:
    from mpdp.errors import MalformedMessageError
    from mpdp.runtime import CodecLimits

    def alice(comm: Comm) -> None:
        comm.send("bob", b"x" * 10_000)

    with pytest.raises(MalformedMessageError, match="from alice"):
        run_protocol({"alice": alice, "bob": lambda c: c.recv("alice")}, cooperative=True, forked=("alice",),
                     limits=CodecLimits(max_bytes=1_000), timeout=30)


def test_forked_parties_run_in_their_own_processes_the_others_here() -> None:
    def pid(comm: Comm) -> int:
        for peer in comm.peers:
            comm.send(peer, os.getpid(), label="pid")
        return len({comm.recv(peer, label="pid") for peer in comm.peers} | {os.getpid()})

    run = run_protocol({"a": lambda c: (pid(c), os.getpid())[1], "b": pid, "c": pid, "d": pid}, cooperative=True,
                       forked=("b", "d"))
    assert run.results["a"] == os.getpid() and run.results["b"] == run.results["d"] == 3  # a and c share one
    assert run.results["c"] == 3
