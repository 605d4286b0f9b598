"""clip_norm and inv_sqrt_max: clipping and values over the root of a maximum within the documented bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import HIGH_PRECISION, FixedPointFormat
from mpdp.errors import ParameterError
from mpdp.protocols.mpc import MPCSession
from mpdp.protocols.mpc.clipping import ClipFactorParams, clip_norm, inv_sqrt_max
from tests.protocols.mpc.harness import first, run_mpc

HP = HIGH_PRECISION
TAIL = FixedPointFormat(64, 24)


def test_clip_to_l2_norm() -> None:
    g = np.array([[3.0, 4.0, 0.0], [0.3, 0.4, 0.0], [0.0, 0.0, 0.0], [-6.0, 8.0, 0.0], [1.0, 1.0, 1.0]])

    def program(s: MPCSession) -> np.ndarray:
        a = s.input("alice", g if s.comm.name == "alice" else None, bound=10.0, fmt=HIGH_PRECISION)
        return clip_norm(a, 1.0, axis=-1).reveal()

    out = first(run_mpc(program, fmt=HIGH_PRECISION))
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    expected = g * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))
    assert np.allclose(out, expected, rtol=1e-9, atol=1e-12)
    assert np.all(np.linalg.norm(out, axis=1) <= 1.0 + 1e-9)


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


def test_high_exp_for_a_bound() -> None:
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
