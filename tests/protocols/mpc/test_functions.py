"""exp, reciprocal, division and square roots within their documented relative error bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.approximations import ExpParams, InvSqrtParams, ReciprocalParams, power_errors
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION
from mpdp.errors import DomainError, ParameterError
from mpdp.protocols.mpc import MPCSession
from tests.protocols.mpc.harness import first, run_mpc

HP = HIGH_PRECISION


def _rel(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got - ref) / np.abs(ref)))


def _log_uniform(low: int, high: int, size: int) -> st.SearchStrategy[np.ndarray]:
    return st.lists(st.floats(low, high), min_size=size, max_size=size).map(lambda e: 2.0 ** np.array(e))


@pytest.mark.parametrize("comparisons", ["circuit", "fss"])
@settings(max_examples=4, deadline=None)
@given(x=st.lists(st.floats(-16, 16), min_size=30, max_size=30).map(np.array),
       r=_log_uniform(-10, 16, 30), a=_log_uniform(-10, 16, 30))
def test_functions_within_their_bounds(comparisons: str, x: np.ndarray, r: np.ndarray, a: np.ndarray) -> None:
    # the edges of every domain, always
    x = np.concatenate([x, [-16.0, 16.0, 0.0, -1e-9]])
    r = np.concatenate([r, [2.0**-10, 2.0**16, 1.0, 0.5, 2.0**-9 * 0.999]])
    a = np.concatenate([a, [2.0**16, 2.0**-10, 1.0, 3.0, 1.0]])

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        ex = s.input("alice", x if s.comm.name == "alice" else None, bound=16.0, fmt=HP)
        den = s.input("bob", r if s.comm.name == "bob" else None, bound=2.0**16, fmt=HP)
        num = s.input("alice", a if s.comm.name == "alice" else None, bound=2.0**16, fmt=HP)
        return {"exp": ex.exp().reveal(), "rec": den.reciprocal().reveal(), "div": (num / den).reveal(),
                "sqrt": den.sqrt().reveal(), "isqrt": den.inv_sqrt().reveal()}

    out = first(run_mpc(program, fmt=HP, comparisons=comparisons))
    xe, re, ae = (HP.decode(HP.encode(v)) for v in (x, r, a))
    assert _rel(out["exp"], np.exp(xe)) <= ExpParams().relative_error_bound(HP)
    assert _rel(out["rec"], 1 / re) <= ReciprocalParams().relative_error_bound(HP)
    q = ae / re
    div_bound = ReciprocalParams().relative_error_bound(HP) * (1 + 1e-9) + HP.resolution / q
    assert np.all(np.abs(out["div"] - q) / q <= div_bound)
    assert _rel(out["sqrt"], np.sqrt(re)) <= InvSqrtParams().sqrt_error_bound(HP)
    assert _rel(out["isqrt"], 1 / np.sqrt(re)) <= InvSqrtParams().inv_sqrt_error_bound(HP)
    # the target relative error of the defaults (1e-6), with margin
    assert max(_rel(out["exp"], np.exp(xe)), _rel(out["rec"], 1 / re), _rel(out["div"], q)) < 1e-6


def test_documented_bounds_meet_the_targets() -> None:
    assert ExpParams().relative_error_bound(HP) < 1e-7
    assert ReciprocalParams().relative_error_bound(HP) < 1e-9
    assert InvSqrtParams().sqrt_error_bound(HP) < 1e-11


@pytest.mark.parametrize("params", [ExpParams(word_tail=False), ExpParams(low=-2, high=1, squarings=2, degree=7)],
                         ids=["wide-ring series", "word tail, narrow domain"])
def test_exp_variants_within_their_bounds(params: ExpParams) -> None:
    x = np.concatenate([np.linspace(params.low, params.high, 25), [0.0, -1e-9, 1e-9]])

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", x if s.comm.name == "alice" else None, bound=max(-params.low, params.high), fmt=HP)
        return v.exp(params).reveal()

    assert params.uses_word_tail(HP) == params.word_tail and not params.uses_word_tail(FAST)
    xe = HP.decode(HP.encode(x))
    assert _rel(first(run_mpc(program, fmt=HP)), np.exp(xe)) <= params.relative_error_bound(HP)


@pytest.mark.parametrize("iterations", [0, 1, 2, 4])
def test_reciprocal_within_its_bound_for_every_iteration_count(iterations: int) -> None:
    params = ReciprocalParams(low_exp=-3, high_exp=5, iterations=iterations)
    r = np.concatenate([2.0 ** np.linspace(-3, 5, 30), [0.5, 0.75, 0.999, 2.0**5 * 0.999]])

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", r if s.comm.name == "alice" else None, bound=2.0**5, fmt=HP)
        return v.reciprocal(params).reveal()

    re = HP.decode(HP.encode(r))
    error = _rel(first(run_mpc(program, fmt=HP)), 1 / re)
    assert error <= params.relative_error_bound(HP)
    if iterations <= 1:  # the residual dominates: the bound is tight within a factor 2
        assert error > params.relative_error_bound(HP) / 2


def test_power_error_bounds_follow_the_recursion() -> None:
    # y^2: one rounding; y^3 = y^2 y: h e_2 + 1; y^4 = y^2 y^2: 2 h^2 e_2 + e_2^2 u + 1
    e = power_errors(4, 0.5, 2.0**-30)
    assert e[:3] == [0.0, 1.0, 1.5]
    assert e[3] == pytest.approx(1.5, abs=1e-8)


def test_fast_format_functions_on_narrow_domains() -> None:
    x = np.linspace(-4, 4, 9)
    r = np.array([0.5, 1.0, 3.0, 100.0])

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        ex = s.input("alice", x if s.comm.name == "alice" else None, bound=4.0)
        den = s.input("bob", r if s.comm.name == "bob" else None, bound=128.0)
        return {"exp": ex.exp(ExpParams(low=-4, high=4, squarings=3)).reveal(),
                "rec": den.reciprocal(ReciprocalParams(low_exp=-2, high_exp=7)).reveal()}

    out = first(run_mpc(program, fmt=FAST))
    assert np.allclose(out["exp"], np.exp(x), rtol=0, atol=ExpParams(-4, 4, 3).relative_error_bound(FAST) * 60)
    assert np.allclose(out["rec"], 1 / r, rtol=ReciprocalParams(-2, 7).relative_error_bound(FAST), atol=0)


@pytest.mark.parametrize("comparisons", ["circuit", "fss"])
@pytest.mark.parametrize("bad", [0.0, -3.0, 2.0**-12, 2.0**18])
def test_out_of_domain_inputs_are_refused(bad: float, comparisons: str) -> None:
    def program(s: MPCSession) -> None:
        v = s.input("alice", np.array([1.0, bad]) if s.comm.name == "alice" else None, bound=2.0**19, fmt=HP)
        v.reciprocal()

    with pytest.raises(DomainError, match="2\\^-10"):
        run_mpc(program, fmt=HP, comparisons=comparisons)


def test_exp_domain_is_checked_only_when_the_bound_does_not_guarantee_it() -> None:
    def program(s: MPCSession) -> int:
        v = s.input("alice", np.array([1.0, 17.0]) if s.comm.name == "alice" else None, bound=20.0, fmt=HP)
        with pytest.raises(DomainError, match="exp"):
            v.exp(ExpParams(strict=False))
        before = s.comm.traffic.rounds
        v.assume_bound(16.0).exp()
        cheap = s.comm.traffic.rounds - before
        v.exp()  # strict: compares, then refuses
        return cheap

    with pytest.raises(DomainError, match="exp input"):
        run_mpc(program, fmt=HP)


def test_parameters_validate() -> None:
    with pytest.raises(ParameterError, match="squarings"):
        ExpParams(low=-100, high=100, squarings=2)
    with pytest.raises(ParameterError, match="low_exp < high_exp"):
        ReciprocalParams(low_exp=3, high_exp=3)
    with pytest.raises(ParameterError, match="iterations"):
        InvSqrtParams(iterations=-1)


@pytest.mark.parametrize("provider", ["dealer", "planned", "composed"])
def test_mul_known_truncates_into_a_narrower_format_in_the_same_two_rounds(provider: str) -> None:
    # q 2^-k computed in Z_2^128 and delivered in Z_2^64 at f = 24 by the product's own truncation; the
    # dealer's masked product, a planned block's, and the default composition (triple + wrap mask)
    from contextlib import AbstractContextManager, nullcontext

    from mpdp.crypto.fixed_point import FixedPointFormat
    from mpdp.protocols.mpc import DealerProvider, TrustedDealer, WithTriplesFrom
    from mpdp.protocols.mpc.functions import mul_known
    from mpdp.protocols.mpc.planning import PlannedProvider
    from mpdp.randomness import RandomSource
    from mpdp.runtime import run_protocol

    low = FixedPointFormat(64, 24)
    q = np.array([3e-11, 0.75, 2.0**-30, 1.0])
    k = np.array([2.0**34, 1.0, 2.0**29, 1.0])  # q k <= 1, though k is far above the product capacity

    def role(comm: Any) -> tuple[list[np.ndarray], dict[str, int], str]:
        dealer = DealerProvider(comm)
        chosen = {"dealer": dealer, "planned": PlannedProvider(dealer),
                  "composed": WithTriplesFrom(dealer, rest=dealer)}[provider]
        out, rounds = [], {}
        with MPCSession(comm, provider=chosen, parties=dealer.parties, fmt=HIGH_PRECISION) as s:
            for _ in range(2):
                x = s.input("alice", q if comm.name == "alice" else None, bound=1.0)
                y = s.input("bob", k if comm.name == "bob" else None, bound=2.0**34)
                for target in (None, low):
                    block: AbstractContextManager[None] = nullcontext()
                    if isinstance(chosen, PlannedProvider):
                        block = chosen.planned(str(target))
                    with block:
                        before = comm.traffic.rounds
                        z = mul_known(x, y, 1.0, fmt=target)
                        rounds[str(target)] = comm.traffic.rounds - before
                out.append(z.reveal())
            return out, rounds, f"{z.fmt}"

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(5))
    out, rounds, fmt = run.results["alice"]
    exact = HIGH_PRECISION.decode(HIGH_PRECISION.encode(q)) * k
    for value in out:
        assert np.all(np.abs(value - exact) < low.resolution)
    assert fmt == str(low) and rounds[str(low)] == rounds["None"]  # the switch costs no round

    def refused(s: MPCSession) -> None:
        x = s.input("alice", np.ones(2) if s.comm.name == "alice" else None, bound=1.0)
        with pytest.raises(ParameterError, match="fmt"):
            mul_known(x, x, 1.0, fmt=FixedPointFormat(128, 10))  # no widening in a truncation

    run_mpc(refused, fmt=FAST)


_COEFFICIENTS = st.one_of(
    st.integers(0, 127).flatmap(lambda e: st.sampled_from([1 << e, -(1 << e)])),  # the shift path's constants
    st.just(0),
    st.integers(-(1 << 130), 1 << 130),  # anything else: the product path
)


@settings(max_examples=60, deadline=None)
@given(coefficients=st.lists(_COEFFICIENTS, min_size=1, max_size=9), shape=st.sampled_from([(), (5,), (2, 3)]),
       bits=st.sampled_from([128, 64, 40]), shifts_only=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_combine_rows_is_the_exact_linear_combination(coefficients: list[int], shape: tuple[int, ...], bits: int,
                                                      shifts_only: bool, seed: int) -> None:
    from mpdp.crypto.ring import ring_for_bits
    from mpdp.protocols.mpc.functions import combine_rows
    from mpdp.randomness import RandomSource

    if shifts_only:  # the shift path needs every constant a signed power of two (or 0)
        coefficients = [k if k == 0 or (abs(k) & (abs(k) - 1) == 0 and abs(k) < 1 << 128) else 1 for k in coefficients]
    ring = ring_for_bits(bits)
    rows = ring.random(RandomSource.seeded(seed), (len(coefficients), *shape))
    got = ring.to_object(combine_rows(ring, rows, tuple(coefficients)), signed=False)
    values = ring.to_object(rows, signed=False)
    want = sum((k * values[j] for j, k in enumerate(coefficients)), np.zeros(shape, dtype=object)) % (1 << bits)
    np.testing.assert_array_equal(np.asarray(got, dtype=object), np.asarray(want, dtype=object))
