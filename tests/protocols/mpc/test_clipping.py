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


# (buckets per octave, degree): octaves, half powers (degree 4; degree 3 with its split evaluation), quarter and
# eighth powers (degree 2: one round of powers), with the bound each must stay within in the high-precision format
# (H = 13 or 20) and in Z_2^64 (H = 13)
BUCKETS = {(1, 8): (1e-7, 1e-5, 2e-4), (2, 4): (3e-6, 3e-6, 3e-6), (2, 3): (3.5e-5, 3.5e-5, 3.5e-5),
           (4, 2): (6e-5, 6e-5, 6e-5), (8, 2): (7e-6, 7e-6, 7e-6), (4, 3): (2.5e-6, 2.5e-6, 2.5e-6)}


@pytest.mark.parametrize("fmt", [HP, TAIL])
@pytest.mark.parametrize("high_exp", [13, 20])
@pytest.mark.parametrize(("per", "degree"), sorted(BUCKETS))
def test_values_over_the_root_of_a_maximum(high_exp: int, per: int, degree: int, fmt: FixedPointFormat) -> None:
    # exact comparisons (H + f <= 61) and the reduced-precision route; octave, half-, quarter- and eighth-power
    # buckets; in Z_2^64 (f = 24) the polynomial is truncated before the last product and the bucket constants
    # get constant_bits() extra bits
    rng = np.random.default_rng(high_exp)
    u = fmt.resolution
    a = rng.uniform(0.25, 1.0, size=12)
    a[:2] = [0.25 - 4 * u, 2**-0.5]  # S~^2 just below 1/4 (rounding), a half-power threshold exactly
    a[2:4] = [2**-0.25, 2**-0.125]  # a quarter- and an eighth-power threshold
    edges = [0.0, a[7], a[8] + u, a[9] - u, 2**0.5, 2.0**high_exp]
    b = np.concatenate([2.0 ** rng.uniform(-6, high_exp, size=6), edges])
    b[2] = 2.0**5.25 - u  # just below a quarter power
    v = rng.uniform(0, 1, size=(12, 3))
    params = ClipFactorParams(high_exp=high_exp, degree=degree, buckets_per_octave=per)

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
    hp13, hp20, tail13 = BUCKETS[(per, degree)]
    if fmt == HP:
        assert eps < (hp13 if high_exp == 13 else hp20)
    elif high_exp == 13:  # the Z_2^64 tail of the DPVI step: H = 13 keeps the polynomial's error
        assert eps < tail13
    else:
        assert eps < 2e-4


@settings(max_examples=4, deadline=None)
@given(exponents=st.lists(st.floats(-3, 12), min_size=16, max_size=16),
       per=st.sampled_from([2, 4, 8]), data=st.data())
def test_finer_buckets_within_bound(exponents: list[float], per: int, data: st.DataObject) -> None:
    # max(a, b) anywhere in [2^-3, 2^12], often right at a bucket threshold 2^(j / per) or one unit beside it
    degree = data.draw(st.sampled_from(sorted(ClipFactorParams(buckets_per_octave=per, degree=3).table)))
    u = TAIL.resolution
    snap = data.draw(st.lists(st.sampled_from([0.0, -u, u, None]), min_size=16, max_size=16))
    b = np.array([2.0**e if d is None else 2.0 ** (round(e * per) / per) + d
                  for e, d in zip(exponents, snap, strict=True)])
    b = np.minimum(b, 2.0**12)
    a = np.clip(b[::-1] / 2.0**10, 0.25, 1.0)
    v = np.linspace(0.0, 1.0, 32).reshape(16, 2)
    params = ClipFactorParams(high_exp=12, degree=degree, buckets_per_octave=per)

    def program(s: MPCSession) -> np.ndarray:
        x = s.input("alice", np.column_stack([a, b]) if s.comm.name == "alice" else None, bound=2.0**12, fmt=TAIL)
        w = s.input("bob", v if s.comm.name == "bob" else None, bound=1.0, fmt=TAIL)
        return inv_sqrt_max(x[:, 0].assume_bound(1.0), x[:, 1], w, params, low_exp=-3).reveal()

    out = first(run_mpc(program, fmt=TAIL))
    aa, bb, vv = (TAIL.decode(TAIL.encode(t)) for t in (a, b, v))
    ref = vv / np.sqrt(np.maximum(aa, bb))[:, None]
    assert np.all(np.abs(out - ref) <= ref * params.max_error_bound(TAIL, -3) + 3.5 * u)


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
        ClipFactorParams(degree=8, buckets_per_octave=2)
    with pytest.raises(ParameterError, match="buckets_per_octave"):
        ClipFactorParams(degree=2, buckets_per_octave=3)
    with pytest.raises(ParameterError, match="buckets_per_octave"):
        ClipFactorParams(degree=2, buckets_per_octave=True)

    def program(s: MPCSession) -> None:
        v = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=2.0**10, fmt=HP)
        clip_factor(v, ClipFactorParams(high_exp=4))

    with pytest.raises(DomainError, match=r"x\.bound"):
        run_mpc(program, fmt=HP)
