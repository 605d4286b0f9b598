"""Cooperative runs (greenlets): the same results and traffic as threads, failures that never hang."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mpdp.errors import ParameterError
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, CooperativeTransport, InMemoryTransport, PartyTraffic, Transport, run_protocol
from mpdp.runtime.cooperative import run_cooperative
from tests.runtime.roles import mpc_program


def _same_runs(roles: dict[str, Any], seed: int) -> tuple[Any, Any]:
    threads = run_protocol(roles, rng=RandomSource.seeded(seed))
    greenlets = run_protocol(roles, rng=RandomSource.seeded(seed), cooperative=True)
    return threads, greenlets


@pytest.mark.parametrize("length", [1, 257])
def test_secure_sum_matches_threads_exactly(length: int) -> None:
    rng = RandomSource.seeded(length)
    inputs = {p: rng.spawn(p).integers(-(10**6), 10**6, length) for p in ("a", "b", "c")}
    threads, greenlets = _same_runs({p: secure_sum_role(v) for p, v in inputs.items()}, length)
    for name in inputs:
        np.testing.assert_array_equal(greenlets.results[name], threads.results[name])
        assert greenlets.traffic[name] == threads.traffic[name]
    assert greenlets.communication() == threads.communication()


def test_an_mpc_program_with_a_dealer_matches_threads() -> None:
    # many rounds, three parties, the dealer's requests and replies interleaved with the openings
    threads, greenlets = _same_runs({"alice": mpc_program, "bob": mpc_program, "dealer": TrustedDealer()}, 5)
    for name in ("alice", "bob"):
        np.testing.assert_array_equal(greenlets.results[name], threads.results[name])
    assert greenlets.communication() == threads.communication()
    assert greenlets.rounds > 8


def test_a_failing_party_aborts_the_others_and_its_error_surfaces() -> None:
    def bad(comm: Comm) -> None:
        comm.send("w1", 1, label="x")
        raise RuntimeError("disk on fire")

    def waiter(comm: Comm) -> None:
        comm.recv("bad", label="x")
        comm.recv("bad", label="x")

    with pytest.raises(RuntimeError, match="disk on fire") as info:
        run_protocol({"w1": waiter, "bad": bad, "w2": waiter}, cooperative=True)
    assert any("'bad'" in note for note in info.value.__notes__)


def test_a_party_runs_until_it_waits_in_the_parties_order() -> None:
    # the schedule is deterministic: a party is switched out only when it waits for a missing message
    events: list[str] = []

    def role(comm: Comm) -> None:
        events.append(f"{comm.name} starts")
        comm.send(comm.peers[0], comm.name, label="x")
        events.append(f"{comm.name} sent")
        events.append(f"{comm.name} got {comm.recv(comm.peers[0], label='x')}")

    run_protocol({"a": role, "b": role}, cooperative=True)
    assert events == ["a starts", "a sent", "b starts", "b sent", "b got a", "a got b"]


def _never_called(name: str, over: Transport) -> tuple[Any, PartyTraffic]:
    raise AssertionError(f"{name} ran over {over}")


def test_bad_configuration_is_refused() -> None:
    def role(comm: Comm) -> None:
        return None

    with pytest.raises(ParameterError, match="cooperative"):
        run_protocol({"a": role, "b": role}, cooperative=True, processes=True)
    with pytest.raises(ParameterError, match="cooperative"):
        run_protocol({"a": role, "b": role}, cooperative=True, transport=InMemoryTransport(("a", "b")))
    with pytest.raises(ParameterError, match="parties"):
        run_protocol({"a": role, "b": role}, cooperative=True, transport=CooperativeTransport(("a", "c")))
    with pytest.raises(ParameterError, match="CooperativeTransport"):
        run_cooperative(("a", "b"), _never_called, InMemoryTransport(("a", "b")))
    lone = CooperativeTransport(("a", "b"))
    with pytest.raises(ParameterError, match="outside a party"):
        lone.endpoint("a").recv("b", 1.0)


def test_a_transport_can_be_reused_by_the_caller() -> None:
    transport = CooperativeTransport(("a", "b"))

    def a(comm: Comm) -> int:
        comm.send("b", 20, label="x")
        return int(comm.recv("b", label="y"))

    def b(comm: Comm) -> None:
        comm.send("a", comm.recv("a", label="x") + 1, label="y")

    run = run_protocol({"a": a, "b": b}, transport=transport, cooperative=True)
    assert run.results["a"] == 21 and run.rounds == 2
