"""Shared fixed-point arithmetic against float64 references, within the documented bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION, FixedPointFormat
from mpdp.crypto.ring import Z2_128, Ring, Z2k
from mpdp.errors import DomainError, KeyMismatchError, ParameterError, PrecisionError, ShapeMismatchError
from mpdp.protocols.mpc import MPCSession
from mpdp.randomness import RandomSource
from tests.protocols.mpc.harness import first, run_mpc

FORMATS = [FAST, HIGH_PRECISION]


def _grid(fmt: FixedPointFormat, x: np.ndarray) -> np.ndarray:
    return fmt.decode(fmt.encode(x))


def _values(bound: float, size: int = 6) -> st.SearchStrategy[np.ndarray]:
    return st.lists(st.floats(-bound, bound, allow_nan=False), min_size=size, max_size=size).map(np.array)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@settings(max_examples=8)
@given(x=_values(100.0), y=_values(100.0), c=st.floats(-50, 50))
def test_products_within_one_ulp(fmt: FixedPointFormat, x: np.ndarray, y: np.ndarray, c: float) -> None:
    def program(s: MPCSession) -> dict[str, np.ndarray]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=100.0)
        b = s.input("bob", y if s.comm.name == "bob" else None, bound=100.0)
        return {"add": (a + b - 1.5).reveal(), "mul": (a * b).reveal(), "sq": a.square().reveal(),
                "pub": (a * c).reveal(), "int": (a * 3).reveal(), "split": a.mul_split(b).reveal(),
                "dot": a.dot(b).reveal(), "div": (a / 4.0).reveal()}

    out = first(run_mpc(program, fmt=fmt))
    xe, ye = _grid(fmt, x), _grid(fmt, y)
    ulp = fmt.resolution
    tol = ulp * (1 + 1e-9) + 1e-12 * np.abs(xe * ye)  # 1 ulp; the float64 reference itself rounds at 2^-52
    # The secure sum is exact on the grid; the float64 reference xe + ye - 1.5 rounds (e.g. 32 + 1/3 - 1.5).
    rounding = 4 * np.finfo(np.float64).eps * (np.abs(xe) + np.abs(ye) + 1.5)
    assert np.all(np.abs(out["add"] - (xe + ye - 1.5)) <= rounding)
    assert np.all(np.abs(out["mul"] - xe * ye) < tol)
    assert np.all(np.abs(out["sq"] - xe * xe) < ulp + 1e-12 * xe * xe)
    assert np.all(np.abs(out["split"] - xe * ye) < tol)
    assert np.array_equal(out["int"], xe * 3)
    # the constant itself is encoded with >= 40 fractional bits here (capacity permitting)
    assert np.all(np.abs(out["pub"] - xe * c) < ulp + np.abs(xe) * 2.0**-40 + 1e-12 * np.abs(xe * c))
    assert abs(out["dot"] - xe @ ye) < ulp + 1e-12 * np.sum(np.abs(xe * ye))
    assert np.all(np.abs(out["div"] - xe / 4) < ulp)


@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_matmul_and_reductions(parties: int, fmt: FixedPointFormat) -> None:
    x = np.linspace(-1, 1, 35).reshape(5, 7)
    y = np.cos(np.arange(21.0)).reshape(7, 3)

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=1.0)
        b = s.input(s.parties[-1], y if s.comm.name == s.parties[-1] else None, bound=1.0)
        return {"mm": (a @ b).reveal(), "pub_left": (y.T @ a.T).reveal(), "pub_right": (a @ y).reveal(),
                "sum0": a.sum(axis=0).reveal(), "sum": a.sum().reveal(), "mean": a.mean(axis=1).reveal(),
                "T": a.T.reveal(), "idx": a[1:3, ::2].reveal(), "pow": (a ** 3).reveal()}

    out = first(run_mpc(program, parties=parties, fmt=fmt))
    xe, ye = _grid(fmt, x), _grid(fmt, y)
    ulp = fmt.resolution
    assert np.all(np.abs(out["mm"] - xe @ ye) < ulp)
    assert np.all(np.abs(out["pub_left"] - (xe @ y).T) < ulp + 2.0**-40)  # public y: encoded with >= 40 bits
    assert np.all(np.abs(out["pub_right"] - xe @ y) < ulp + 2.0**-40)
    assert np.allclose(out["sum0"], xe.sum(axis=0), atol=1e-12, rtol=0)
    assert abs(out["sum"] - xe.sum()) < 1e-9
    assert np.all(np.abs(out["mean"] - xe.mean(axis=1)) < ulp * (1 + 1e-6) + 1e-15)  # + float64 reference
    assert np.array_equal(out["T"], xe.T)
    assert np.array_equal(out["idx"], xe[1:3, ::2])
    assert np.all(np.abs(out["pow"] - xe**3) < 3 * ulp)


def test_reveal_to_one_party() -> None:
    def program(s: MPCSession) -> object:
        a = s.input("bob", np.array([1.25, -2.0]) if s.comm.name == "bob" else None, bound=4.0)
        return a.reveal_to("alice")

    run = run_mpc(program, parties=3)
    assert run.results["alice"].tolist() == [1.25, -2.0]
    assert run.results["bob"] is None and run.results["carol"] is None


def test_ring_conversion_is_exact_when_widening() -> None:
    x = np.array([-3.5, 1e-6, 1234.0625, -(2.0**20)])

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**21)
        wide = a.to_format(HIGH_PRECISION)
        back = (wide * 0.5).to_format(FAST)
        return {"wide": wide.reveal(), "back": back.reveal()}

    out = first(run_mpc(program))
    xe = _grid(FAST, x)
    assert np.array_equal(out["wide"], xe)
    assert np.all(np.abs(out["back"] - xe / 2) < FAST.resolution)


def test_stochastic_rounding_is_unbiased() -> None:
    # 0.3 * 2^-20 is not on the grid: each product rounds down or up; the mean lands on the exact value.
    n = 20000

    def program(s: MPCSession) -> np.ndarray:
        a = s.public(np.full(n, FAST.resolution))
        return (a * 0.3).reveal()

    out = first(run_mpc(program))
    assert set(np.unique(out / FAST.resolution).tolist()) <= {0.0, 1.0}
    exact = FAST.decode(FAST.encode(0.3), scale_bits=FAST.frac_bits) * FAST.resolution
    # binomial(n, ~0.3): 6 standard deviations, false failure rate < 1e-8
    assert abs(out.mean() - exact) < 6 * np.sqrt(0.3 * 0.7 / n) * FAST.resolution


def test_split_multiplication_reaches_beyond_the_product_capacity() -> None:
    fmt = FixedPointFormat(64, 24)  # f >= 24 in a 64-bit ring (paper 002): products below 2^14 only
    x, y = np.array([3000.0, -2500.5, 0.001]), np.array([4000.25, 3999.0, -1e-3])

    def program(s: MPCSession) -> dict[str, object]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=5000.0)
        b = s.input("bob", y if s.comm.name == "bob" else None, bound=5000.0)
        try:
            a * b
        except PrecisionError as exc:
            refused = str(exc)
        return {"split": a.mul_split(b).reveal(), "refused": refused}

    out = first(run_mpc(program, fmt=fmt))
    assert "mul_split" in out["refused"]
    assert np.all(np.abs(out["split"] - _grid(fmt, x) * _grid(fmt, y)) < fmt.resolution * (1 + 1e-6))


def test_bad_input_gets_typed_errors() -> None:
    def program(s: MPCSession) -> list[str]:
        errors = []
        a = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=1.0)
        b = s.input("bob", np.ones(4) if s.comm.name == "bob" else None, bound=1.0)
        for fn, exc in [(lambda: a + b, ShapeMismatchError), (lambda: a * b, ShapeMismatchError),
                        (lambda: a @ b, ShapeMismatchError), (lambda: a / 0.0, ParameterError),
                        (lambda: a[a], ParameterError), (lambda: bool(a), TypeError),
                        (lambda: a.assume_bound(-1.0), ParameterError)]:
            with pytest.raises(exc):
                fn()
            errors.append(exc.__name__)
        big = a * 2.0**40  # within the encoding range, but its square cannot be held
        with pytest.raises(PrecisionError, match="product"):
            big * big
        return errors

    first(run_mpc(program))


def test_owner_refuses_values_beyond_the_declared_bound() -> None:
    def program(s: MPCSession) -> None:
        s.input("alice", np.array([2.0]) if s.comm.name == "alice" else None, bound=1.0)

    with pytest.raises(DomainError, match="bound"):
        run_mpc(program)


def test_operands_of_another_session_are_refused() -> None:
    def program(s: MPCSession) -> None:
        a = s.public(np.ones(2))
        other = MPCSession(s.comm, provider=s.provider, parties=s.parties)
        b = other.public(np.ones(2))
        with pytest.raises(KeyMismatchError, match="session"):
            a + b

    run_mpc(program)


def test_desynchronised_openings_are_refused() -> None:
    def program(s: MPCSession) -> None:
        a = s.public(np.ones(2))
        if s.comm.name == "bob":
            s.public(np.ones(2))  # bob creates one more value: his next sharing id differs
        b = s.public(np.ones(2))
        (a + b).reveal()

    with pytest.raises(KeyMismatchError, match="different sharings"):
        run_mpc(program)


def test_traffic_is_counted_and_masked_values_travel_only() -> None:
    x = np.arange(1000.0) / 1000

    def program(s: MPCSession) -> float:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=1.0)
        return float((a * a).sum().reveal())

    run = run_mpc(program)
    assert abs(first(run) - float(np.sum(_grid(FAST, x) ** 2))) < 1000 * FAST.resolution
    peer_bytes = run.traffic["alice"].sent_to["bob"] + run.traffic["bob"].sent_to["alice"]
    # input (8 kB) + square opening (2 x 8 kB) + truncation opening (2 x 8 kB) + small reveals
    assert 40_000 < peer_bytes < 45_000


@pytest.mark.parametrize("ring", [Z2k(64), Z2_128()], ids=repr)
@pytest.mark.parametrize("values", [(3, -5, 7), (2**70 + 1, -(2**100), 5), (2**61, -(2**61), 0)])
def test_mul_constants_equals_mul_int_and_caches_read_only(ring: Ring, values: tuple[int, ...]) -> None:
    from mpdp.protocols.mpc.arithmetic import _constants, mul_constants

    share = ring.random(RandomSource.seeded(5), (3, 4))
    want = ring.mul_int(share, np.array(values, dtype=object).reshape(3, 1))
    assert np.array_equal(mul_constants(ring, share, values, (3, 1)), want)
    assert np.array_equal(mul_constants(ring, share, values, (3, 1)), want)  # from the cache
    assert not _constants(ring, values, (3, 1)).flags.writeable


@pytest.mark.parametrize("provider", ["dealer", "planned", "composed"])
@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_matmul_owned_matches_the_product_of_shared_operands(provider: str, parties: int,
                                                             fmt: FixedPointFormat) -> None:
    # each party's own block X_j (never shared) times a shared y: within one ulp of the plaintext product, in two
    # rounds, with a dealer's owned products and with the fallback of providers that deal none (composed)
    from mpdp.protocols.mpc import DealerProvider, TrustedDealer, WithTriplesFrom
    from mpdp.protocols.mpc.arithmetic import matmul_owned
    from mpdp.protocols.mpc.planning import PlannedProvider
    from mpdp.runtime import run_protocol

    names = ("alice", "bob", "carol")[:parties]
    rows = (4, 0, 3)[:parties] if parties == 3 else (4, 3)
    blocks = {name: np.sin(np.arange(rows[j] * 6.0) + j).reshape(rows[j], 6) * (j + 1) for j, name in enumerate(names)}
    bounds = [float(j + 1) for j in range(parties)]
    y = np.cos(np.arange(12.0)).reshape(6, 2)

    def role(comm: Any) -> tuple[list[np.ndarray], int, int]:
        dealer = DealerProvider(comm)
        chosen = {"dealer": dealer, "planned": PlannedProvider(dealer),
                  "composed": WithTriplesFrom(dealer, rest=dealer)}[provider]
        with MPCSession(comm, provider=chosen, parties=dealer.parties, fmt=fmt) as s:
            shared = s.input("alice", y if comm.name == "alice" else None, bound=1.0)
            stacked = np.concatenate(list(blocks.values()))  # every block as one shared matrix (alice's input)
            x = s.input("alice", stacked if comm.name == "alice" else None, bound=max(bounds))
            x @ shared  # (the first request's logical rounds differ)

            def to_peers() -> int:
                return sum(v for k, v in comm.traffic.sent_to.items() if k != "dealer")

            rounds, sent = comm.traffic.rounds, to_peers()
            x @ shared  # the product of shared operands: its rounds (dealer round trips included) and bytes
            rounds, sent = comm.traffic.rounds - rounds, to_peers() - sent
            before, sent_before = comm.traffic.rounds, to_peers()
            out = matmul_owned(shared, blocks[comm.name], [b.shape for b in blocks.values()], bounds)
            assert comm.traffic.rounds - before == rounds
            owned = to_peers() - sent_before
            return [o.reveal() for o in out], sent, owned

    roles: dict[str, Any] = {name: role for name in names}
    roles["dealer"] = TrustedDealer()
    run = run_protocol(roles, rng=RandomSource.seeded(3))
    results = run.results["alice"][0]
    for name in names[1:]:
        np.testing.assert_equal(run.results[name][0], results)
    ye = _grid(fmt, y)
    for out, x in zip(results, blocks.values(), strict=True):
        assert out.shape == (x.shape[0], 2)
        assert np.all(np.abs(out - _grid(fmt, x) @ ye) < fmt.resolution)
    if provider != "composed":  # each party sends its own block's d only, not a share of every block
        for name in names:
            shared_bytes, owned_bytes = run.results[name][1:]
            assert owned_bytes < shared_bytes


def test_matmul_owned_refuses_bad_blocks() -> None:
    from mpdp.protocols.mpc.arithmetic import matmul_owned

    def program(s: MPCSession) -> None:
        y = s.input("alice", np.ones((3, 2)) if s.comm.name == "alice" else None, bound=1.0)
        mine = np.full((2, 3), 5.0) if s.comm.name == "alice" else np.zeros((1, 3))
        matmul_owned(y, mine, [(2, 3), (1, 3)], [4.0, 1.0])  # alice's block breaks its public bound

    with pytest.raises(DomainError, match="declare a larger bound"):
        run_mpc(program)

    def wrong_shape(s: MPCSession) -> None:
        y = s.input("alice", np.ones((3, 2)) if s.comm.name == "alice" else None, bound=1.0)
        matmul_owned(y, np.zeros((2, 4)), [(2, 4), (2, 4)], [1.0, 1.0])

    with pytest.raises(ShapeMismatchError):
        run_mpc(wrong_shape)


@pytest.mark.parametrize("provider", ["dealer", "planned", "composed"])
@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_mul_owned_multiplies_private_operands_never_shared(provider: str, parties: int, fmt: FixedPointFormat) -> None:
    # the last party's values, shared trivially (its share the values, the others' zero), times the first party's
    # and then times a shared value: within one ulp per product, with a shared product's rounds and fewer bytes
    from mpdp.protocols.mpc import DealerProvider, TrustedDealer, WithTriplesFrom
    from mpdp.protocols.mpc.arithmetic import mul_owned
    from mpdp.protocols.mpc.planning import PlannedProvider
    from mpdp.runtime import run_protocol

    names = ("alice", "bob", "carol")[:parties]
    x = np.linspace(-3, 3, 12).reshape(4, 3)
    z = np.cos(np.arange(12.0)).reshape(4, 3)

    def role(comm: Any) -> tuple[np.ndarray, np.ndarray, int, int]:
        dealer = DealerProvider(comm)
        chosen = {"dealer": dealer, "planned": PlannedProvider(dealer),
                  "composed": WithTriplesFrom(dealer, rest=dealer)}[provider]
        with MPCSession(comm, provider=chosen, parties=dealer.parties, fmt=fmt) as s:
            last = s.parties[-1]
            trivial = fmt.encode(z) if comm.name == last else fmt.ring.zeros(z.shape)
            y = s.from_shares(trivial, bound=1.0)
            a = s.input("alice", x if comm.name == "alice" else None, bound=3.0)
            a * y  # (the first request's logical rounds differ)
            rounds, sent = comm.traffic.rounds, comm.traffic.bytes_sent
            a * y  # a product of shared operands: its rounds and bytes
            rounds, sent = comm.traffic.rounds - rounds, comm.traffic.bytes_sent - sent
            before, sent_before = comm.traffic.rounds, comm.traffic.bytes_sent
            both = mul_owned(y, x if comm.name == "alice" else None, "alice", 3.0)
            assert comm.traffic.rounds - before == rounds
            owned = comm.traffic.bytes_sent - sent_before
            again = mul_owned(both, z if comm.name == last else None, last, 1.0)
            return both.reveal(), again.reveal(), sent, owned

    roles: dict[str, Any] = {name: role for name in names}
    roles["dealer"] = TrustedDealer()
    run = run_protocol(roles, rng=RandomSource.seeded(5))
    both, again, _, _ = run.results["alice"]
    for name in names[1:]:
        np.testing.assert_equal(run.results[name][:2], (both, again))
    xe, ze = _grid(fmt, x), _grid(fmt, z)
    assert np.all(np.abs(both - xe * ze) < fmt.resolution)
    assert np.all(np.abs(again - xe * ze * ze) < 2 * fmt.resolution)
    if provider != "composed" and parties == 2:
        for name in names:
            shared_bytes, owned_bytes = run.results[name][2:]
            assert owned_bytes < shared_bytes


def test_mul_owned_refuses_data_in_the_wrong_place() -> None:
    from mpdp.protocols.mpc.arithmetic import mul_owned

    def elsewhere(s: MPCSession) -> None:
        y = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=1.0)
        mul_owned(y, np.ones(3), "alice", 1.0)  # bob passes values too

    with pytest.raises(ParameterError, match="None elsewhere"):
        run_mpc(elsewhere)

    def too_large(s: MPCSession) -> None:
        y = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=1.0)
        mul_owned(y, np.full(3, 2.0) if s.comm.name == "bob" else None, "bob", 1.0)

    with pytest.raises(DomainError, match="declare a larger bound"):
        run_mpc(too_large)
