"""clip_factor and clip_weights: 1/sqrt(max(x, 1)) (and its products) within the documented bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import HIGH_PRECISION, FixedPointFormat
from mpdp.errors import DomainError, ParameterError
from mpdp.protocols.mpc import MPCSession
from mpdp.protocols.mpc.clipping import ClipFactorParams, clip_factor, clip_weights, inv_sqrt_max
from tests.protocols.mpc.harness import first, run_mpc

HP = HIGH_PRECISION
TAIL = FixedPointFormat(64, 24)


@settings(max_examples=3, deadline=None)
@given(exponents=st.lists(st.floats(-30, 24), min_size=20, max_size=20), degree=st.sampled_from([4, 8, 10]))
def test_clip_factor_within_bound(exponents: list[float], degree: int) -> None:
    # the edges always: zero, just around 1, the top of the domain, a tiny negative (truncation residue)
    x = np.concatenate([2.0 ** np.array(exponents), [0.0, 1.0, 1 - 2.0**-40, 1 + 2.0**-40, 2.0**24, -2.0**-45]])
    params = ClipFactorParams(high_exp=24, degree=degree)

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**24, fmt=HP)
        return clip_factor(v, params).reveal()

    out = first(run_mpc(program, fmt=HP))
    ref = 1 / np.sqrt(np.maximum(HP.decode(HP.encode(x)), 1.0))
    assert np.max(np.abs(out - ref) / ref) <= params.relative_error_bound(HP)
    assert np.all(out <= 1.0 + params.relative_error_bound(HP))


def test_exact_buckets_at_the_powers_of_two() -> None:
    # H + f <= 61: the normalisation compares the raw integers, so one unit either side of a power of two
    # (1 included: where clipping starts) lands in the right bucket; the bound has no edge term
    u = HP.resolution
    x = np.array([1 - u, 1.0, 1 + u, 2 - u, 2.0, 2**8 - u, 2.0**8, 0.5, 0.0, -u])
    params = ClipFactorParams(high_exp=8)
    assert params.exact_buckets(HP) and not ClipFactorParams(high_exp=24).exact_buckets(HP)

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**8, fmt=HP)
        return clip_factor(v, params).reveal()

    out = first(run_mpc(program, fmt=HP))
    ref = 1 / np.sqrt(np.maximum(HP.decode(HP.encode(x)), 1.0))
    assert np.max(np.abs(out - ref) / ref) <= params.relative_error_bound(HP) < 1e-6


def test_weights_come_with_the_factor() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([2.0 ** rng.uniform(-4, 10, size=8), [0.0, 1.0]])
    v = rng.uniform(0, 1, size=(10, 3))
    params = ClipFactorParams(high_exp=10)

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**10, fmt=HP)
        b = s.input("bob", v if s.comm.name == "bob" else None, bound=1.0, fmt=HP)
        c, w = clip_weights(a, b, params)
        return {"c": c.reveal(), "w": w.reveal()}

    out = first(run_mpc(program, fmt=HP))
    ref = 1 / np.sqrt(np.maximum(HP.decode(HP.encode(x)), 1.0))
    eps = params.relative_error_bound(HP)
    assert np.max(np.abs(out["c"] - ref) / ref) <= eps
    vv = HP.decode(HP.encode(v))
    assert np.all(np.abs(out["w"] - vv * out["c"][:, None]) <= vv * out["c"][:, None] * eps + 3.5 * HP.resolution)


@pytest.mark.parametrize("fmt", [HP, TAIL])
@pytest.mark.parametrize(("high_exp", "half_powers"), [(13, False), (13, True), (20, False), (20, True)])
def test_values_over_the_root_of_a_maximum(high_exp: int, half_powers: bool, fmt: FixedPointFormat) -> None:
    # exact comparisons (H + f <= 61) and the reduced-precision route; octave and half-power buckets; in
    # Z_2^64 (f = 24) the polynomial is truncated before the last product and the bucket constants get
    # constant_bits() extra bits
    rng = np.random.default_rng(high_exp)
    u = fmt.resolution
    a = rng.uniform(0.25, 1.0, size=12)
    a[:2] = [0.25 - 4 * u, 2**-0.5]  # S~^2 just below 1/4 (rounding), a half-power threshold exactly
    edges = [0.0, a[7], a[8] + u, a[9] - u, 2**0.5, 2.0**high_exp]
    b = np.concatenate([2.0 ** rng.uniform(-6, high_exp, size=6), edges])
    v = rng.uniform(0, 1, size=(12, 3))
    params = ClipFactorParams(high_exp=high_exp, degree=4 if half_powers else 8, half_powers=half_powers)

    def program(s: MPCSession) -> np.ndarray:
        x = s.input("alice", np.column_stack([a, b]) if s.comm.name == "alice" else None, bound=2.0**high_exp,
                    fmt=fmt)
        w = s.input("bob", v if s.comm.name == "bob" else None, bound=1.0, fmt=fmt)
        return inv_sqrt_max(x[:, 0].assume_bound(1.0), x[:, 1], w, params, low_exp=-3).reveal()

    out = first(run_mpc(program, fmt=fmt))
    aa, bb, vv = (fmt.decode(fmt.encode(t)) for t in (a, b, v))
    ref = vv / np.sqrt(np.maximum(aa, bb))[:, None]
    eps = params.max_error_bound(fmt, -3)
    assert params.max_exact(fmt) == (high_exp + fmt.frac_bits <= 61)
    assert np.all(np.abs(out - ref) <= ref * eps + 3.5 * u)
    if fmt == HP:
        assert eps < (3e-6 if half_powers else 1e-7 if high_exp == 13 else 1e-5)
    else:  # the Z_2^64 tail of the DPVI step: H = 13 keeps the polynomial's error
        assert eps < (3e-6 if half_powers and high_exp == 13 else 2e-4)


def test_bound_shrinks_with_the_degree() -> None:
    bounds = [ClipFactorParams(high_exp=13, degree=d).relative_error_bound(HP) for d in (4, 6, 8, 10)]
    assert bounds == sorted(bounds, reverse=True) and bounds[2] < 1e-7
    assert ClipFactorParams.for_bound(1e6).high_exp == 20


def test_refuses_bad_parameters_and_bounds() -> None:
    with pytest.raises(ParameterError, match="high_exp"):
        ClipFactorParams(high_exp=0)
    with pytest.raises(ParameterError, match="degree"):
        ClipFactorParams(degree=3)
    with pytest.raises(ParameterError, match="degree"):
        ClipFactorParams(degree=8, half_powers=True)

    def program(s: MPCSession) -> None:
        v = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=2.0**10, fmt=HP)
        clip_factor(v, ClipFactorParams(high_exp=4))

    with pytest.raises(DomainError, match=r"x\.bound"):
        run_mpc(program, fmt=HP)
