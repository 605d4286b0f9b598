"""Homomorphic identities, checked exactly on the integer encodings and within the rounding bound on reals."""

from __future__ import annotations

import numpy as np
import phe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.paillier import (
    CrtRandomizer,
    EncryptedArray,
    FixedBaseRandomizer,
    FixedPoint,
    Packing,
    decrypt,
    decrypt_ints,
    encrypt,
)
from mpdp.errors import CryptoError, EncodingOverflowError, KeyMismatchError, ParameterError, ShapeMismatchError
from mpdp.randomness import RandomSource
from tests.strategies import bounded_real_vectors

CODEC = FixedPoint(frac_bits=20, max_abs=1.0)
WEIGHTS = FixedPoint(frac_bits=12, max_abs=4.0)


def _enc(keypair, x, codec=CODEC, packing=None, seed=0):
    pk, sk = keypair
    return encrypt(pk, x, codec, packing=packing, randomizer=CrtRandomizer(sk, rng=RandomSource.seeded(seed)))


def _ints(codec, x):
    return np.array([int(v) for v in np.asarray(codec.encode(x)).reshape(-1)], dtype=object)


@settings(max_examples=30)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(bounded_real_vectors(1.0, n, n), bounded_real_vectors(1.0, n, n))))
def test_addition_subtraction_negation(small_keypair, pair) -> None:
    _, sk = small_keypair
    x, y = pair
    a, b = _enc(small_keypair, x, seed=1), _enc(small_keypair, y, seed=2)
    xi, yi = _ints(CODEC, x), _ints(CODEC, y)
    assert decrypt_ints(sk, a + b).tolist() == (xi + yi).tolist()
    assert decrypt_ints(sk, a - b).tolist() == (xi - yi).tolist()
    assert decrypt_ints(sk, -a).tolist() == (-xi).tolist()
    assert np.all(np.abs(decrypt(sk, a + b) - (x + y)) <= 2.0**-20)


@settings(max_examples=30)
@given(bounded_real_vectors(1.0, 1, 8), st.data())
def test_scalar_elementwise_and_dot_products(small_keypair, x, data) -> None:
    _, sk = small_keypair
    w = data.draw(bounded_real_vectors(4.0, len(x), len(x)))
    s = data.draw(st.sampled_from([4.0, -4.0, 0.0, 1.5]))
    a = _enc(small_keypair, x, seed=3)
    xi, wi, si = _ints(CODEC, x), _ints(WEIGHTS, w), int(WEIGHTS.encode(s))
    assert decrypt_ints(sk, a.mul(s, WEIGHTS)).tolist() == (xi * si).tolist()
    assert decrypt_ints(sk, a.mul(w, WEIGHTS)).tolist() == (xi * wi).tolist()
    dot = a.dot(w, WEIGHTS)
    assert dot.shape == () and dot.frac_bits == 32 and int(decrypt_ints(sk, dot)) == int(np.dot(xi, wi))
    # real-valued error: |sum x_i w_i - sum x~_i w~_i| <= sum (|w_i| 2^-21 + |x_i| 2^-13 + 2^-34)
    bound = np.sum(np.abs(w) * 2.0**-21 + np.abs(x) * 2.0**-13 + 2.0**-34) + 1e-12
    assert abs(float(decrypt(sk, dot)) - float(np.dot(x, w))) <= bound


@settings(max_examples=15)
@given(st.integers(1, 6), st.integers(1, 9), st.integers(1, 3), st.data())
def test_left_matmul_on_packed_rows_matches_the_integer_product(small_keypair, rows, cols, m, data) -> None:
    pk, sk = small_keypair
    X = data.draw(bounded_real_vectors(1.0, rows * cols, rows * cols)).reshape(rows, cols)
    W = data.draw(bounded_real_vectors(4.0, m * rows, m * rows)).reshape(m, rows)
    packing = Packing.for_computation(pk, CODEC, terms=rows, weight_codec=WEIGHTS)
    a = _enc(small_keypair, X, packing=packing, seed=4)
    Xi = _ints(CODEC, X).reshape(rows, cols)
    Wi = _ints(WEIGHTS, W).reshape(m, rows)
    got = a.left_matmul(W, WEIGHTS)
    assert got.shape == (m, cols) and got.packing == packing
    assert decrypt_ints(sk, got).tolist() == (Wi @ Xi).tolist()
    assert decrypt_ints(sk, a.sum()).tolist() == Xi.sum(axis=0).tolist()


def test_matrix_vector_product_on_an_unpacked_vector(keypair) -> None:
    _, sk = keypair
    x = np.array([0.5, -1.0, 0.25, 1.0])
    W = np.array([[1.0, 2.0, -3.0, 4.0], [-4.0, 0.0, 0.5, 1.0]])
    got = _enc(keypair, x).left_matmul(W, WEIGHTS)
    assert got.shape == (2,) and decrypt(sk, got).tolist() == (W @ x).tolist()
    assert float(decrypt(sk, _enc(keypair, x).sum())) == x.sum()


def test_plaintext_addition_and_masks_turn_ciphertexts_into_shares(keypair, rng) -> None:
    pk, sk = keypair
    x = np.array([[0.5, -1.0], [1.0, 0.0]])
    packing = Packing.for_computation(pk, CODEC, terms=2, mask_bits=60)
    a = _enc(keypair, x, packing=packing)
    assert decrypt(sk, a.add_plain(-x, CODEC)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    masked, r = a.add_mask(60, rng=rng)
    assert masked.bound == a.bound + 2**60 - 1
    share = decrypt_ints(sk, masked)
    assert (share - r).tolist() == CODEC.encode(x).tolist()
    with pytest.raises(ParameterError, match="frac_bits"):
        a.add_plain(x, FixedPoint(10, 1.0))


def test_results_derived_from_private_plaintext_must_be_rerandomized_before_sending(keypair, rng) -> None:
    pk, sk = keypair
    a = _enc(keypair, [0.5, 0.25])
    a.to_wire()  # a fresh encryption may be sent
    dot = a.dot([1.0, 2.0], WEIGHTS)
    with pytest.raises(CryptoError, match=r"rerandomize"):
        dot.to_wire()
    fresh = dot.rerandomize(FixedBaseRandomizer(pk, rng=rng))
    assert fresh.ciphertexts[0, 0] != dot.ciphertexts[0, 0]
    assert float(decrypt(sk, fresh)) == 1.0 and fresh.to_wire()["type"] == "paillier.array"
    assert (a + a).fresh and not a.mul(2.0, WEIGHTS).fresh


def test_bounds_are_tracked_and_overflow_is_refused_before_it_happens(small_keypair) -> None:
    pk, sk = small_keypair
    big = FixedPoint(frac_bits=200, max_abs=2.0**50)  # bound 2^250 of a ~2^511 plaintext space
    a = _enc(small_keypair, [2.0**50], codec=big)
    assert decrypt(sk, a.mul(2.0**50, big)).tolist() == [2.0**100]
    with pytest.raises(EncodingOverflowError, match="plaintext space"):
        a.mul(2.0**50, big).mul(1.0, FixedPoint(frac_bits=16))
    with pytest.raises(EncodingOverflowError, match="< n / 2"):
        encrypt(pk, [1.0], FixedPoint(frac_bits=256, max_abs=2.0**300))


def test_mismatched_operands_are_refused(keypair, other_keypair) -> None:
    a = _enc(keypair, [0.5, 0.25])
    with pytest.raises(KeyMismatchError, match="same public key"):
        a + _enc(other_keypair, [0.5, 0.25])
    with pytest.raises(ShapeMismatchError, match="shape"):
        a + _enc(keypair, [0.5])
    with pytest.raises(ShapeMismatchError, match="one weight per entry"):
        a.dot([1.0], WEIGHTS)
    with pytest.raises(ParameterError, match="packed slots share one exponent"):
        _enc(keypair, [0.5, 0.25], packing=Packing(slot_bits=64, slots=4)).mul([1.0, 2.0], WEIGHTS)
    with pytest.raises(KeyMismatchError):
        decrypt(other_keypair[1], a)
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]


def test_phe_arrays_convert_both_ways(keypair) -> None:
    pk, sk = keypair
    a = _enc(keypair, [0.5, -0.75, 1.0], codec=FixedPoint(frac_bits=18))
    numbers = a.to_phe()
    assert [sk.to_phe().decrypt(v) for v in numbers] == [0.5, -0.75, 1.0]
    phe_pk = pk.to_phe()
    back = EncryptedArray.from_phe([phe_pk.encrypt(0.5), phe_pk.encrypt(-3), phe_pk.encrypt(0.125)], pk,
                                   FixedPoint(frac_bits=64, max_abs=4.0))
    assert decrypt(sk, back).tolist() == [0.5, -3.0, 0.125]
    with pytest.raises(ParameterError, match="more fractional bits"):
        EncryptedArray.from_phe([phe_pk.encrypt(0.1)], pk, FixedPoint(frac_bits=4))


def test_unknown_operand_types_return_not_implemented(keypair) -> None:
    a = _enc(keypair, [0.5])
    assert a.__add__(3) is NotImplemented and a.__sub__("x") is NotImplemented
    assert phe is not None


def test_take_and_homomorphic_packing(small_keypair) -> None:
    pk, sk = small_keypair
    x = np.array([0.5, -1.0, 0.25, 1.0, -0.75])
    a = _enc(small_keypair, x)
    assert decrypt(sk, a.take([4, 0, 0, 2])).tolist() == [-0.75, 0.5, 0.5, 0.25]
    packing = Packing(slot_bits=24, slots=2)
    packed = a.packed(packing)
    assert packed.n_ciphertexts == 3 and packed.packing == packing
    assert decrypt(sk, packed).tolist() == x.tolist()
    matrix = _enc(small_keypair, x.reshape(1, 5)).packed(Packing.for_key(pk, 24))
    assert matrix.n_ciphertexts == 1 and decrypt(sk, matrix).tolist() == [x.tolist()]
    with pytest.raises(ShapeMismatchError, match="index within"):
        a.take([5])
    with pytest.raises(EncodingOverflowError, match="wider slots"):
        a.packed(Packing(slot_bits=16, slots=2))
