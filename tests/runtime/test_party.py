"""The party runtime: a 3-party protocol with exact traffic counts, failures that never hang."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mpdp.errors import MalformedMessageError, ParameterError, PartyUnavailableError, ProtocolAbortError
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, InMemoryTransport, Party, run_protocol
from mpdp.runtime.transport import Endpoint


def envelope_bytes(label: str, length: int) -> int:
    """Wire size of one message carrying an int64/uint64 vector, from the codec's documented layout."""
    header = 4 + 1 + 1 + 4          # magic, version, dict tag, dict count
    seq = 4 + 3 + 1 + 8             # key length, "seq", INT tag, i64
    rnd = 4 + 5 + 1 + 8             # "round"
    lab = 4 + 5 + 1 + 4 + len(label)  # "label", STR tag, length, utf-8
    body = 4 + 4 + 1 + 1 + 1 + 8 + 8 * length  # "body", ARRAY tag, dtype, ndim, one dim, payload
    return header + seq + rnd + lab + body


@pytest.mark.parametrize("length", [1, 3, 257])
def test_three_party_secure_sum_with_exact_traffic(length: int) -> None:
    rng = RandomSource.seeded(length)
    inputs = {p: rng.spawn(p).integers(-(10**6), 10**6, length) for p in ("a", "b", "c")}
    run = run_protocol({p: secure_sum_role(v) for p, v in inputs.items()}, rng=rng)
    total = inputs["a"] + inputs["b"] + inputs["c"]
    for result in run.results.values():
        assert np.array_equal(result, total)
    per_party = 2 * envelope_bytes("share", length) + 2 * envelope_bytes("partial", length)
    for traffic in run.traffic.values():
        assert traffic.bytes_sent == per_party == traffic.bytes_received
        assert traffic.messages_sent == 4 == traffic.messages_received
        assert traffic.rounds == 2
    assert run.communication() == {"bytes": 3 * per_party, "messages": 12, "rounds": 2}


def test_runs_are_reproducible_under_a_seed_and_not_otherwise() -> None:
    def role(comm: Comm) -> bytes:
        return comm.rng.bytes(8)

    a = run_protocol({"x": role, "y": role}, rng=RandomSource.seeded(1)).results
    b = run_protocol({"x": role, "y": role}, rng=RandomSource.seeded(1)).results
    c = run_protocol({"x": role, "y": role}).results
    assert a == b and a["x"] != a["y"] and c != a


def test_sequential_chain_counts_rounds() -> None:
    def ping(comm: Comm) -> int:
        for i in range(5):
            comm.send("b", i, label="ping")
            comm.recv("b", label="pong")
        return comm.traffic.rounds

    def pong(comm: Comm) -> None:
        for _ in range(5):
            comm.send("a", comm.recv("a", label="ping"), label="pong")

    assert run_protocol({"a": ping, "b": pong}).rounds == 10


class Doubler(Party):
    """A party object holding private state between runs."""

    def __init__(self, name: str, secret: int) -> None:
        super().__init__(name)
        self._secret = secret

    def run(self, comm: Comm) -> int:
        other = comm.exchange(comm.peers[0], self._secret, label="swap")
        return int(self._secret + other)


def test_party_objects_are_roles() -> None:
    run = run_protocol({"a": Doubler("a", 2), "b": Doubler("b", 40)})
    assert run.results == {"a": 42, "b": 42}


def test_a_failing_party_aborts_the_others_and_its_error_surfaces() -> None:
    def bad(comm: Comm) -> None:
        raise RuntimeError("disk on fire")

    def waiter(comm: Comm) -> None:
        comm.recv("bad", label="x")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="disk on fire") as info:
        run_protocol({"bad": bad, "w1": waiter, "w2": waiter}, timeout=30)
    assert time.monotonic() - start < 10
    assert any("'bad'" in note for note in info.value.__notes__)


def test_silent_party_times_out_with_a_named_error() -> None:
    def sleeper(comm: Comm) -> None:
        time.sleep(1.0)

    def waiter(comm: Comm) -> None:
        comm.recv("sleeper", label="x")

    with pytest.raises(PartyUnavailableError, match="sleeper"):
        run_protocol({"sleeper": sleeper, "waiter": waiter}, timeout=0.2)


@pytest.mark.parametrize("cooperative", [False, True])
def test_deadlock_is_detected_without_waiting_for_the_timeout(cooperative: bool) -> None:
    def wait_for_other(comm: Comm) -> None:
        comm.recv(comm.peers[0], label="x")

    start = time.monotonic()
    with pytest.raises(ProtocolAbortError, match="deadlock"):
        run_protocol({"a": wait_for_other, "b": wait_for_other}, timeout=60, cooperative=cooperative)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("cooperative", [False, True])
@pytest.mark.parametrize("order", ["quits first", "waiter first"])
def test_finished_peer_is_reported(cooperative: bool, order: str) -> None:
    def quits(comm: Comm) -> None:
        return None

    def waiter(comm: Comm) -> None:
        comm.recv("quits", label="x")

    roles = {"quits": quits, "waiter": waiter} if order == "quits first" else {"waiter": waiter, "quits": quits}
    with pytest.raises(ProtocolAbortError, match="finished"):
        run_protocol(roles, cooperative=cooperative)


def test_label_mismatch_is_a_desync_error() -> None:
    def a(comm: Comm) -> None:
        comm.send("b", 1, label="step-1")

    def b(comm: Comm) -> None:
        comm.recv("a", label="step-2")

    with pytest.raises(ProtocolAbortError, match="step-2"):
        run_protocol({"a": a, "b": b})


class ReplayingTransport(InMemoryTransport):
    """Delivers the first message from a to b twice, as a replay attacker would."""

    def _send(self, src: str, dst: str, data: bytes) -> None:
        super()._send(src, dst, data)
        if src == "a" and not getattr(self, "_replayed", False):
            self._replayed = True
            super()._send(src, dst, data)


def test_replayed_message_is_detected() -> None:
    def a(comm: Comm) -> None:
        comm.send("b", 1, label="x")
        comm.send("b", 2, label="x")

    def b(comm: Comm) -> list[int]:
        return [comm.recv("a", label="x"), comm.recv("a", label="x")]

    with pytest.raises(ProtocolAbortError, match="replayed"):
        run_protocol({"a": a, "b": b}, transport=ReplayingTransport(["a", "b"]))


class GarblingEndpoint(Endpoint):
    def __init__(self, inner: Endpoint) -> None:
        self.inner, self.name = inner, inner.name

    def send(self, dst: str, data: bytes) -> None:
        self.inner.send(dst, data[:-3])

    def recv(self, src: str, timeout: float) -> bytes:
        return self.inner.recv(src, timeout)


class GarblingTransport(InMemoryTransport):
    def endpoint(self, name: str) -> Endpoint:
        inner = super().endpoint(name)
        return GarblingEndpoint(inner) if name == "a" else inner


def test_truncated_message_raises_malformed() -> None:
    def a(comm: Comm) -> None:
        comm.send("b", np.arange(10), label="x")

    def b(comm: Comm) -> None:
        comm.recv("a", label="x")

    with pytest.raises(MalformedMessageError):
        run_protocol({"a": a, "b": b}, transport=GarblingTransport(["a", "b"]))


def test_bad_configuration() -> None:
    with pytest.raises(ParameterError, match="parties"):
        InMemoryTransport(["a", "a"])
    with pytest.raises(ParameterError, match="roles"):
        run_protocol({})
    with pytest.raises(ParameterError, match="callable"):
        run_protocol({"a": 3})  # type: ignore[dict-item]
    with pytest.raises(ParameterError, match=r"transport\.parties"):
        run_protocol({"a": lambda c: None}, transport=InMemoryTransport(["b"]))

    def sends_to_self(comm: Comm) -> None:
        comm.send(comm.name, 1)

    with pytest.raises(ParameterError, match="dst"):
        run_protocol({"a": sends_to_self, "b": lambda c: None})


def _pair() -> tuple[Comm, Comm]:
    transport = InMemoryTransport(["a", "b"])
    rng = RandomSource.seeded("pair")
    return tuple(Comm(transport.endpoint(p), ["a", "b"], rng=rng.spawn(p)) for p in ("a", "b"))  # type: ignore[return-value]


def test_openings_travel_as_the_envelope_they_stand_for() -> None:
    # send_opening/recv_opening: send/recv of {"id", "v"}, the same bytes and counts, read in one pass
    a, b = _pair()
    c, d = _pair()
    sharing_id, values = bytes(range(16)), [np.arange(5, dtype=np.uint64), np.ones((2, 3), dtype=np.uint8)]
    for _ in range(2):
        a.send_opening("b", sharing_id, values, label="open")
        c.send("b", {"id": sharing_id, "v": values}, label="open")
    got, body = b.recv_opening("a", sharing_id, 2, label="open")
    assert body is None and got is not None and all(np.array_equal(x, y) for x, y in zip(got, values, strict=True))
    assert d.recv("a", label="open")["id"] == sharing_id
    assert a.traffic == c.traffic and b.traffic == d.traffic and b.traffic.messages_received == 1
    # another sharing, or another count: the body as recv() reads it, checked and counted all the same
    got, body = b.recv_opening("a", bytes(16), 2, label="open")
    assert got is None and body["id"] == sharing_id and b.traffic.messages_received == 2
    a.send_opening("b", sharing_id, values, label="open")
    assert b.recv_opening("a", sharing_id, 3, label="open")[0] is None
    a.send("b", [1, 2], label="open")
    assert b.recv_opening("a", sharing_id, 2, label="open") == (None, [1, 2])
    a.send_opening("b", sharing_id, values, label="other")
    with pytest.raises(ProtocolAbortError, match="'open'"):
        b.recv_opening("a", sharing_id, 2, label="open")
    with pytest.raises(ParameterError, match="src"):
        b.recv_opening("b", sharing_id, 2, label="open")
    with pytest.raises(ParameterError, match="dst"):
        a.send_opening("c", sharing_id, values, label="open")


def test_replayed_opening_is_detected() -> None:
    def a(comm: Comm) -> None:
        comm.send_opening("b", bytes(16), [np.zeros(3, dtype=np.uint64)], label="x")
        comm.send_opening("b", bytes(16), [np.ones(3, dtype=np.uint64)], label="x")

    def b(comm: Comm) -> list[object]:
        return [comm.recv_opening("a", bytes(16), 1, label="x"), comm.recv_opening("a", bytes(16), 1, label="x")]

    with pytest.raises(ProtocolAbortError, match="replayed"):
        run_protocol({"a": a, "b": b}, transport=ReplayingTransport(["a", "b"]))


@pytest.mark.parametrize("stuck", ["sleeps", "spins"])
def test_a_stuck_party_ends_the_run_within_about_the_timeout(stuck: str) -> None:
    # the run takes about timeout + ABORT_GRACE; the bound checked is generous, so a busy host cannot fail it.
    # The stuck role blocks or spins until the test is over (then it ends, and its thread with it).
    import threading

    over = threading.Event()

    def stuck_role(comm: Comm) -> None:
        if stuck == "sleeps":
            over.wait(120.0)
        while not over.is_set():
            pass
        comm.send("waiter", 1, label="x")

    def waiter(comm: Comm) -> int:
        return int(comm.recv("stuck", label="x"))

    start = time.monotonic()
    try:
        with pytest.raises(PartyUnavailableError, match="stuck") as caught:
            run_protocol({"stuck": stuck_role, "waiter": waiter, "idle": lambda comm: None}, timeout=0.5)
        assert time.monotonic() - start < 30.0
        assert any("stuck still running" in note for note in caught.value.__notes__)
    finally:
        over.set()
