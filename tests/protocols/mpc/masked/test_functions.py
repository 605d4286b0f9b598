"""Masked-wire functions: within their stated bounds of float64 over their domains (hypothesis, with the domains'
ends), in 2 to 4 online rounds by the transport's counters (one fewer inside a chain), below 126 bits at every node
from the parameters, and refusing bad input with typed errors before anything is opened."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.approximations import ExpParams, ReciprocalParams
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION
from mpdp.errors import DomainError, ProtocolAbortError
from mpdp.protocols.mpc import DealerProvider, MPCSession, SharedFixedPoint, TrustedDealer
from mpdp.protocols.mpc.masked import functions as mf
from mpdp.protocols.mpc.masked.program import Program
from mpdp.protocols.mpc.masked.run import execute
from mpdp.protocols.mpc.planning import PlannedProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

HP = HIGH_PRECISION
NAMES = ("alice", "bob", "carol")
Op = Callable[[dict[str, SharedFixedPoint]], SharedFixedPoint]


def _run(op: Op, inputs: dict[str, tuple[np.ndarray, float]], *, seed: int = 0, online: bool = False,
         parties: int = 2, fmt: Any = HP, dealer: TrustedDealer | None = None) -> dict[str, Any]:
    """``op`` on shared inputs with ``MPCSession(functions="masked")``; with ``online``, after a warm-up and the
    offline phase (its recorded correlations fetched), counting the online rounds by the transport's clock."""
    owners = NAMES[:parties]

    def role(comm: Any) -> dict[str, Any]:
        provider = PlannedProvider(DealerProvider(comm))
        with MPCSession(comm, provider=provider, parties=owners, fmt=fmt, functions="masked") as s:
            xs = {k: s.input(owners[i % parties], v if comm.name == owners[i % parties] else None, bound=b)
                  for i, (k, (v, b)) in enumerate(inputs.items())}
            if not online:
                return {"out": op(xs).reveal()}
            with provider.planned("op"):
                op(xs)
            provider.inner.prefetch(provider.plans["op"])
            provider.inner.receive_prefetched()  # type: ignore[attr-defined]
            s.public(np.zeros(1)).reveal()  # a synchronising opening
            before = comm.traffic.rounds
            out = op(xs)
            clocks = (before, comm.traffic.rounds)
            return {"out": out.reveal(), "clocks": clocks}

    roles: dict[str, Any] = {n: role for n in owners}
    roles["dealer"] = TrustedDealer() if dealer is None else dealer
    run = run_protocol(roles, rng=RandomSource.seeded(seed))
    out = run.results["alice"]
    if online:
        out["rounds"] = _rounds(run.results, owners)
    return out


def _rounds(results: dict[str, Any], parties: tuple[str, ...]) -> int:
    """The longest chain of messages between the parties' clocks before and after (the logical clock advances on
    receipt only: a party whose clock ran ahead, e.g. by a dealer's reply, must not count the others' catch-up)."""
    return max(results[n]["clocks"][1] for n in parties) - max(results[n]["clocks"][0] for n in parties)


def _encoded(v: np.ndarray) -> np.ndarray:
    return HP.decode(HP.encode(v))


FUNCTIONS: dict[str, tuple[Op, Callable[[np.ndarray], np.ndarray], float, float]] = {
    # name: (operation, float64 reference, low end, high end)
    "exp": (lambda s: s["x"].exp(), np.exp, -16.0, 16.0),
    "sigmoid": (lambda s: s["x"].sigmoid(), lambda x: 1 / (1 + np.exp(-x)), -16.0, 16.0),
    "recip": (lambda s: s["x"].reciprocal(), lambda x: 1 / x, 2.0**-10, 2.0**16),
    "rsqrt": (lambda s: s["x"].inv_sqrt(), lambda x: x**-0.5, 2.0**-10, 2.0**16),
    "sqrt": (lambda s: s["x"].sqrt(), np.sqrt, 2.0**-10, 2.0**16),
}


def _draw(low: float, high: float, data: Any) -> np.ndarray:
    """Inputs over the domain (log-uniform for the positive ones), its ends and their neighbours."""
    n = 24
    u = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    x = low * (high / low) ** u if low > 0 else low + (high - low) * u
    ends = [low, high, low * (1 + 1e-12) if low > 0 else low + 2.0**-40, high * (1 - 1e-12)]
    return np.concatenate([x, ends])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@settings(max_examples=3, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_function_within_its_bound(name: str, data: Any, seed: int) -> None:
    op, ref, low, high = FUNCTIONS[name]
    x = _draw(low, high, data)
    got = _run(op, {"x": (x, max(-low, high))}, seed=seed)["out"]
    exact = ref(_encoded(x))
    assert np.max(np.abs(got - exact) / np.abs(exact)) <= mf.error_bound(name, HP)


@settings(max_examples=3, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_div_within_its_bound(data: Any, seed: int) -> None:
    a, b = _draw(2.0**-10, 2.0**16, data), _draw(2.0**-10, 2.0**16, data)[::-1].copy()
    got = _run(lambda s: s["a"] / s["b"], {"a": (a, 2.0**16), "b": (b, 2.0**16)}, seed=seed)["out"]
    exact = _encoded(a) / _encoded(b)
    # the bound plus the output grid's rounding relative to the quotient (the quotient keeps f + 8 bits here)
    assert np.max(np.abs(got - exact) / exact - 2.0**-56 / exact) <= mf.error_bound("div", HP)


@pytest.mark.parametrize(("name", "rounds"), [("exp", 2), ("sigmoid", 2), ("recip", 3), ("rsqrt", 3), ("sqrt", 3)])
def test_online_rounds_by_the_transport(name: str, rounds: int) -> None:
    op, _, low, high = FUNCTIONS[name]
    x = np.linspace(max(low, 2.0**-10) if low > 0 else low, high, 8)
    out = _run(op, {"x": (x, max(-low, high))}, online=True)
    assert out["rounds"] == rounds


def test_div_takes_four_online_rounds() -> None:
    x = np.linspace(1.0, 100.0, 6)
    assert _run(lambda s: s["a"] / s["b"], {"a": (x, 100.0), "b": (x[::-1].copy(), 100.0)}, online=True)["rounds"] == 4


def _chain(build: Callable[[Program, Any, Any], Any], va: np.ndarray, vb: np.ndarray) -> dict[str, Any]:
    """A program ``build(p, a, b)`` on two inputs, its material fetched first: its output and online rounds."""
    p = Program()
    a = p.input("a", va.shape, scale=48, bound=2.0)
    b = p.input("b", vb.shape, scale=48, bound=2.0)
    p.output("y", build(p, a, b))
    prog = p.compile()

    def role(comm: Any) -> dict[str, Any]:
        with MPCSession.with_dealer(comm, fmt=HP) as s:
            xa = s.input("alice", va if comm.name == "alice" else None, bound=2.0)
            xb = s.input("bob", vb if comm.name == "bob" else None, bound=2.0)
            material = s.provider.masked_material(prog.plan)
            s.public(np.zeros(1)).reveal()
            before = comm.traffic.rounds
            out = execute(s, prog, {"a": xa, "b": xb}, {}, fmt=HP, material=material)
            clocks = (before, comm.traffic.rounds)
            return {"clocks": clocks, "y": out["y"].reveal()}

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(5))
    return {"y": run.results["alice"]["y"], "rounds": _rounds(run.results, ("alice", "bob")), "planned": prog.rounds}


def test_inside_a_chain_each_costs_one_round_less() -> None:
    """exp of a multiply-and-truncate layer's output costs one round after it (2 standalone); a reciprocal of a
    masked wire two (3 standalone)."""
    va, vb = np.array([0.5, 1.0, 1.5, 2.0]), np.array([-2.0, 0.25, 1.0, 2.0])

    def exp_of_product(p: Program, a: Any, b: Any) -> Any:
        aw, bw = p.open([a, b])  # round 1
        (prod,) = p.open([p.product([aw, bw])], shifts=[48])  # round 2: one multiply-and-truncate layer
        return p.unmask(mf.exp_of(p, prod))  # round 3

    def recip_of_wire(p: Program, a: Any, b: Any) -> Any:
        (aw,) = p.open([a])  # round 1
        return mf.root_of(p, aw, "recip", low_exp=-2, high_exp=2)  # rounds 2 and 3

    chained = _chain(exp_of_product, va, vb)
    assert chained["rounds"] == chained["planned"] == 3
    assert np.allclose(chained["y"], np.exp(va * vb), rtol=1e-7)
    recip = _chain(recip_of_wire, va, vb)
    assert recip["rounds"] == recip["planned"] == 3
    assert np.allclose(recip["y"], 1 / va, rtol=1e-8)


def test_every_node_stays_below_126_bits_from_the_parameters() -> None:
    for name in ("exp", "sigmoid", "recip", "rsqrt", "sqrt", "div"):
        assert max(mf.program(name, (3,)).bits) < 126, name


def test_out_of_domain_bounds_are_refused_before_any_opening() -> None:
    def op(s: dict[str, SharedFixedPoint]) -> SharedFixedPoint:
        sent = s["x"].session.comm.traffic.messages_sent
        try:
            s["x"].exp()
        except DomainError:
            assert s["x"].session.comm.traffic.messages_sent == sent
            return s["x"].reciprocal(ReciprocalParams(low_exp=-4, high_exp=4))
        raise AssertionError("a bound of 20 passed exp's domain [-16, 16]")

    with pytest.raises(DomainError, match="reciprocal input bound"):
        _run(op, {"x": (np.array([1.0, 20.0]), 20.0)})
    with pytest.raises(DomainError, match="exp input bound"):
        _run(lambda s: s["x"].exp(ExpParams(low=-8, high=8)), {"x": (np.array([1.0]), 9.0)})


def test_a_dealer_out_of_keys_stops_before_the_opening() -> None:
    with pytest.raises(ProtocolAbortError, match="exhausted"):
        _run(lambda s: s["x"].reciprocal(), {"x": (np.array([1.0, 2.0, 3.0]), 4.0)},
             dealer=TrustedDealer(max_dcf_keys=2))


def test_without_a_two_party_dealer_or_a_wide_ring_the_circuit_functions_run() -> None:
    x = np.array([0.5, 2.0, 7.0])
    three = _run(lambda s: s["x"].reciprocal(), {"x": (x, 8.0)}, parties=3)["out"]
    assert np.allclose(three, 1 / x, rtol=1e-6)
    fast = _run(lambda s: s["x"].exp(ExpParams(low=-4, high=4, squarings=3)), {"x": (x / 2, 4.0)}, fmt=FAST)["out"]
    assert np.allclose(fast, np.exp(x / 2), rtol=1e-4)


def test_masked_and_circuit_sigmoid_agree() -> None:
    x = np.array([-16.0, -3.5, 0.0, 0.25, 9.0, 16.0])
    masked = _run(lambda s: s["x"].sigmoid(), {"x": (x, 16.0)})["out"]
    circuit = _run(lambda s: s["x"].sigmoid(), {"x": (x, 16.0)}, parties=3)["out"]
    ref = 1 / (1 + np.exp(-x))
    assert np.max(np.abs(masked - ref) / ref) < 5e-8
    assert np.max(np.abs(circuit - ref) / ref) < 1e-6
    assert math.isclose(float(masked[2]), 0.5, rel_tol=5e-8)
