"""The trusted dealer and the provider interface."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.ring import Ring
from mpdp.errors import MalformedMessageError, ParameterError, ProtocolAbortError
from mpdp.protocols.mpc import (
    BeaverTriple,
    DealerProvider,
    MPCSession,
    TripleSource,
    TrustedDealer,
    WithTriplesFrom,
)
from mpdp.protocols.mpc.dealer import reply_chunks
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, run_protocol
from tests.protocols.mpc.harness import run_mpc


def test_dealer_refuses_parties_running_different_programs() -> None:
    def program(s: MPCSession) -> None:
        a = s.public(np.ones(3) if s.comm.name == "alice" else np.ones(4))
        a * a

    with pytest.raises(ProtocolAbortError, match="different programs"):
        run_mpc(program)


def test_dealer_sends_to_party_zero_only_and_reports_what_it_dealt() -> None:
    def program(s: MPCSession) -> None:
        a = s.public(np.ones(1000))
        (a * a).reveal()

    run = run_mpc(program, parties=3)
    dealer = run.traffic["dealer"]
    assert set(dealer.sent_to) == {"alice", "bob", "carol"}
    assert dealer.sent_to["bob"] < 200 and dealer.sent_to["carol"] < 200  # the stream key only
    assert dealer.sent_to["alice"] > 8000 * 3  # corrections of c = a^2 + r and of r's two wrap parts
    assert run.results["dealer"]["correlations"] == 1  # one masked square (square pair and truncation mask)


class CountingTriples(TripleSource):
    """A triple source that wraps a dealer's and counts calls (stands in for an HE-based source)."""

    def __init__(self, inner: DealerProvider) -> None:
        self.inner = inner
        self.calls = 0

    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        self.calls += 1
        return self.inner.mul_triple(ring, a_shape, b_shape)

    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        self.calls += 1
        return self.inner.matmul_triple(ring, a_shape, b_shape)


def test_triples_can_come_from_another_source() -> None:
    def role(comm: Comm) -> tuple[float, int]:
        dealer = DealerProvider(comm, dealer="dealer")
        triples = CountingTriples(dealer)
        with MPCSession(comm, provider=WithTriplesFrom(triples, rest=dealer), parties=dealer.parties) as s:
            a = s.input("alice", np.array([1.5, 2.0]) if comm.name == "alice" else None, bound=2.0)
            b = s.input("bob", np.array([4.0, -0.5]) if comm.name == "bob" else None, bound=4.0)
            value = float((a * b).sum().reveal())
        return value, triples.calls

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(1))
    assert run.results["alice"] == (5.0, 1)


def test_session_checks_its_parties() -> None:
    def role(comm: Comm) -> None:
        with pytest.raises(ParameterError, match="parties"):
            MPCSession.with_dealer(comm, parties=("alice", "zoe"))

    run_protocol({"alice": role, "dealer": lambda comm: None}, rng=RandomSource.seeded(2))


def test_replies_come_in_doubling_chunks_that_cover_the_request() -> None:
    chunks = reply_chunks(70)
    assert [c.stop - c.start for c in chunks] == [2, 4, 8, 16, 32, 8]
    assert [i for c in chunks for i in range(c.start, c.stop)] == list(range(70))
    assert reply_chunks(0) == [] and [c.stop for c in reply_chunks(1)] == [1]


@pytest.mark.parametrize("reply", [
    None,  # the well-formed reply: accepted
    np.zeros(2, dtype=np.uint64),  # too few correction words for the chunk
    np.zeros(6, dtype=np.uint64),  # too many
    np.zeros((1, 3), dtype=np.uint64),  # not flat
    np.zeros(3, dtype=np.int64),  # wrong dtype
    [{"c": np.zeros(3, dtype=np.uint64)}],  # a list of dicts (one per correlation)
    [np.zeros(3, dtype=np.uint64)],  # a list of arrays
])
def test_party_zero_refuses_a_malformed_dealer_reply(reply: object) -> None:
    # one Z_2^64 triple of shape (3,): the reply is one chunk holding party 0's correction of c
    def dealer(comm: Comm) -> None:
        for p in ("alice", "bob"):
            comm.send(p, comm.rng.bytes(32), label="mpc.dealer.seed")
        for p in ("alice", "bob"):
            comm.recv(p, label="mpc.dealer.request")
        comm.send("alice", np.zeros(3, dtype=np.uint64) if reply is None else reply,
                  label="mpc.dealer.correlations")
        for p in ("alice", "bob"):
            comm.recv(p, label="mpc.dealer.request")  # "close"

    def role(comm: Comm) -> None:
        with MPCSession.with_dealer(comm) as s:
            x = s.public(np.ones(3))
            s.provider.mul_triple(x.ring, (3,), (3,))

    roles = {"alice": role, "bob": role, "dealer": dealer}
    if reply is None:
        run_protocol(roles, rng=RandomSource.seeded(4))
    else:
        with pytest.raises(MalformedMessageError, match="dealer"):
            run_protocol(roles, rng=RandomSource.seeded(4))


def test_a_repeated_long_request_travels_as_its_number() -> None:
    from mpdp.protocols.mpc.planning import PlannedProvider

    def role(comm: Comm) -> tuple[list[float], list[int]]:
        provider = PlannedProvider(DealerProvider(comm))
        out, sent = [], []
        with MPCSession(comm, provider=provider, parties=("alice", "bob")) as s:
            x = s.input("alice", np.linspace(-1, 1, 5) if comm.name == "alice" else None, bound=1.0)
            for _ in range(4):
                before = comm.traffic.sent_to.get("dealer", 0)
                with provider.planned("block"):
                    y = x
                    for _ in range(9):  # nine masked squares: a plan of nine correlations
                        y = (y * 0.5).square()
                    out.append(float(y.sum().reveal()))
                sent.append(comm.traffic.sent_to.get("dealer", 0) - before)
        return out, sent

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(5))
    values, sent = run.results["alice"]
    assert run.results["bob"][0] == values
    # block 1 asks operation by operation, block 2 sends the plan, blocks 3 and 4 only its number
    assert sent[2] == sent[3] < 100 < sent[1]


def test_a_request_by_number_is_answered_in_one_message() -> None:
    from mpdp.protocols.mpc.planning import PlannedProvider

    assert reply_chunks(9, whole=True) == [slice(0, 9)] and reply_chunks(0, whole=True) == []

    def role(comm: Comm) -> list[int]:
        provider = PlannedProvider(DealerProvider(comm))
        received = []
        with MPCSession(comm, provider=provider, parties=("alice", "bob")) as s:
            x = s.input("alice", np.linspace(-1, 1, 5) if comm.name == "alice" else None, bound=1.0)
            for _ in range(4):
                before = comm.traffic.messages_received
                with provider.planned("block"):
                    y = x
                    for _ in range(9):
                        y = (y * 0.5).square()
                    y.sum().reveal()
                received.append(comm.traffic.messages_received - before)
        return received

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(7))
    from_dealer = [a - b for a, b in zip(run.results["alice"], run.results["bob"], strict=True)]
    # 18 correlations (a truncation and a masked square per step): operation by operation (18 replies), the
    # plan as a list (chunks of 2, 4, 8, 4), then by number (one message; it was 4 before)
    assert from_dealer == [18, 4, 1, 1]


def test_the_dealer_refuses_an_unknown_request_number() -> None:
    def role(comm: Comm) -> None:
        DealerProvider(comm)
        comm.send("dealer", 3, label="mpc.dealer.request")

    with pytest.raises(MalformedMessageError, match="remembered requests"):
        run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(6))


def test_retain_drops_the_oldest_unwanted_correlations_and_their_replies_are_still_read() -> None:
    """``retain`` keeps the latest copies of the wanted correlations and drops the rest, even those whose
    corrections party 0 has not received yet: the replies behind them are still read in request order (by a
    later operation and at close), and the computation after it is right."""
    from mpdp.crypto.correlations import spec

    def role(comm: Comm) -> tuple[list[tuple[str, tuple[int, ...]]], float]:
        provider = DealerProvider(comm)
        with MPCSession(comm, provider=provider, parties=("alice", "bob")) as s:
            ring = s.fmt.ring
            square, product = spec("square", ring.bits, (3,)), spec("mul", ring.bits, (4,), (4,))
            provider.prefetch([square, product, square])  # party 0's corrections are not received yet
            provider.retain([square])  # the later square stays: the first square and the product go
            kept = [(entry[0].kind, entry[0].shape) for entry in provider._ready]
            x = s.input("alice", np.array([1.0, 2.0, 3.0, 4.0]) if comm.name == "alice" else None, bound=8.0)
            value = float((x * x).sum().reveal())  # a product of shape (4,): fetched anew
            provider.prefetch([square, spec("square", ring.bits, (5,))])  # the first is queued: one fetched
            provider.retain([])  # both dropped, the second's correction pending: close still reads its reply
        return kept, value

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(8))
    traffic = run.traffic.values()
    assert sum(t.messages_received for t in traffic) == sum(t.messages_sent for t in traffic)  # none left unread
    for name in ("alice", "bob"):
        kept, value = run.results[name]
        assert kept == [("square", (3,))]
        assert value == pytest.approx(30.0, abs=1e-3)


def test_a_full_table_of_requests_replaces_the_least_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for two remembered requests, A B A C A C B: C takes B's number (B was requested least
    recently), so the next A and C travel as numbers, and B, asked again, travels in full (a table frozen at
    its first two requests would have sent both Cs in full and B by number). Both sides keep the same table:
    replies keep their lengths, and a product computed afterwards is right."""
    import mpdp.protocols.mpc.dealer as dealer_module
    from mpdp.crypto.correlations import spec

    monkeypatch.setattr(dealer_module, "_REMEMBER_MAX", 2)
    order = "ABACACB"

    def role(comm: Comm) -> tuple[list[int], float]:
        provider = DealerProvider(comm)
        sent = []
        with MPCSession(comm, provider=provider, parties=("alice", "bob")) as s:
            bits = s.fmt.ring.bits
            lists = {name: [spec("square", bits, (n,))] * 8 for name, n in zip("ABC", (3, 4, 5), strict=True)}
            for name in order:
                before = comm.traffic.sent_to.get("dealer", 0)
                provider.prefetch(lists[name])
                provider.receive_prefetched()
                provider.retain([])
                sent.append(comm.traffic.sent_to.get("dealer", 0) - before)
            x = s.input("alice", np.array([1.0, 2.0, 3.0]) if comm.name == "alice" else None, bound=8.0)
            value = float((x * x).sum().reveal())
        return sent, value

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(9))
    sent, value = run.results["alice"]
    assert value == pytest.approx(14.0, abs=1e-3)
    by_number = [n < 200 for n in sent]  # a number: ~90 bytes; eight specs: ~1,100
    # A, B in full; A by number; C in full (replacing B); A, C by number; B in full again
    assert by_number == [False, False, True, False, True, True, False]
