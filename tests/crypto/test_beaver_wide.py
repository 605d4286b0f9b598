"""The fused Z_2^128 paths of mpdp.crypto.beaver, share by share: each party's output equals the defining
formula evaluated with Python ints modulo 2^128 (so the fused kernels are bit-identical to the generic ring
operations they replace, not only correct after recombination)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.beaver import b2a_combine, beaver_combine, wrap_shift_output
from mpdp.randomness import RandomSource

from .wide_values import RING, M, as_ints, edge_words


@pytest.mark.parametrize(("x_shape", "y_shape"), [((3, 4), (3, 4)), ((39, 5), (1, 5)), ((2, 3), (3,)),
                                                  ((4,), (2, 4)), ((1,), (1,)), ((3, 1), (1, 4))])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), leader=st.booleans())
def test_fused_beaver_share_is_c_plus_d_f_plus_a_e(x_shape: tuple[int, ...], y_shape: tuple[int, ...], seed: int,
                                                   leader: bool) -> None:
    rng = RandomSource.seeded(seed)
    d, a = edge_words(rng, x_shape), edge_words(rng, x_shape)
    e, b = edge_words(rng, y_shape), edge_words(rng, y_shape)
    c = edge_words(rng, np.broadcast_shapes(x_shape, y_shape))
    di, ai, ei, bi, ci = (as_ints(v) for v in (d, a, e, b, c))
    fi = (bi + ei) % M if leader else bi
    got = beaver_combine(RING, d, e, a, b, c, leader=leader)
    assert np.array_equal(as_ints(got), (ci + di * fi + ai * ei) % M)
    for v, w in ((d, di), (e, ei), (a, ai), (b, bi), (c, ci)):  # operands untouched
        assert np.array_equal(as_ints(v), w)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), shift=st.sampled_from([0, 1, 20, 40, 61, 62, 63, 64, 100]),
       shape=st.sampled_from([(5,), (3, 4), (1, 100)]), leader=st.booleans(), offset_back=st.booleans())
def test_fused_wrap_shift_share_matches_its_formula(seed: int, shift: int, shape: tuple[int, ...], leader: bool,
                                                    offset_back: bool) -> None:
    rng = RandomSource.seeded(seed)
    c, msb, low = edge_words(rng, shape), edge_words(rng, shape), edge_words(rng, shape)
    ci, mi, li = as_ints(c), as_ints(msb), as_ints(low)
    sign = np.where(ci >> 127 == 1, -1, 1).astype(object)
    want = (mi * sign * (1 << (127 - shift)) - li) % M
    if leader:
        want = (want + (ci >> shift) - ((1 << (126 - shift)) if offset_back else 0)) % M
    got = wrap_shift_output(RING, RING, c, msb, low, shift, leader=leader, offset_back=offset_back)
    assert np.array_equal(as_ints(got), want)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), shape=st.sampled_from([(7,), (3, 4), (1,)]), leader=st.booleans())
def test_fused_b2a_share_is_one_minus_two_v_times_s(seed: int, shape: tuple[int, ...], leader: bool) -> None:
    rng = RandomSource.seeded(seed)
    s = edge_words(rng, shape)
    v = rng.integers(0, 2, shape).astype(np.uint8)
    si, vi = as_ints(s), v.astype(object)
    got = b2a_combine(RING, v, s, leader=leader)
    want = ((1 - 2 * vi) * si + (vi if leader else 0)) % M
    assert np.array_equal(as_ints(got), want)
    assert np.array_equal(as_ints(s), si)  # the share is not overwritten
