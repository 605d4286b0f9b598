"""Rings Z_2^l: every operation agrees with exact Python-integer arithmetic modulo 2^l."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.ring import Z2_128, Ring, Z2k, convert_unsigned, ring_for_bits
from mpdp.crypto.ring.kernels import narrow_product as _narrow
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError
from mpdp.randomness import RandomSource

RINGS = [Z2k(64), Z2_128(), Z2k(13)]


def _ints(ring: Ring, a: np.ndarray) -> np.ndarray:
    return ring.to_object(a, signed=False)


@pytest.mark.parametrize("ring", RINGS, ids=repr)
@settings(max_examples=15)
@given(seed=st.integers(0, 2**32), rows=st.integers(1, 4), inner=st.sampled_from([1, 3, 700]))
def test_arithmetic_matches_python_ints(ring: Ring, seed: int, rows: int, inner: int) -> None:
    rng = RandomSource.seeded(seed)
    a, b = ring.random(rng, (rows, inner)), ring.random(rng, (inner, 2))
    m = ring.modulus
    ai, bi = _ints(ring, a), _ints(ring, b)
    assert (_ints(ring, ring.matmul(a, b)) == ai.dot(bi) % m).all()
    c = ring.random(rng, (rows, inner))
    ci = _ints(ring, c)
    assert (_ints(ring, ring.add(a, c)) == (ai + ci) % m).all()
    assert (_ints(ring, ring.sub(a, c)) == (ai - ci) % m).all()
    assert (_ints(ring, ring.mul(a, c)) == (ai * ci) % m).all()
    assert (_ints(ring, ring.neg(a)) == (-ai) % m).all()
    assert (_ints(ring, ring.sum(a, 1)) == ai.sum(axis=1) % m).all()
    assert (_ints(ring, ring.sum(a, None)) == ai.sum() % m)
    for k in (-(3**70), 1, 2, 1 << 40, 1 << (ring.bits - 1), 1 << ring.bits):  # powers of two take a shift
        assert (_ints(ring, ring.mul_int(a, k)) == (ai * k) % m).all()
    for shift in (0, 1, 7, ring.bits - 1):
        assert (_ints(ring, ring.shr(a, shift)) == ai >> shift).all()
    assert (ring.msb(a).astype(object) == ai >> (ring.bits - 1)).all()


@pytest.mark.parametrize("ring", RINGS, ids=repr)
def test_broadcasting_and_shapes(ring: Ring) -> None:
    rng = RandomSource.seeded(1)
    a, b = ring.random(rng, (3, 4)), ring.random(rng, (4,))
    assert ring.shape(ring.mul(a, b)) == (3, 4)
    assert ring.shape(ring.add(b, a)) == (3, 4)
    assert ring.shape(ring.apply(a, lambda v: v.T)) == (4, 3)
    assert ring.shape(ring.combine([a, a], lambda vs: np.concatenate(vs))) == (6, 4)


@pytest.mark.parametrize("ring", [Z2k(64), Z2_128()], ids=repr)
def test_signed_float_round_trip(ring: Ring) -> None:
    v = np.array([0.0, -1.0, 5.0, -(2.0**60), 2.0**61 + 2048, -(2.0**62)])
    back = ring.to_float(ring.from_rounded_float(v))
    assert np.array_equal(back, v)
    assert list(ring.to_object(ring.from_rounded_float(v))) == [int(x) for x in v]


def test_wide_ring_holds_values_beyond_64_bits() -> None:
    ring = Z2_128()
    v = np.array([2.0**100, -(2.0**110) - 2.0**60])
    assert list(ring.to_object(ring.from_rounded_float(v))) == [2**100, -(2**110) - 2**60]


@pytest.mark.parametrize("ring", [Z2k(12), Z2k(64), Z2_128()], ids=str)
def test_check_blames_the_caller_or_the_sender(ring: Ring) -> None:
    # the same invalid array is this party's argument error (ParameterError: "reduce the shares"), or with
    # received=True the sending party's (MalformedMessageError: check the peer), never accepted
    bad = [np.zeros(3, dtype=np.int64)]  # not uint64 words
    if isinstance(ring, Z2k) and ring.bits < 64:
        bad.append(np.full(3, 1 << 40, dtype=np.uint64))  # words beyond the ring
    if isinstance(ring, Z2_128):
        bad.append(np.zeros(3, dtype=np.uint64))  # not (low, high) limbs
    for value in bad:  # (the two error types are siblings under MpdpError: neither catches the other)
        with pytest.raises(ParameterError, match=r"Fix: (pass|reduce)"):
            ring.check(value, "x")
        with pytest.raises(MalformedMessageError, match="sender"):
            ring.check(value, "x", received=True)
    good = ring.zeros((3,))
    assert ring.check(good, "x", received=True) is good


def test_invalid_rings_are_refused() -> None:
    with pytest.raises(ParameterError, match="bits"):
        Z2k(65)
    with pytest.raises(ParameterError, match="bits"):
        ring_for_bits(1)
    with pytest.raises(ParameterError, match="uint64"):
        Z2k(64).check(np.zeros(3, dtype=np.int64), "x")
    with pytest.raises(ParameterError, match="residues"):
        Z2k(8).check(np.array([300], dtype=np.uint64), "x")


@pytest.mark.parametrize("shape", [(3, 4), (), (5,)])
def test_public_int_sums_and_products_of_the_wide_ring_are_exact(shape: tuple[int, ...]) -> None:
    ring, modulus = Z2_128(), 1 << 128
    a = ring.random(RandomSource.seeded("wide"), shape)
    exact = ring.to_object(a, signed=False)
    for k in [3, -7, 2**70 + 5, np.int64(-123456789), np.array(12345), 0, 2**127 + 1, -(1 << 80)]:
        assert (ring.to_object(ring.mul_int(a, k), signed=False) == (exact * int(k)) % modulus).all()
        assert (ring.to_object(ring.add_int(a, int(k)), signed=False) == (exact + int(k)) % modulus).all()
    assert (ring.to_object(ring.neg(a), signed=False) == (-exact) % modulus).all()


@pytest.mark.parametrize("ring", RINGS, ids=repr)
def test_vector_dot_product_wraps_silently(ring: Ring) -> None:
    """1-D @ 1-D reduces to one residue; the wrap-around is the ring's, not a numpy overflow warning."""
    rng = RandomSource.seeded(11)
    a, b = ring.random(rng, (50,)), ring.random(rng, (50,))
    with np.errstate(all="raise"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = ring.matmul(a, b)
    assert _ints(ring, out) == _ints(ring, a).dot(_ints(ring, b)) % ring.modulus


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 1100), (1100, 2)), ((2, 4, 100), (100, 3)),
                                                  ((1, 180_000), (180_000, 1))])
def test_z2_128_matmul_of_largest_residues_is_exact(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """Every limb at its maximum: the largest partial sums, of several inner chunks, summed per shift (and,
    from 2^20 / 6 inner terms on, placed one product at a time); batched operands too."""
    ring = Z2_128()
    m = ring.modulus
    a_int, b_int = np.full(a_shape, m - 1, dtype=object), np.full(b_shape, m - 1, dtype=object)
    expected = np.matmul(a_int, b_int) % m
    assert (_ints(ring, ring.matmul(ring.from_int(a_int), ring.from_int(b_int))) == expected).all()


@pytest.mark.parametrize("bits", [64, 13])
@pytest.mark.parametrize("extreme", [False, True])
def test_one_word_matmul_paths_agree_with_wrapping_integer_matmul(bits: int, extreme: bool) -> None:
    """Large products go through the limb BLAS products (inner chunks of 512), small or narrow ones through
    numpy's wrapping uint64 matmul: both are the ring's product (numpy's uint64 matmul wraps mod 2^64)."""
    ring = Z2k(bits)
    rng = RandomSource.seeded(f"paths{bits}")
    for a_shape, b_shape in [((64, 600), (600, 64)), ((100, 100), (100, 100)), ((3, 9, 70), (70, 40)),
                             ((5, 40), (40, 3)), ((40,), (40, 3))]:
        assert _narrow(np.empty(a_shape), np.empty(b_shape)) == (a_shape[0] not in (64, 100))  # both paths
        if extreme:
            a = np.full(a_shape, ring.modulus - 1, dtype=np.uint64)
            b = np.full(b_shape, ring.modulus - 1, dtype=np.uint64)
        else:
            a, b = ring.random(rng, a_shape), ring.random(rng, b_shape)
        expected = np.matmul(a, b) & np.uint64(ring.modulus - 1)
        assert np.array_equal(ring.matmul(a, b), expected)
        c, d = ring.random(rng, a_shape), ring.random(rng, b_shape)
        assert np.array_equal(ring.matmul_sum([(a, b), (c, d)]), ring.add(expected, ring.matmul(c, d)))


@pytest.mark.parametrize("ring", RINGS, ids=repr)
def test_matmul_sum_joins_equal_shapes_and_adds_the_others(ring: Ring) -> None:
    rng = RandomSource.seeded("msum")
    m = ring.modulus
    cases = [[((4, 30), (30, 3)), ((4, 30), (30, 3))],  # joined inner dimension
             [((4, 30), (30,)), ((4, 30), (30,)), ((4, 30), (30,))],  # matrix . vector, three terms
             [((4, 30), (30, 3)), ((4, 7), (7, 3))],  # different inner lengths: a sum of products
             [((2, 4, 5), (5, 3)), ((2, 4, 5), (5, 3))]]  # batched
    for case in cases:
        pairs = [(ring.random(rng, sa), ring.random(rng, sb)) for sa, sb in case]
        expected = sum(np.matmul(_ints(ring, a), _ints(ring, b)) for a, b in pairs) % m
        assert (_ints(ring, ring.matmul_sum(pairs)) == expected).all()
    with pytest.raises(ShapeMismatchError):
        ring.matmul_sum([])


@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 300), (300, 3)), ((3, 1100), (1100, 2))])
def test_z2_128_matmul_sum_of_largest_residues_is_exact(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """Joined inner dimensions at every limb's maximum, across an inner chunk boundary too."""
    ring = Z2_128()
    m = ring.modulus
    a_int, b_int = np.full(a_shape, m - 1, dtype=object), np.full(b_shape, m - 1, dtype=object)
    a, b = ring.from_int(a_int), ring.from_int(b_int)
    expected = (2 * np.matmul(a_int, b_int)) % m
    assert (_ints(ring, ring.matmul_sum([(a, b), (a, b)])) == expected).all()


def test_z2_128_matmul_beyond_the_exact_run_length() -> None:
    """More inner rows than _ROWS_EXACT (2^18): the product is summed over runs, each exact."""
    ring = Z2_128()
    m = ring.modulus
    k = (1 << 18) + 1000
    a_int, b_int = np.full((1, k), m - 1, dtype=object), np.full((k, 1), m - 1, dtype=object)
    expected = np.matmul(a_int, b_int) % m
    assert (_ints(ring, ring.matmul(ring.from_int(a_int), ring.from_int(b_int))) == expected).all()


@pytest.mark.parametrize("ring", [Z2k(64), Z2_128()], ids=repr)
def test_from_rounded_float_at_the_word_boundaries(ring: Ring) -> None:
    """Values within int64 take a one-conversion path in Z_2^128, larger ones the two-word split."""
    edges = [0.0, -0.0, 1.0, -1.0, 2.0**62, -(2.0**62), 2.0**63 - 1024, -(2.0**63), 3.0, -5.0]
    wide = [2.0**63, -(2.0**63) - 2048, 2.0**100, -(2.0**126)] if ring.bits == 128 else []
    for values in (edges, edges + wide, [-(2.0**63)], [7.0]):
        v = np.array(values)
        assert list(ring.to_object(ring.from_rounded_float(v))) == [int(x) for x in values]
    assert ring.to_object(ring.from_rounded_float(np.array(-3.0))) == -3  # 0-d
    assert ring.shape(ring.from_rounded_float(np.zeros((0, 2)))) == (0, 2)


@pytest.mark.parametrize(("a_shape", "k_shape"), [((4, 3), (4, 1)), ((4, 3), (3,)), ((5,), (5,)), ((2, 1), (2, 6))])
def test_wide_ring_products_with_int64_arrays(a_shape: tuple[int, ...], k_shape: tuple[int, ...]) -> None:
    """Signed 64-bit public factors (broadcast), at the int64 extremes and at the largest residues."""
    ring, modulus = Z2_128(), 1 << 128
    rng = RandomSource.seeded(f"words{a_shape}{k_shape}")
    k = rng.uint64(k_shape).view(np.int64).copy()
    k.reshape(-1)[:3] = [-(2**63), 2**63 - 1, -1][: k.size]
    for a in (ring.random(rng, a_shape), ring.from_int(np.full(a_shape, modulus - 1, dtype=object))):
        expected = (ring.to_object(a, signed=False) * k.astype(object)) % modulus
        for factor in (k, k.astype(np.int32) if np.all(np.abs(k) < 2**31) else k):
            assert (ring.to_object(ring.mul_int(a, factor), signed=False) == expected).all()
    small = np.array([[3], [-7]], dtype=np.int32)
    a = ring.random(rng, (2, 4))
    assert (ring.to_object(ring.mul_int(a, small), signed=False) ==
            (ring.to_object(a, signed=False) * small.astype(object)) % modulus).all()


@pytest.mark.parametrize("ring", RINGS, ids=repr)
def test_wide_results_take_per_limb_products(ring: Ring) -> None:
    """From 64 result columns on, limb products are separate BLAS calls (one operand pair, and joined pairs);
    batched and across an inner chunk boundary too."""
    rng = RandomSource.seeded("wide-results")
    m = ring.modulus
    for a_shape, b_shape in [((3, 70), (70, 80)), ((2, 3, 530), (530, 64))]:
        a, b, c, d = (ring.random(rng, s) for s in (a_shape, b_shape, a_shape, b_shape))
        ai, bi, ci, di = (_ints(ring, x) for x in (a, b, c, d))
        assert (_ints(ring, ring.matmul(a, b)) == np.matmul(ai, bi) % m).all()
        assert (_ints(ring, ring.matmul_sum([(a, b), (c, d)])) == (np.matmul(ai, bi) + np.matmul(ci, di)) % m).all()


def test_convert_unsigned() -> None:
    a = np.array([5, 2**63 + 7], dtype=np.uint64)
    wide = convert_unsigned(a, Z2k(64), Z2_128())
    assert Z2_128().to_object(wide, signed=False).tolist() == [5, 2**63 + 7]
    assert convert_unsigned(wide, Z2_128(), Z2k(64)).tolist() == [5, 2**63 + 7]
    assert convert_unsigned(a, Z2k(64), Z2k(8)).tolist() == [5, 7]
