"""Parties as forked processes (run_protocol(..., processes=True)): the same seeded results and traffic as threads,
typed failures naming the party, and no process or socket left behind."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpdp.datasets.synthetic import mixed_tabular
from mpdp.errors import (
    MalformedMessageError,
    ParameterError,
    PartyUnavailableError,
    ProtocolAbortError,
    ProtocolError,
    ShapeMismatchError,
)
from mpdp.learning.dpvi.model import VerticalDPVI
from mpdp.learning.dpvi.parties import PartyOutcome
from mpdp.protocols.aggregation import AggregationSpec, aggregation_aggregator, aggregation_client, aggregation_server
from mpdp.protocols.inner_product import CrossProductSpec, SharesBackend, cross_product, cross_product_share
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, run_protocol
from tests.runtime.roles import fails

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="forked parties need os.fork"),
              pytest.mark.usefixtures("nothing_left_behind")]


def _both(roles: dict[str, Any], seed: int) -> tuple[Any, Any]:
    threads = run_protocol(roles, rng=RandomSource.seeded(seed))
    forked = run_protocol(roles, rng=RandomSource.seeded(seed), processes=True)
    assert {n: t.as_dict() for n, t in forked.traffic.items()} == {n: t.as_dict() for n, t in threads.traffic.items()}
    assert forked.communication() == threads.communication() and forked.rounds > 0
    return threads, forked


def test_secure_inner_product_with_a_dealer_is_bit_identical() -> None:
    rng = RandomSource.seeded(1)
    X, Y = 2 * rng.random((20, 3)) - 1, 2 * rng.random((20, 2)) - 1
    spec = CrossProductSpec("alice", "bob", 20, 3, 2, SharesBackend())
    roles = {"alice": lambda c: cross_product_share(c, "bob", X, left=True, backend="shares", dealer="dealer"),
             "bob": lambda c: cross_product_share(c, "alice", Y, left=False, backend="shares", dealer="dealer"),
             "dealer": lambda c: cross_product(c, None, spec)}
    threads, forked = _both(roles, 2)
    for name in ("alice", "bob"):
        assert forked.results[name].dtype == threads.results[name].dtype
        assert np.array_equal(forked.results[name], threads.results[name])
    assert np.max(np.abs(forked.results["alice"] + forked.results["bob"] - X.T @ Y)) < 1e-3


def test_secure_aggregation_is_bit_identical() -> None:
    spec = AggregationSpec(server="server", aggregators=("server", "agg1"), clients={"g": 5, "h": 3}, dim=4, bound=1.0)
    rng = RandomSource.seeded(3)
    x = {p: 2 * rng.spawn(p).random((k, spec.dim)) - 1 for p, k in spec.clients.items()}
    roles = {"server": lambda c: aggregation_server(c, spec).total,  # type: ignore[union-attr]
             "agg1": lambda c: aggregation_aggregator(c, spec) and None,
             "g": lambda c: aggregation_client(c, spec, x["g"]), "h": lambda c: aggregation_client(c, spec, x["h"])}
    threads, forked = _both(roles, 4)
    assert np.array_equal(forked.results["server"], threads.results["server"])
    np.testing.assert_allclose(forked.results["server"], x["g"].sum(0) + x["h"].sum(0), atol=1e-4)  # 8 x 2^-16


def test_an_mpc_session_with_a_dealer_is_bit_identical() -> None:
    parties = ("a", "b", "c")

    def party(comm: Comm) -> Any:
        with MPCSession.with_dealer(comm, parties=parties) as session:
            x = session.input("a", np.array([0.5, -1.25, 2.0]) if comm.name == "a" else None, bound=4.0)
            y = session.input("b", np.array([1.5, 0.25, -0.75]) if comm.name == "b" else None, bound=4.0)
            return (x * y).reveal()

    threads, forked = _both({**dict.fromkeys(parties, party), "dealer": TrustedDealer()}, 5)
    for name in parties:
        assert np.array_equal(forked.results[name], threads.results[name])
    np.testing.assert_allclose(forked.results["a"], [0.75, -0.3125, -1.5], atol=1e-6)


def test_vertical_dpvi_gives_the_same_posterior_in_processes() -> None:
    data = mixed_tabular(120, numeric=2, categorical=1, categories=3, rng=RandomSource.seeded(11))
    groups = (("num0",), ("num1", "cat0", "y"))
    common: dict[str, Any] = {"components": 2, "epochs": 1, "batch_size": 60, "noise_multiplier": 0.5,
                              "epsilon": None, "batching": "disjoint"}
    threads = VerticalDPVI(rng=RandomSource.seeded(12), **common).fit(data, groups)
    forked = VerticalDPVI(rng=RandomSource.seeded(12), processes=True, **common).fit(data, groups)
    assert np.array_equal(forked.posterior_.mu, threads.posterior_.mu)
    assert np.array_equal(forked.posterior_.omega, threads.posterior_.omega)
    assert np.array_equal(forked.trace_.epochs[0].mu, threads.trace_.epochs[0].mu)
    assert forked.trace_.batch_sizes == threads.trace_.batch_sizes
    assert forked.communication_ == threads.communication_


def test_party_outcome_wire_form_is_strict() -> None:
    with pytest.raises(MalformedMessageError, match="PartyOutcome"):
        PartyOutcome.from_wire({"posterior": None})


class _OddError(Exception):
    pass


def test_the_first_failure_is_re_raised_with_its_type_party_and_traceback() -> None:
    with pytest.raises(ShapeMismatchError, match="rows do not line up") as info:
        run_protocol({"alice": fails, "bob": fails}, rng=RandomSource.seeded(0), processes=True)
    notes = "\n".join(info.value.__notes__)
    assert "raised by party 'bob'" in notes and "in fails" in notes

    def odd(comm: Comm) -> None:
        raise _OddError("not an mpdp error")

    with pytest.raises(ProtocolError, match=r"party 'alice' failed with .*_OddError: not an mpdp error"):
        run_protocol({"alice": odd, "bob": lambda c: c.recv("alice")}, processes=True)


def test_a_result_the_codec_cannot_carry_names_the_party_and_the_fix() -> None:
    with pytest.raises(ParameterError, match=r"party 'bob' returned a set .*to_wire\(\).*processes=False"):
        run_protocol({"alice": lambda c: 1, "bob": lambda c: {1, 2}}, processes=True)


def test_a_dead_party_is_unavailable_and_a_hanging_one_times_out() -> None:
    def dies(comm: Comm) -> None:
        os._exit(3)

    start = time.monotonic()
    with pytest.raises(PartyUnavailableError, match=r"'alice'.*exit code 3"):
        run_protocol({"alice": dies, "bob": lambda c: c.recv("alice")}, processes=True, timeout=30)
    assert time.monotonic() - start < 10  # found at once, not after the timeout

    def hangs(comm: Comm) -> None:
        time.sleep(60)

    with pytest.raises(PartyUnavailableError, match=r"bob received nothing from alice within 0\.5 s"):
        run_protocol({"alice": hangs, "bob": lambda c: c.recv("alice")}, processes=True, timeout=0.5)


def test_an_aborted_party_stops_waiting() -> None:
    def waits_for_carol(comm: Comm) -> None:
        comm.recv("carol")

    def fails(comm: Comm) -> None:
        raise ValueError("carol's input is bad")

    with pytest.raises(ValueError, match="carol's input is bad"):
        run_protocol({"alice": waits_for_carol, "bob": waits_for_carol, "carol": fails}, processes=True,
                     timeout=30)


def test_processes_refuse_a_transport() -> None:
    from mpdp.runtime import InMemoryTransport

    with pytest.raises(ParameterError, match="processes=True"):
        run_protocol({"a": lambda c: 1}, transport=InMemoryTransport(("a",)), processes=True)


def test_abort_reaches_a_party_blocked_on_a_live_peer() -> None:
    # alice waits for bob, who waits for carol; carol fails: the runner tells alice to stop at once
    def alice(comm: Comm) -> None:
        comm.recv("bob")

    def bob(comm: Comm) -> None:
        comm.recv("carol")
        comm.send("alice", 1)

    def carol(comm: Comm) -> None:
        time.sleep(0.2)
        raise ProtocolAbortError("carol gives up")

    start = time.monotonic()
    with pytest.raises(ProtocolAbortError, match="carol gives up"):
        run_protocol({"alice": alice, "bob": bob, "carol": carol}, processes=True, timeout=30)
    assert time.monotonic() - start < 10


def test_a_message_longer_than_the_limits_is_refused_naming_its_sender() -> None:
    from mpdp.runtime import CodecLimits

    def alice(comm: Comm) -> None:
        comm.send("bob", b"x" * 10_000)

    with pytest.raises(MalformedMessageError, match="from alice"):
        run_protocol({"alice": alice, "bob": lambda c: c.recv("alice")}, processes=True,
                     limits=CodecLimits(max_bytes=1_000))


_ORPHAN_SCRIPT = """
import os, sys, time
from mpdp.runtime import run_protocol

def alice(comm):
    with open(sys.argv[1], "w") as out:
        out.write(str(os.getpid()))
    time.sleep(60)

run_protocol({"alice": alice, "bob": lambda c: c.recv("alice")}, processes=True, timeout=60)
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is dead)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return not any(line.startswith("State:") and "Z" in line.split()[1] for line in status.splitlines())


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_the_parties_die_with_a_killed_runner(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    pid_file = tmp_path / "alice.pid"
    runner = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT, str(pid_file)])
    try:
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        alice = int(pid_file.read_text())
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        deadline = time.monotonic() + 5
        while _alive(alice) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(alice), "a party outlived its runner"
    finally:
        runner.kill()
        runner.wait()


def test_large_messages_crossing_at_once_do_not_deadlock() -> None:
    # each side sends more than a socket buffer holds before reading: sends must not block
    def role(comm: Comm) -> list[int]:
        peer = comm.peers[0]
        big = np.frombuffer(comm.rng.bytes(12_000_000), dtype=np.uint8)
        comm.send(peer, big, label="big")
        comm.send(peer, comm.index, label="small")
        got = comm.recv(peer, label="big")
        return [int(got[:1000].sum()), int(comm.recv(peer, label="small")), int(big[:1000].sum())]

    threads, forked = _both({"alice": role, "bob": role}, 6)
    assert forked.results == threads.results and forked.results["alice"][1] == 1


def test_without_fork_the_error_points_to_threads_or_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "fork")
    with pytest.raises(ParameterError, match=r"processes=False.*network transport"):
        run_protocol({"a": lambda c: 1, "b": lambda c: 2}, processes=True)


def test_bursts_of_frames_of_every_size_arrive_whole_and_in_order() -> None:
    # Frames sent straight to the kernel, cut by it anywhere (in a header or a body) and queued behind each
    # other when its buffer is full; read in short and long pieces: each arrives whole, in order.
    def role(comm: Comm) -> list[int]:
        peer = comm.peers[0]
        sizes = [int(s) for s in comm.rng.integers(0, 1 << 19, 60)] + [0, 1, 7, 8, 9, (1 << 16) - 40]
        sent = [np.frombuffer(comm.rng.bytes(s), dtype=np.uint8) for s in sizes]
        for array in sent:
            comm.send(peer, array, label="burst")
        got = [comm.recv(peer, label="burst") for _ in sizes]
        return [len(g) for g in got] + [int(sum(int(g.sum()) for g in got)), int(sum(int(s.sum()) for s in sent))]

    threads, forked = _both({"alice": role, "bob": role}, 8)
    assert forked.results == threads.results
    assert forked.results["alice"][-2] == forked.results["bob"][-1]


def test_a_receive_polls_its_socket_briefly_before_it_sleeps() -> None:
    # a frame already there is taken by the poll; with none, the poll gives up and the caller sleeps in select
    import socket
    import struct

    from mpdp.runtime.processes.child import SocketEndpoint as _SocketEndpoint

    mine, theirs = socket.socketpair()
    control, runner = socket.socketpair()
    endpoint = _SocketEndpoint("alice", {"bob": mine}, control, 5.0, 1 << 20)
    try:
        link = endpoint._links["bob"]
        assert not endpoint._spin(link) and not link.inbox.frames
        theirs.sendall(struct.pack("<Q", 3) + b"abc")
        assert endpoint._spin(link) and list(link.inbox.frames) == [b"abc"]
        assert endpoint.recv("bob", 1.0) == b"abc"
        theirs.close()  # the peer has gone: the poll stops at the end of the stream
        assert not endpoint._spin(link) and link.inbox.eof
    finally:
        endpoint.close()  # its sockets and selector
        for s in (theirs, runner):
            s.close()
