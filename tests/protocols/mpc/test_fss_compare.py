"""One-round FSS comparisons: exact at the edges, one online round by the transport's counters, typed refusals
before any opening."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION, FixedPointFormat
from mpdp.errors import DomainError, KeyMismatchError, ProtocolAbortError
from mpdp.protocols.mpc import DealerProvider, MPCSession, TrustedDealer, fss_compare
from mpdp.protocols.mpc import comparison as cmp
from mpdp.protocols.mpc.planning import PlannedProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.protocols.mpc.harness import first, run_mpc


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION, FixedPointFormat(24, 6)], ids=str)
def test_ltz_is_exact_at_the_ring_ends(fmt: FixedPointFormat) -> None:
    """Raw values 0, +-1 and the ring's ends, declared at the format's full range: the widest key."""
    ring = fmt.ring
    half = 1 << (ring.bits - 1)
    raw = [0, 1, -1, 2, -2, half - 1, -half, -half + 1, 12345, -12345]

    def program(s: MPCSession) -> dict[str, Any]:
        mine = ring.from_int(np.array([v % (1 << ring.bits) for v in raw], dtype=object)) if s.leader \
            else ring.zeros((len(raw),))
        x = s.from_shares(mine, bound=fmt.max_value, fmt=fmt)
        ok = fss_compare.applies(s, x)
        return {"ok": ok, "bit": cmp.ltz(x).reveal()}

    out = first(run_mpc(program, fmt=fmt, comparisons="fss"))
    assert out["ok"] == (ring.bits <= 64)  # Z_2^128 at full width is past a DCF key's 64 bits: the circuit
    assert np.array_equal(out["bit"], np.array([v < 0 for v in raw], dtype=float))


def _online(program: Any, *, comparisons: str, parties: int = 2, fmt: FixedPointFormat = FAST,
            values: np.ndarray | None = None, bound: float = 10.0) -> dict[str, Any]:
    """``program(session)`` after its correlations were fetched (offline): its result and online rounds."""

    def role(comm: Any) -> dict[str, Any]:
        dealer = DealerProvider(comm)
        planner = PlannedProvider(dealer)
        with MPCSession(comm, provider=planner, parties=dealer.parties, fmt=fmt, comparisons=comparisons) as s:
            mine = np.array([-3.0, 0.0, 2.5, -1e-6]) if values is None else values
            x = s.input(dealer.parties[0], mine if s.index == 0 else None, bound=bound)
            with planner.planned("op"):
                program(x)
            dealer.prefetch(planner.plans["op"])
            dealer.receive_prefetched()
            s.public(np.zeros(1)).reveal()  # a synchronising opening: every party's clock at the same round
            before = comm.traffic.rounds
            out = program(x)
            rounds = comm.traffic.rounds - before
            return {"rounds": rounds, "out": out.reveal()}

    names = ("alice", "bob", "carol")[:parties]
    roles: dict[str, Any] = {n: role for n in names}
    roles["dealer"] = TrustedDealer()
    run = run_protocol(roles, rng=RandomSource.seeded(3))
    # the longest chain of messages: the largest clock advance of any party (party 0 opens last)
    rounds = max(run.results[n].pop("rounds") for n in names)
    return {**first(run), "rounds": rounds}


def test_ltz_takes_one_online_round_and_the_circuit_eight() -> None:
    expected = np.array([1.0, 0.0, 0.0, 1.0])
    fss = _online(cmp.ltz, comparisons="fss")
    circuit = _online(cmp.ltz, comparisons="circuit")
    assert np.array_equal(fss["out"], expected) and np.array_equal(circuit["out"], expected)
    assert fss["rounds"] == 1
    assert circuit["rounds"] == 8
    relu = _online(cmp.relu, comparisons="fss")  # a comparison and a product
    assert relu["rounds"] == 2
    assert np.allclose(relu["out"], [0.0, 0.0, 2.5, 0.0])


def test_three_parties_fall_back_to_the_circuit() -> None:
    out = _online(cmp.ltz, comparisons="fss", parties=3)
    assert np.array_equal(out["out"], [1.0, 0.0, 0.0, 1.0])
    assert out["rounds"] == 8


def _refusal(check: Any) -> dict[str, Any]:
    def program(s: MPCSession) -> dict[str, Any]:
        x = s.input("alice", np.array([1.0, -2.0, 3.0]) if s.comm.name == "alice" else None, bound=4.0)
        opened = s.comm.traffic.messages_sent
        with pytest.raises((DomainError, KeyMismatchError)) as info:
            check(s, x)
        return {"error": type(info.value).__name__, "sent": s.comm.traffic.messages_sent - opened}

    return first(run_mpc(program, comparisons="fss"))


def test_a_value_wider_than_the_declared_width_is_refused_before_opening() -> None:
    out = _refusal(lambda s, x: fss_compare.ltz(x, width=10))  # 4 at 20 fractional bits needs 24 bits
    assert out == {"error": "DomainError", "sent": 0}


def test_keys_of_another_shape_or_session_are_refused_before_opening() -> None:
    def other_shape(s: MPCSession, x: Any) -> None:
        key = s.provider.dcf_key(x.ring, (4,), fss_compare.declared_depth(x))
        fss_compare.ltz(x, key=key)

    def other_session(s: MPCSession, x: Any) -> None:
        key = s.provider.dcf_key(x.ring, x.shape, fss_compare.declared_depth(x))
        fss_compare.ltz(x, key=dataclasses.replace(key, issuer=b"elsewhere"))

    assert _refusal(other_shape)["error"] == "KeyMismatchError"
    assert _refusal(other_shape)["sent"] == 1  # the dealer request only: nothing opened
    assert _refusal(other_session) == {"error": "KeyMismatchError", "sent": 1}


def test_a_dealer_out_of_keys_stops_the_parties_before_opening() -> None:
    def program(s: MPCSession) -> None:
        x = s.input("alice", np.zeros(5) if s.comm.name == "alice" else None, bound=1.0)
        cmp.ltz(x[:2])  # 2 keys of the 3 allowed
        cmp.ltz(x)  # 5 more: refused when its keys are fetched, before its opening

    with pytest.raises(ProtocolAbortError, match="DCF keys"):
        run_mpc(program, comparisons="fss", dealer=TrustedDealer(max_dcf_keys=3))


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION], ids=str)
def test_at_least_matches_the_circuit_in_one_round(fmt: FixedPointFormat) -> None:
    """Many thresholds against one opened mask, with and without ``rows``: the circuit's bits, one round."""
    from mpdp.protocols.mpc.bits import at_least

    raw = np.array([[0, 1, -1, 5], [1 << 40, -(1 << 40), 7, (1 << 62) - 1]], dtype=np.int64)
    thresholds = np.array([0, 1, 2, 1 << 40, -(1 << 40), (1 << 62) - 1], dtype=np.int64)
    rows = np.array([0, 1, 0, 1, 1, 0], dtype=np.int64)
    expected = (raw[None] >= thresholds[:, None, None]).astype(float)
    expected_rows = (raw[rows] >= thresholds[:, None]).astype(float)

    def program(s: MPCSession) -> dict[str, Any]:
        word = raw.astype(np.uint64) if s.leader else np.zeros(raw.shape, dtype=np.uint64)
        out = {}
        for name, picked in (("all", None), ("rows", rows)):
            if s.comparisons == "fss":  # the offline phase: the key fetched and received before the clock starts
                s.provider.prefetch([CorrelationSpec("dcf", fmt.ring.bits, raw.shape, shift=63)])
                s.provider.receive_prefetched()
            s.public(np.zeros(1)).reveal()
            before = s.comm.traffic.rounds
            bits = at_least(s, word, thresholds, fmt.ring, rows=picked)
            out[f"{name}_rounds"] = s.comm.traffic.rounds - before
            out[name] = s.from_shares(bits, bound=1.0, fmt=fmt, scale=0).reveal()
        return out

    fss = run_mpc(program, fmt=fmt, comparisons="fss")
    out = fss.results["alice"]
    assert np.array_equal(out["all"], expected) and np.array_equal(out["rows"], expected_rows)
    assert max(fss.results[n][f"{k}_rounds"] for n in ("alice", "bob") for k in ("all", "rows")) == 1
    circuit = run_mpc(program, fmt=fmt, comparisons="circuit").results["alice"]
    assert np.array_equal(circuit["all"], expected) and np.array_equal(circuit["rows"], expected_rows)


def test_the_functions_normalise_in_one_round_instead_of_seven() -> None:
    """reciprocal, div and sqrt compare twice (their normalisation's thresholds, then the domain check's one bit):
    one round each with FSS instead of seven and eight."""
    d = np.array([2.0**-10, 0.3, 1.0, 7.5, 2.0**16])

    def rounds(comparisons: str) -> dict[str, int]:
        out = {}
        for name, op in (("reciprocal", lambda v: v.reciprocal()), ("div", lambda v: v / v),
                         ("sqrt", lambda v: v.sqrt())):
            got = _online(op, comparisons=comparisons, fmt=HIGH_PRECISION, values=d, bound=2.0**16)
            reference = {"reciprocal": 1 / d, "div": np.ones_like(d), "sqrt": np.sqrt(d)}[name]
            assert np.max(np.abs(got["out"] - reference) / reference) < 1e-6
            out[name] = got["rounds"]
        return out

    circuit, fss = rounds("circuit"), rounds("fss")
    assert circuit == {"reciprocal": 30, "div": 32, "sqrt": 42}
    assert fss == {"reciprocal": 16, "div": 18, "sqrt": 29}


def test_scalars_empty_arrays_and_matrices() -> None:
    def program(s: MPCSession) -> dict[str, Any]:
        def mine(v: Any) -> Any:
            return v if s.comm.name == "alice" else None

        a = s.input("alice", mine(np.float64(-2.0)), bound=4.0)
        e = s.input("alice", mine(np.zeros((0,))), bound=4.0)
        m = s.input("alice", mine(np.array([[1.0, -1.0], [0.0, -0.5]])), bound=4.0)
        return {"scalar": cmp.ltz(a).reveal(), "empty": cmp.ltz(e).reveal(), "matrix": cmp.ltz(m).reveal()}

    out = first(run_mpc(program, comparisons="fss"))
    assert out["scalar"] == 1.0 and out["empty"].shape == (0,)
    assert np.array_equal(out["matrix"], [[0.0, 1.0], [0.0, 1.0]])
