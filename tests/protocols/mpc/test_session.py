"""Session-level behaviour: the documented example runs, scalars work, inputs are checked."""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest

import mpdp.protocols.mpc.session as session_module
from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.crypto.ring import ring_for_bits
from mpdp.errors import (
    DomainError,
    EncodingOverflowError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    PrecisionError,
)
from mpdp.protocols.mpc import MPCSession
from tests.protocols.mpc.harness import first, run_mpc


def test_docstring_example_runs() -> None:
    result = doctest.testmod(session_module)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("fmt", [None, HIGH_PRECISION])
def test_zero_dimensional_values(fmt) -> None:
    def program(s: MPCSession) -> float:
        a = s.input("alice", 3.0 if s.comm.name == "alice" else None, bound=4.0, fmt=fmt)
        b = s.input("bob", -0.5 if s.comm.name == "bob" else None, bound=4.0, fmt=fmt)
        return float((a * b + a.square() - 2).reveal())

    assert first(run_mpc(program)) == 5.5


def test_inputs_are_checked() -> None:
    def program(s: MPCSession) -> None:
        with pytest.raises(ParameterError, match="owner"):
            s.input("zoe", None)
        if s.comm.name == "alice":
            with pytest.raises(EncodingOverflowError, match="finite"):
                s.input("alice", np.array([np.nan]))
            with pytest.raises(ParameterError, match="bound"):
                s.input("alice", np.ones(2), bound=-1.0)
        else:
            with pytest.raises(ParameterError, match="only alice"):
                s.input("alice", np.ones(2))

    run_mpc(program)


def test_inputs_with_ids_allocated_beforehand_travel_in_one_round() -> None:
    data = {"alice": np.array([1.5, -2.0]), "bob": np.array([0.25, 4.0])}

    def program(s: MPCSession, together: bool) -> list[float]:
        other = next(p for p in s.parties if p != s.comm.name)
        s.public(np.zeros(1)).reveal()  # an exchange first: both parties' round clocks agree
        if together:
            ids = {p: s.new_id() for p in s.parties}  # the same order everywhere
            mine = s.input(s.comm.name, data[s.comm.name], bound=8.0, sharing_id=ids[s.comm.name])
            theirs = s.input(other, None, bound=8.0, sharing_id=ids[other])
            a, b = (mine, theirs) if s.comm.name == "alice" else (theirs, mine)
        else:
            a, b = (s.input(p, data[p] if p == s.comm.name else None, bound=8.0) for p in ("alice", "bob"))
        return (a + b).reveal().tolist()

    one, two = (run_mpc(lambda s, t=t: program(s, t)) for t in (True, False))
    assert first(one) == first(two) == [1.75, 2.0]
    assert one.rounds == two.rounds - 1


def test_openings_of_another_sharing_shape_or_dtype_are_refused() -> None:
    # A peer's opening is checked before it is added: its sharing id, the shape of each share (numpy would
    # broadcast a (2, 1) share over a (2, 3) one into a wrong sum) and its dtype.
    def program(s: MPCSession, tamper: str) -> Any:
        ring = s.fmt.ring
        mine = [ring.zeros((3,))]
        sharing_id = s.new_id()
        if s.comm.name == "bob":
            if tamper == "id":
                sharing_id = bytes(16)
            elif tamper == "shape":
                mine = [ring.zeros((1,))]
        if s.comm.name == "bob" and tamper == "dtype":
            s.comm.send("alice", {"id": sharing_id, "v": [np.zeros(ring.zeros((3,)).shape)]}, label="mpc.open")
            return s.comm.recv("alice", label="mpc.open")
        return s.open(ring, mine, sharing_id=sharing_id, label="mpc.open")

    # a wrong dtype is the peer's fault (its bytes), not an argument of this party's
    expected = {"id": KeyMismatchError, "shape": MalformedMessageError, "dtype": MalformedMessageError}
    for tamper, error in expected.items():
        with pytest.raises(error):
            run_mpc(lambda s, t=tamper: program(s, t))
    (total,) = first(run_mpc(lambda s: program(s, "none")))
    assert total.shape[-1] == 3 and not total.any()


def test_xor_openings_sum_every_party_and_leave_the_shares_alone() -> None:
    # Three parties: the XOR sums accumulate in the peers' decoded arrays, never in the caller's shares.
    def program(s: MPCSession) -> Any:
        k = s.index + 1
        words = [np.full((2, 3), k, dtype=np.uint64), np.arange(4, dtype=np.uint64) * np.uint64(k)]
        kept = [w.copy() for w in words]
        opened = s.open_xor(words, sharing_id=s.new_id(), label="t.xor")
        ring = s.fmt.ring
        share = ring.from_int(np.array([k, 10 * k], dtype=object))
        (summed,), (xored,) = s.open_with_words(ring, [share], [words[0]], sharing_id=s.new_id(), label="t.mixed")
        bits = s.open_bits(np.array([[1, 0, k % 2]], dtype=np.uint8), sharing_id=s.new_id(), label="t.bits")
        unchanged = all(np.array_equal(a, b) for a, b in zip(words, kept, strict=True))
        total = [int(v) for v in ring.to_object(summed)]
        return [o.tolist() for o in opened], total, xored.tolist(), bits.tolist(), unchanged

    opened, summed, xored, bits, unchanged = first(run_mpc(program, parties=3))
    assert opened == [[[0, 0, 0]] * 2, [0, 0, 0, 12]]  # 1 ^ 2 ^ 3 = 0, 3 ^ 6 ^ 9 = 12
    assert summed == [6, 60] and xored == [[0, 0, 0]] * 2 and bits == [[1, 0, 0]] and unchanged


@pytest.mark.parametrize("tamper", ["count", "shape", "dtype"])
def test_mixed_openings_refuse_words_of_another_count_shape_or_dtype(tamper: str) -> None:
    def program(s: MPCSession) -> Any:
        ring = s.fmt.ring
        sharing_id = s.new_id()
        if s.comm.name == "bob":
            words = {"count": [], "shape": [np.zeros(2, dtype=np.uint64)],
                     "dtype": [np.zeros(3, dtype=np.int64)]}[tamper]
            s.comm.send("alice", {"id": sharing_id, "v": [ring.zeros((3,)), *words]}, label="t.mixed")
            return s.comm.recv("alice", label="t.mixed")
        return s.open_with_words(ring, [ring.zeros((3,))], [np.zeros(3, dtype=np.uint64)], sharing_id=sharing_id,
                                 label="t.mixed")

    with pytest.raises(MalformedMessageError):
        run_mpc(program)


@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("fmt", [None, HIGH_PRECISION])
def test_seeded_inputs_equal_sent_inputs_without_a_message(parties: int, fmt: Any) -> None:
    # Every party's input, seeded: the same sums as with input(), no input message, and the pair keys agreed
    # once per session (one message per pair) however many inputs follow.
    rows = {name: np.array([[1.5, -2.0, 0.125], [3.0, 0.0, -7.25]]) * (i + 1) for i, name in
            enumerate(("alice", "bob", "carol"))}

    def program(s: MPCSession, seeded: bool) -> tuple[list[list[float]], int]:
        s.public(np.zeros(1)).reveal()  # an exchange first: every party's round clock agrees
        before = s.comm.traffic.messages_sent
        total = None
        for _ in range(3):
            for p in s.parties:
                mine = rows[p] if p == s.comm.name else None
                x = (s.input_seeded(p, mine, shape=(2, 3), bound=32.0, fmt=fmt) if seeded
                     else s.input(p, mine, bound=32.0, fmt=fmt))
                total = x if total is None else total + x
        sent = s.comm.traffic.messages_sent - before
        assert total is not None
        return total.reveal().tolist(), sent

    seeded, sent = (run_mpc(lambda s, t=t: program(s, t), parties=parties) for t in (True, False))
    expected = (3 * sum(rows[p] for p in ("alice", "bob", "carol")[:parties])).tolist()
    for run in (seeded, sent):
        assert all(r[0] == expected for n, r in run.results.items() if n != "dealer")
    # messages before the opening: the pair keys (one per later party) against one per input and peer
    assert [r[1] for n, r in seeded.results.items() if n != "dealer"] == list(range(parties - 1, -1, -1))
    assert [r[1] for n, r in sent.results.items() if n != "dealer"] == [3 * (parties - 1)] * parties


def test_seeded_shares_are_uniform_and_distinct_per_sharing() -> None:
    # Each non-owner's share is the next stretch of the pair's keystream: the owner's data does not show in it, two
    # sharings of the same value differ, and the two shares still sum to the encoding.
    def program(s: MPCSession) -> list[Any]:
        x = np.zeros(4096)
        a = s.input_seeded("alice", x if s.comm.name == "alice" else None, shape=(4096,), bound=1.0)
        b = s.input_seeded("alice", x if s.comm.name == "alice" else None, shape=(4096,), bound=1.0)
        return [a.share, b.share]

    run = run_mpc(program)
    (a0, _), (a1, b1) = run.results["alice"], run.results["bob"]
    assert not np.array_equal(a1, b1)
    np.testing.assert_array_equal(a0 + a1, np.zeros(4096, dtype=np.uint64))  # zero, mod 2^64
    bits = np.unpackbits(a1.view(np.uint8))
    assert abs(float(bits.mean()) - 0.5) < 0.01  # 262,144 bits: 10 standard deviations


def test_seeded_inputs_of_different_owners_may_interleave_differently_at_each_party() -> None:
    # Each party shares its own input first (as the DPVI step does): the shares of each owner's inputs come from
    # that owner's stream with each peer, so the interleaving of owners does not have to agree.
    def program(s: MPCSession) -> list[Any]:
        ids = {(o, k): s.new_id() for o in ("alice", "bob", "carol") for k in range(2)}  # agreed, in one order
        owners = [s.comm.name] + [p for p in ("alice", "bob", "carol") if p != s.comm.name]
        got = {}
        for owner in owners:
            for k in range(2):
                mine = np.full(3, {"alice": 0.25, "bob": -0.5, "carol": 0.75}[owner] + k)
                got[(owner, k)] = s.input_seeded(owner, mine if owner == s.comm.name else None, shape=(3,),
                                                 bound=2.0, sharing_id=ids[(owner, k)])
        return [got[(o, k)].reveal() for o in ("alice", "bob", "carol") for k in range(2)]

    run = run_mpc(program, parties=3)
    expected = [np.full(3, v + k) for v in (0.25, -0.5, 0.75) for k in range(2)]
    for name in ("alice", "bob", "carol"):
        for got, want in zip(run.results[name], expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_seeded_inputs_are_checked() -> None:
    def program(s: MPCSession) -> None:
        with pytest.raises(ParameterError, match="owner"):
            s.input_seeded("zoe", None, shape=(2,), bound=1.0)
        with pytest.raises(ParameterError, match="shape"):
            s.input_seeded("alice", None, shape=[2], bound=1.0)
        with pytest.raises(ParameterError, match="bound"):
            s.input_seeded("alice", None, shape=(2,), bound=-1.0)
        with pytest.raises(ParameterError, match="peer"):
            s.pair_key(s.comm.name)
        if s.comm.name == "alice":
            with pytest.raises(ParameterError, match="public shape"):
                s.input_seeded("alice", np.ones(3), shape=(2,), bound=1.0)
            with pytest.raises(DomainError, match="bound"):
                s.input_seeded("alice", np.full(2, 3.0), shape=(2,), bound=1.0)
        else:
            with pytest.raises(ParameterError, match="only alice"):
                s.input_seeded("alice", np.ones(2), shape=(2,), bound=1.0)

    run_mpc(program)


def test_a_malformed_pair_key_is_refused() -> None:
    from mpdp.protocols.mpc import TrustedDealer
    from mpdp.randomness import RandomSource
    from mpdp.runtime import run_protocol

    def bob(comm: Any) -> None:
        with MPCSession.with_dealer(comm) as s:
            with pytest.raises(MalformedMessageError, match="pair key"):
                s.pair_key("alice")

    def alice(comm: Any) -> None:
        with MPCSession.with_dealer(comm) as s:
            comm.send("bob", b"short", label="mpc.pair_key")  # instead of s.pair_key("bob")
            s._pair_keys = {"bob": bytes(32)}

    run_protocol({"alice": alice, "bob": bob, "dealer": TrustedDealer()}, rng=RandomSource.seeded(0))


def test_derived_values_keep_the_capacity_check_and_fresh_ids() -> None:
    def program(s: MPCSession) -> list[bytes]:
        a = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=1.0)
        ids = [a.sharing_id, (-a).sharing_id, a.reshape((3,)).sharing_id, s.new_id()]
        assert a.reshape((3,)).bound == 1.0 and (a + a).bound == 2.0
        limit = a.fmt.bound_limits[a.scale]
        assert a.assume_bound(limit).bound == limit  # the largest bound the format holds at this scale
        with pytest.raises(PrecisionError, match="value bound"):
            a.assume_bound(float(np.nextafter(limit, np.inf)))
        with pytest.raises(PrecisionError, match="value bound"):
            a.times_pow2(60)
        with pytest.raises(PrecisionError, match="value bound"):
            a.assume_bound(float("inf"))
        return ids

    ids = first(run_mpc(program))
    assert len(set(ids)) == 4 and [int.from_bytes(i[8:], "little") for i in ids] == sorted(
        int.from_bytes(i[8:], "little") for i in ids)


@pytest.mark.parametrize("bits", [64, 32, 128])
def test_openings_sum_every_party_and_leave_the_shares_alone(bits: int) -> None:
    # Z_2^64 sums land in the received arrays; other rings through ring.check and ring.add: the same sums either way
    def program(s: MPCSession) -> Any:
        ring = ring_for_bits(bits)
        k = s.index + 1
        shares = [ring.from_int(np.array([k, -k, 7 * k], dtype=object)), ring.from_int(np.array([[k]], dtype=object))]
        kept = [a.copy() for a in shares]
        totals = s.open(ring, shares, sharing_id=s.new_id(), label="t.open")
        unchanged = all(np.array_equal(a, b) for a, b in zip(shares, kept, strict=True))
        return [[int(v) for v in ring.to_object(t, signed=True).ravel()] for t in totals], unchanged

    totals, unchanged = first(run_mpc(program, parties=3))
    assert totals == [[6, -6, 42], [6]] and unchanged


def test_narrow_ring_openings_refuse_words_beyond_the_ring() -> None:
    def program(s: MPCSession) -> Any:
        ring = ring_for_bits(32)
        sharing_id = s.new_id()
        if s.comm.name == "bob":  # uint64 words, but not residues of Z_2^32
            s.comm.send_opening("alice", sharing_id, [np.full(3, 1 << 40, dtype=np.uint64)], label="t.open")
            return s.comm.recv("alice", label="t.open")
        return s.open(ring, [ring.zeros((3,))], sharing_id=sharing_id, label="t.open")

    with pytest.raises(MalformedMessageError, match="residues"):  # the peer's bytes, not an argument, are bad
        run_mpc(program)


@pytest.mark.parametrize("tamper", ["none", "id", "shape", "count", "ring"])
def test_exchanges_check_what_each_peer_sends(tamper: str) -> None:
    # each party sends its peer its own arrays; what comes back is checked for the sharing id, the count, the
    # public shape and the ring (a 12-bit ring refuses words beyond 2^12) before anyone uses it
    from mpdp.crypto.ring import Z2k

    ring = Z2k(12)

    def program(s: MPCSession) -> Any:
        peer = "bob" if s.comm.name == "alice" else "alice"
        sharing_id = s.new_id()
        mine = [np.full((2, 3), 7, dtype=np.uint64)]
        if s.comm.name == "bob":
            if tamper == "id":
                sharing_id = bytes(16)
            elif tamper == "shape":
                mine = [np.zeros((3, 2), dtype=np.uint64)]
            elif tamper == "count":
                mine = mine * 2
            elif tamper == "ring":
                mine = [np.full((2, 3), 1 << 40, dtype=np.uint64)]
        got = s.exchange(ring, {peer: mine}, {peer: [(2, 3)]}, sharing_id=sharing_id, label="mpc.exchange")
        return got[peer][0]

    if tamper == "none":
        assert first(run_mpc(program)).tolist() == [[7, 7, 7], [7, 7, 7]]
        return
    expected = {"id": KeyMismatchError, "shape": MalformedMessageError, "count": MalformedMessageError,
                "ring": MalformedMessageError}[tamper]  # (the ring's check, as in open: "not residues of Z_2^12")
    with pytest.raises(expected):
        run_mpc(program)
