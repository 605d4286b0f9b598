"""Differential tests of the Z_2^128 kernels (one ufunc over both limbs, fused carries, 32-bit-half sums and
shape operations on the element array) against Python-int arithmetic modulo 2^128 and, for the shape
operations, against numpy on the values. Operands mix uniform words with the extremes of each word (0, 1,
2^32 - 1, 2^63, 2^64 - 1), where carries and borrows happen."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.ring import Z2k
from mpdp.crypto.ring.kernels import mulhi as _mulhi
from mpdp.randomness import RandomSource

from ..wide_values import RING, M, as_ints, edge_words


def _words(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return edge_words(RandomSource.seeded(seed), shape)


def _from_ints(v: np.ndarray) -> np.ndarray:
    return RING.from_int(np.asarray(v, dtype=object))


SHAPES = st.sampled_from([(), (1,), (5,), (3, 4), (2, 3, 5), (1, 7)])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), shape=SHAPES, other=st.sampled_from(["same", "row", "scalar", "column"]))
def test_elementwise_kernels_match_python_ints(seed: int, shape: tuple[int, ...], other: str) -> None:
    a = _words(seed, shape)
    b_shape = {"same": shape, "row": shape[-1:], "scalar": (), "column": (*shape[:-1], 1)}[other]
    b = _words(seed + 1, b_shape)
    ai, bi = as_ints(a), as_ints(b)
    for x, y, xi, yi in ((a, b, ai, bi), (b, a, bi, ai)):
        assert np.array_equal(as_ints(RING.add(x, y)), (xi + yi) % M)
        assert np.array_equal(as_ints(RING.sub(x, y)), (xi - yi) % M)
        assert np.array_equal(as_ints(RING.mul(x, y)), (xi * yi) % M)
    assert np.array_equal(as_ints(RING.neg(a)), (-ai) % M)
    for k in (0, 1, 5, 2**64 - 1, 2**64 + 3, 2**127, -1, -(3**70)):
        assert np.array_equal(as_ints(RING.add_int(a, k)), (ai + k) % M)
        assert np.array_equal(as_ints(RING.mul_int(a, k)), (ai * k) % M)
    for shift in (0, 1, 31, 32, 63, 64, 65, 100, 127, 128, 130):
        assert np.array_equal(as_ints(RING.shr(a, shift)), ai >> shift)
        assert np.array_equal(as_ints(RING.shl(a, shift)), (ai << shift) % M)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(0, 40))
def test_mulhi_is_the_high_word_of_the_full_product(seed: int, size: int) -> None:
    a, b = _words(seed, (size,))[0], _words(seed + 1, (size,))[1]
    want = [(int(x) * int(y)) >> 64 for x, y in zip(a, b, strict=True)]
    assert [int(h) for h in _mulhi(a, b)] == want
    out = np.empty(size, dtype=np.uint64)
    assert _mulhi(a, b, out) is out and [int(h) for h in out] == want
    for k in (0, 1, 2**63, 2**64 - 1):
        assert [int(h) for h in _mulhi(a, np.uint64(k))] == [(int(x) * k) >> 64 for x in a]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), shape=st.sampled_from([(), (4,), (3, 5), (2, 3, 4), (0, 3), (3, 0)]),
       data=st.data())
def test_sums_over_any_axes_match_python_ints(seed: int, shape: tuple[int, ...], data: st.DataObject) -> None:
    a = _words(seed, shape)
    ai = as_ints(a)
    n = len(shape)
    axes = [None] + [i for i in range(-n, n)] + [(0, n - 1)] * (n > 1) + [(-1, 0)] * (n > 1) + [()]
    axis = data.draw(st.sampled_from(axes))
    want = np.asarray(ai.sum(axis=axis), dtype=object) % M if ai.size else np.zeros(np.sum(
        np.zeros(shape), axis=axis).shape, dtype=object)
    got = RING.sum(a, axis)
    assert RING.shape(got) == np.shape(want)
    assert np.array_equal(as_ints(got), want)
    # non-contiguous input (a transposed view) gives the same sums
    if n == 2 and axis is not None and axis != ():
        t = RING.transpose(a)
        assert np.array_equal(as_ints(RING.sum(t, axis)), np.asarray(ai.T.sum(axis=axis), dtype=object) % M)


def test_sums_of_the_largest_residues_carry_exactly() -> None:
    a = np.full((2, 1000, 3), np.uint64(2**64 - 1), dtype=np.uint64)
    assert list(as_ints(RING.sum(a, 0))) == [(1000 * (M - 1)) % M] * 3
    assert int(as_ints(RING.sum(a, None))) == (3000 * (M - 1)) % M


KEYS = [np.s_[1], np.s_[-1], np.s_[:2], np.s_[::-1], np.s_[1:, None], np.s_[..., 0], np.s_[None],
        np.s_[[0, 2]], np.s_[:, [1, 0, 1]], np.s_[np.array([True, False, True])], np.s_[1, [0, 1]],
        np.s_[[0, 1], :, [1, 0]], np.s_[[0, 1], [1, 0]], np.s_[..., [2, 0]], np.s_[np.int64(2)], np.s_[True]]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_indexing_on_the_element_array_equals_indexing_the_values(key: object) -> None:
    a = _words(3, (3, 4, 5))
    ai = as_ints(a)
    got = RING.index(a, key)
    assert np.array_equal(as_ints(got), ai[key])
    assert np.array_equal(as_ints(RING.apply(a, lambda v: v[key])), ai[key])
    # the one-word rings index the same way
    w = Z2k(64).random(RandomSource.seeded(4), (3, 4, 5))
    assert np.array_equal(Z2k(64).index(w, key), w[key])


@pytest.mark.parametrize("shape", [(60,), (3, 20), (-1, 4), (5, 3, 4), 60])
def test_reshape_transpose_broadcast_match_numpy(shape: object) -> None:
    a = _words(5, (3, 4, 5))
    ai = as_ints(a)
    assert np.array_equal(as_ints(RING.reshape(a, shape)), ai.reshape(shape))
    for axes in [(), (2, 0, 1), (-1, -3, -2), (0, 1, 2)]:
        want = ai.transpose(*axes) if axes else ai.T
        assert np.array_equal(as_ints(RING.transpose(a, axes)), want)
    with pytest.raises(ValueError):
        RING.transpose(a, (0, 1, 3))
    col = _words(6, (4, 1))
    ci = as_ints(col)
    for target in [(4, 3), (2, 4, 3)]:
        got = RING.broadcast_to(col, target)
        assert np.array_equal(as_ints(got), np.broadcast_to(ci, target))
        got[0, ...] = 0  # a new array, not a view of col
        assert np.array_equal(as_ints(col), ci)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concatenate_and_stack_match_numpy(axis: int) -> None:
    a, b = _words(7, (3, 4)), _words(8, (3, 4))
    ai, bi = as_ints(a), as_ints(b)
    assert np.array_equal(as_ints(RING.concatenate([a, b], axis)), np.concatenate([ai, bi], axis=axis))
    assert np.array_equal(as_ints(RING.stack([a, b], axis)), np.stack([ai, bi], axis=axis))
    assert np.array_equal(as_ints(RING.stack([a, b], 2)), np.stack([ai, bi], axis=2))
    assert np.array_equal(as_ints(RING.stack([a, b], -3)), np.stack([ai, bi], axis=-3))
    with pytest.raises(ValueError):
        RING.concatenate([a, b], 2)
    with pytest.raises(ValueError):
        RING.concatenate([_words(9, ()), _words(9, ())], 0)
    with pytest.raises(ValueError):
        RING.stack([a, _words(9, (4, 3))], 0)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-(2**120), 2**120), min_size=0, max_size=12),
       zero_d=st.booleans())
def test_from_rounded_float_matches_python_ints(values: list[int], zero_d: bool) -> None:
    v = np.array([float(x) for x in values], dtype=np.float64)  # integer-valued floats
    if zero_d and values:
        v = v[0]
    got = RING.from_rounded_float(np.asarray(v))
    want = np.asarray(np.vectorize(lambda x: int(x) % M, otypes=[object])(v) if np.size(v) else v.astype(object))
    assert RING.shape(got) == np.shape(v)
    assert np.array_equal(as_ints(got), want)
