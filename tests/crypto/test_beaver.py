"""The local algebra of mpdp.crypto.beaver: two parties' shares recombine to the exact ring result.

Each test deals shares of random (and of the largest) residues to two parties by hand, runs both parties'
local step and compares the sum of their outputs with Python big-int arithmetic modulo 2^l. The one-word
rings take fused in-place paths, Z_2^128 the generic ring operations: both are covered, with broadcasting.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.beaver import and_combine, b2a_combine, beaver_combine, square_combine, wrap_shift_output
from mpdp.crypto.ring import Z2_128, Ring, RingArray, Z2k
from mpdp.randomness import RandomSource

RINGS = [Z2k(64), Z2_128(), Z2k(13)]
SHAPES = [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((5,), (5,)), ((2, 3), (3,))]


def _ints(ring: Ring, a: RingArray) -> np.ndarray:
    return ring.to_object(a, signed=False)


def _split(ring: Ring, x: RingArray, rng: RandomSource) -> tuple[RingArray, RingArray]:
    s0 = ring.random(rng, ring.shape(x))
    return s0, ring.sub(x, s0)


def _values(ring: Ring, rng: RandomSource, shape: tuple[int, ...], extreme: bool) -> RingArray:
    """Uniform residues, or the largest one (2^l - 1) everywhere."""
    if extreme:
        return ring.from_int(np.full(shape, ring.modulus - 1, dtype=object))
    return ring.random(rng, shape)


@pytest.mark.parametrize("ring", RINGS, ids=repr)
@pytest.mark.parametrize(("x_shape", "y_shape"), SHAPES)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32), extreme=st.booleans())
def test_beaver_products_recombine(ring: Ring, x_shape: tuple[int, ...], y_shape: tuple[int, ...], seed: int,
                                   extreme: bool) -> None:
    rng = RandomSource.seeded(seed)
    x, y = _values(ring, rng, x_shape, extreme), _values(ring, rng, y_shape, extreme)
    a, b = ring.random(rng, x_shape), ring.random(rng, y_shape)
    c = ring.mul(a, b)
    d, e = ring.sub(x, a), ring.sub(y, b)
    (a0, a1), (b0, b1), (c0, c1) = _split(ring, a, rng), _split(ring, b, rng), _split(ring, c, rng)
    z = ring.add(beaver_combine(ring, d, e, a0, b0, c0, leader=True),
                 beaver_combine(ring, d, e, a1, b1, c1, leader=False))
    assert (_ints(ring, z) == (_ints(ring, x) * _ints(ring, y)) % ring.modulus).all()
    # squares: one opened value
    sq = ring.mul(a, a)
    (s0, s1), (q0, q1) = _split(ring, a, rng), _split(ring, sq, rng)
    dx = ring.sub(x, a)
    z2 = ring.add(square_combine(ring, dx, s0, q0, leader=True), square_combine(ring, dx, s1, q1, leader=False))
    assert (_ints(ring, z2) == (_ints(ring, x) ** 2) % ring.modulus).all()


@pytest.mark.parametrize("ring", RINGS, ids=repr)
@pytest.mark.parametrize(("x_shape", "y_shape"), [((4, 3), (3, 2)), ((3,), (3, 2)), ((2, 3), (3,)),
                                                  ((2, 4, 3), (3, 5)), ((2, 600), (600, 3))])
@pytest.mark.parametrize("extreme", [False, True])
def test_beaver_matrix_products_recombine(ring: Ring, x_shape: tuple[int, ...], y_shape: tuple[int, ...],
                                          extreme: bool) -> None:
    rng = RandomSource.seeded(f"mm{x_shape}{y_shape}")
    x, y = _values(ring, rng, x_shape, extreme), _values(ring, rng, y_shape, extreme)
    a, b = _values(ring, rng, x_shape, extreme), _values(ring, rng, y_shape, extreme)
    c = ring.matmul(a, b)
    d, e = ring.sub(x, a), ring.sub(y, b)
    (a0, a1), (b0, b1), (c0, c1) = _split(ring, a, rng), _split(ring, b, rng), _split(ring, c, rng)
    z = ring.add(beaver_combine(ring, d, e, a0, b0, c0, leader=True, matmul=True),
                 beaver_combine(ring, d, e, a1, b1, c1, leader=False, matmul=True))
    assert (_ints(ring, z) == np.matmul(_ints(ring, x), _ints(ring, y)) % ring.modulus).all()


@pytest.mark.parametrize("shape", [(3, 70), (5,), (2, 1, 3)])
@pytest.mark.parametrize("leader_second", [False, True])
def test_and_combine_recombines(shape: tuple[int, ...], leader_second: bool) -> None:
    rng = RandomSource.seeded(f"and{shape}")
    x, y, a, b = (rng.uint64(shape) for _ in range(4))
    c = a & b
    a0, b0, c0 = rng.uint64(shape), rng.uint64(shape), rng.uint64(shape)
    d, e = x ^ a, y ^ b
    z0 = and_combine(d, e, a0, b0, c0, leader=not leader_second)
    z1 = and_combine(d, e, a ^ a0, b ^ b0, c ^ c0, leader=leader_second)
    assert np.array_equal(z0 ^ z1, x & y)
    # a column operand broadcast against a matrix takes the general path
    x1, a1 = x[..., :1], a[..., :1]
    c1 = a1 & b
    a10, c10 = rng.uint64(a1.shape), rng.uint64(c1.shape)
    d1 = x1 ^ a1
    z0 = and_combine(d1, e, a10, b0, c10, leader=True)
    z1 = and_combine(d1, e, a1 ^ a10, b ^ b0, c1 ^ c10, leader=False)
    assert np.array_equal(z0 ^ z1, x1 & y)


@pytest.mark.parametrize("ring", RINGS, ids=repr)
def test_b2a_combine_recombines(ring: Ring) -> None:
    rng = RandomSource.seeded("b2a")
    bits, s_bits = rng.bits((4, 9)), rng.bits((4, 9))
    s = ring.from_int(s_bits.astype(np.int64))
    s0, s1 = _split(ring, s, rng)
    v = bits ^ s_bits
    z = ring.add(b2a_combine(ring, v, s0, leader=True), b2a_combine(ring, v, s1, leader=False))
    assert (_ints(ring, z) == bits.astype(object)).all()


@pytest.mark.parametrize(("ring_in", "ring_out", "shift"), [
    (Z2k(64), Z2k(64), 24), (Z2k(64), Z2k(64), 0), (Z2k(64), Z2k(64), 62), (Z2k(13), Z2k(13), 4),
    (Z2_128(), Z2_128(), 48), (Z2_128(), Z2k(64), 101), (Z2_128(), Z2k(64), 40), (Z2_128(), Z2k(64), 10),
    (Z2k(64), Z2_128(), 20), (Z2k(13), Z2k(64), 3), (Z2k(64), Z2k(13), 55),
])
@pytest.mark.parametrize("offset_back", [True, False])
def test_wrap_shift_output_is_the_shift_rounded_either_way(ring_in: Ring, ring_out: Ring, shift: int,
                                                          offset_back: bool) -> None:
    """floor((x + 2^(l-2)) / 2^k) or one more (minus the offset), for values across the whole allowed range
    |x| < 2^(l-2), including its ends, and masks with either top bit."""
    rng = RandomSource.seeded(f"wrap{ring_in}{ring_out}{shift}")
    l_in, n = ring_in.bits, 400
    quarter = 1 << (l_in - 2)
    ends = [-quarter + 1, quarter - 1, 0, -1, 1]
    xs = ends + [int(v) % (2 * quarter) - quarter for v in ring_in.to_object(ring_in.random(rng, (n - 5,)),
                                                                             signed=False)]
    x = ring_in.from_int(np.array(xs, dtype=object))
    r = ring_in.random(rng, (n,))
    c = ring_in.add_int(ring_in.add(x, r), quarter)
    r_int = _ints(ring_in, r)
    half = 1 << (l_in - 1)
    msb = ring_out.from_int(np.array([v // half for v in r_int], dtype=object))
    low = ring_out.from_int(np.array([(v % half) >> shift for v in r_int], dtype=object))
    (m0, m1), (w0, w1) = _split(ring_out, msb, rng), _split(ring_out, low, rng)
    out = ring_out.add(wrap_shift_output(ring_in, ring_out, c, m0, w0, shift, leader=True, offset_back=offset_back),
                       wrap_shift_output(ring_in, ring_out, c, m1, w1, shift, leader=False, offset_back=offset_back))
    got = _ints(ring_out, out)
    for xv, g in zip(xs, got, strict=True):
        floor = (xv + quarter) >> shift
        if offset_back:
            floor -= quarter >> shift
        assert g in {floor % ring_out.modulus, (floor + 1) % ring_out.modulus}
