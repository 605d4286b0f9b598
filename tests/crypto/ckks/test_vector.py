"""CKKS results stay within the documented precision of their parameter set (mpdp.crypto.ckks.params)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.ckks import CkksVector
from mpdp.crypto.ckks.vector import wire_form
from mpdp.errors import (
    CryptoError,
    DomainError,
    KeyMismatchError,
    ParameterError,
    PrecisionError,
    ShapeMismatchError,
    TamperedCiphertextError,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode
from tests.crypto.ckks.slots import all_slots
from tests.strategies import bounded_real_vectors


@settings(max_examples=15)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(*[bounded_real_vectors(1.0, n, n)] * 2)))
def test_identities_hold_within_the_documented_precision(ckks_d1, pair) -> None:
    x, w = pair
    p = ckks_d1.params
    a, b = CkksVector.encrypt(ckks_d1, x), CkksVector.encrypt(ckks_d1, w)
    assert np.max(np.abs(a.decrypt() - x)) <= p.encrypt_error
    assert np.max(np.abs((a + b).decrypt() - (x + w))) <= 2 * p.encrypt_error
    assert np.max(np.abs((a - b).decrypt() - (x - w))) <= 2 * p.encrypt_error
    assert np.max(np.abs(a.add_plain(w).decrypt() - (x + w))) <= 2 * p.encrypt_error
    assert np.max(np.abs(a.mul_plain(w).decrypt() - x * w)) <= p.mul_error
    assert np.max(np.abs(a.mul_scalar(-1.0).decrypt() + x)) <= p.mul_error
    assert abs(a.dot(w).decrypt()[0] - x @ w) <= p.dot_error_bound(len(x))
    assert abs(a.sum().decrypt()[0] - x.sum()) <= p.dot_error_bound(len(x))
    masked = a.dot(w).add_plain(1000.5).rerandomize()  # a dot result holds one value: the addend must fit it
    assert abs(masked.decrypt()[0] - (x @ w + 1000.5)) <= p.dot_error_bound(len(x)) + 1e-3


@pytest.mark.parametrize("length", [4096, 4097, 9000])
def test_vectors_longer_than_the_slot_count_are_chunked(ckks_d1, length) -> None:
    rng = RandomSource.seeded(length)
    x, w = rng.random(length) * 2 - 1, rng.random(length) * 2 - 1
    a = CkksVector.encrypt(ckks_d1, x)
    assert len(a.chunks) == -(-length // 4096) and len(a) == length
    assert np.max(np.abs(a.decrypt() - x)) <= ckks_d1.params.encrypt_error
    assert abs(a.dot(w).decrypt()[0] - x @ w) <= ckks_d1.params.dot_error_bound(length)


def test_depth_is_tracked_and_exceeding_it_is_refused(ckks_d1, ckks_d2_no_rotations) -> None:
    a = CkksVector.encrypt(ckks_d1, [0.5, 0.5])
    with pytest.raises(PrecisionError, match="parameters_for_depth"):
        a.mul_plain([1.0, 1.0]).mul_scalar(2.0)
    b = CkksVector.encrypt(ckks_d2_no_rotations, [0.5, -0.5])
    twice = b.mul_plain([0.5, 0.5]).mul_scalar(4.0)
    assert twice.depth_used == 2 and np.allclose(twice.decrypt(), [1.0, -1.0], atol=2 * 4 * b.params.mul_error)
    with pytest.raises(ParameterError, match="Galois"):
        b.dot([1.0, 1.0])


def test_bad_inputs_are_refused(ckks_d1, ckks_d2_no_rotations) -> None:
    a = CkksVector.encrypt(ckks_d1, [0.5, 0.5])
    with pytest.raises(ShapeMismatchError, match="one value per entry"):
        a.mul_plain([1.0, 2.0, 3.0])
    with pytest.raises(DomainError, match="NaN"):
        CkksVector.encrypt(ckks_d1, [np.nan])
    with pytest.raises(DomainError, match="larger first prime"):
        CkksVector.encrypt(ckks_d1, [2.0**20])
    with pytest.raises(KeyMismatchError):
        a + CkksVector.encrypt(ckks_d2_no_rotations, [0.5, 0.5])
    with pytest.raises(KeyMismatchError):
        a.decrypt(ckks_d2_no_rotations)
    assert a.__add__(1.0) is NotImplemented


def test_wire_round_trip_and_tamper_rejection(ckks_d1, ckks_d2_no_rotations) -> None:
    x = np.linspace(-1, 1, 5000)
    public = ckks_d1.public()
    a = CkksVector.encrypt(public, x)
    wire = decode(encode(a))
    back = CkksVector.from_wire(wire, ckks_d1)
    assert np.max(np.abs(back.decrypt() - x)) <= ckks_d1.params.encrypt_error
    result = back.dot(x)
    with pytest.raises(CryptoError, match="rerandomize"):
        result.to_wire()
    sent = decode(encode(result.rerandomize()))
    assert abs(CkksVector.from_wire(sent, ckks_d1).decrypt()[0] - x @ x) <= ckks_d1.params.dot_error_bound(5000)
    with pytest.raises(KeyMismatchError, match="context_id"):
        CkksVector.from_wire(wire, ckks_d2_no_rotations)
    with pytest.raises(TamperedCiphertextError, match="digest"):
        CkksVector.from_wire(dict(wire, chunks=[b"junk", wire["chunks"][1]]), ckks_d1)
    with pytest.raises(TamperedCiphertextError, match="digest"):
        CkksVector.from_wire(dict(wire, length=9000), ckks_d1)
    # a sender declaring what its chunks do not hold (the digest recomputed over the lie)
    with pytest.raises(TamperedCiphertextError, match="layout"):
        CkksVector.from_wire(wire_form(ckks_d1, 5000, 0, [b"junk", wire["chunks"][1]]), ckks_d1)
    with pytest.raises(TamperedCiphertextError, match="consistent"):
        CkksVector.from_wire(wire_form(ckks_d1, 9000, 0, wire["chunks"]), ckks_d1)
    with pytest.raises(TamperedCiphertextError, match="level"):
        CkksVector.from_wire(wire_form(ckks_d1, 1, 0, sent["chunks"]), ckks_d1)


def test_products_carry_no_systematic_rescale_error(ckks_d1) -> None:
    # Without the q / 2^scale correction every product is off by a relative ~1e-7, so an all-ones dot product
    # of length 9000 would be off by ~1e-3, far beyond the documented bound (~8e-5).
    ones = np.ones(9000)
    a = CkksVector.encrypt(ckks_d1, ones)
    assert abs(a.dot(ones).decrypt()[0] - 9000) <= ckks_d1.params.dot_error_bound(9000)
    assert np.max(np.abs(a.mul_scalar(0.75).decrypt() - 0.75)) <= ckks_d1.params.mul_error


def test_products_with_zero_plaintexts_stay_at_the_right_level(ckks_d1) -> None:
    """TenSEAL skips the product for an all-zero plaintext; the vector still consumes its level, so the reply of
    a CKKS inner product with an all-zero column is not mistaken for a tampered one."""
    v = CkksVector.encrypt(ckks_d1, np.ones(10))
    for result in (v.dot(np.zeros(10)), v.mul_plain(np.zeros(10)), v.mul_scalar(0.0)):
        sent = result.add_plain(3.0).rerandomize()
        back = CkksVector.from_wire(decode(encode(sent)), ckks_d1)
        assert np.max(np.abs(back.decrypt() - 3.0)) <= ckks_d1.params.dot_error_bound(10)


def test_an_addend_to_a_dot_product_covers_every_slot(ckks_d1) -> None:
    """The addend of a dot product goes into every slot of the reply, so a mask hides the product in every slot
    a key owner can decrypt, not in slot 0 alone."""
    x, w = np.linspace(-1.0, 1.0, 5000), np.cos(np.arange(5000.0))
    masked = CkksVector.encrypt(ckks_d1, x).dot(w).add_plain(12345.0).rerandomize()
    slots = all_slots(ckks_d1, masked)
    assert slots.size == ckks_d1.params.slots
    assert np.max(np.abs(slots - (x @ w + 12345.0))) <= ckks_d1.params.dot_error_bound(5000)
