"""Masked dot products on SEAL directly agree with the plaintext within the set's dot-product bound, in every slot."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpdp.crypto.ckks import CkksContext, CkksVector
from mpdp.crypto.ckks.dots import PlainColumns, masked_dots, masked_slot_products
from mpdp.errors import DomainError, KeyMismatchError, ParameterError, ShapeMismatchError
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode
from tests.crypto.ckks.slots import all_slots


def _columns(rows: int) -> np.ndarray:
    """Four columns: a smooth one, one zero in its second chunk, one zero everywhere, one of mixed signs."""
    t = np.linspace(-1.0, 1.0, rows)
    second_zero = np.cos(7.0 * t)
    second_zero[4096:] = 0.0
    return np.stack([np.sin(3.0 * t), second_zero, np.zeros(rows), np.sign(t) * t**2], axis=1)


def test_every_slot_holds_the_masked_product(ckks_d1) -> None:
    rows = 6000  # two chunks of 4096 slots
    x = np.linspace(1.0, -1.0, rows) ** 3
    y = _columns(rows)
    masks = np.array([1234.5, -20000.25, 0.0, 7.0])
    vector = CkksVector.from_wire(decode(encode(CkksVector.encrypt(ckks_d1, x).to_wire())), ckks_d1.public())
    wires = masked_dots(vector, PlainColumns(vector.context, y), masks)
    bound = ckks_d1.params.dot_error_bound(rows)
    for wire, column, mask in zip(wires, y.T, masks, strict=True):
        received = CkksVector.from_wire(decode(encode(wire)), ckks_d1)  # the key owner's checks pass
        assert received.length == 1 and received.depth_used == 1
        slots = all_slots(ckks_d1, received)
        assert np.max(np.abs(slots - (x @ column + mask))) <= bound


@pytest.mark.parametrize("rows", [6000, 36_178])  # two chunks; Figure-size data (9 chunks)
def test_masked_slot_products_hold_each_slots_partial_sum_under_its_mask(ckks_d1, rows: int) -> None:
    x, y = np.linspace(1.0, -1.0, rows) ** 3, _columns(rows)
    vector = CkksVector.from_wire(decode(encode(CkksVector.encrypt(ckks_d1, x).to_wire())), ckks_d1.public())
    slots = ckks_d1.params.slots
    masks = (2 * RandomSource.seeded(3).random((4, slots)) - 1) * (2.0**19 - 2.0**10)
    chunks = -(-rows // slots)
    padded_x, padded_y = np.zeros(chunks * slots), np.zeros((chunks * slots, 4))
    padded_x[:rows], padded_y[:rows] = x, y
    partial = (padded_x[:, None] * padded_y).reshape(chunks, slots, 4).sum(axis=0).T  # (4, slots)
    bound = ckks_d1.params.dot_error_bound(rows)
    wires = masked_slot_products(vector, PlainColumns(vector.context, y), masks)
    for wire, column, mask, part in zip(wires, y.T, masks, partial, strict=True):
        received = CkksVector.from_wire(decode(encode(wire)), ckks_d1)  # the key owner's checks pass
        assert (received.length, received.depth_used) == (slots, 1)
        seen = all_slots(ckks_d1, received)
        assert np.max(np.abs(seen - (part + mask))) <= bound  # each slot: its partial sum under its mask
        # the slots add up to the product plus the masks' sum, within the dot-product bound
        assert abs(math.fsum(seen.tolist()) - math.fsum(mask.tolist()) - x @ column) <= bound


def test_replies_are_rerandomized(ckks_d1) -> None:
    vector = CkksVector.encrypt(ckks_d1, np.ones(10))
    plain = PlainColumns(vector.context, np.ones((10, 1)))
    first, second = (masked_dots(vector, plain, [5.0])[0]["chunks"][0] for _ in range(2))
    assert first != second  # a fresh encryption of zero each time
    masks = np.zeros((1, ckks_d1.params.slots))
    first, second = (masked_slot_products(vector, plain, masks)[0]["chunks"][0] for _ in range(2))
    assert first != second


def test_bad_inputs_are_refused(ckks_d1, ckks_d2_no_rotations) -> None:
    vector = CkksVector.encrypt(ckks_d1, np.ones(10))
    plain = PlainColumns(ckks_d1, np.ones((10, 2)))
    with pytest.raises(DomainError, match="masks"):
        masked_dots(vector, plain, [1.0])
    with pytest.raises(DomainError, match="masks"):
        masked_dots(vector, plain, [np.nan, 0.0])
    with pytest.raises(ShapeMismatchError, match="vector"):
        masked_dots(CkksVector.encrypt(ckks_d1, np.ones(11)), plain, [0.0, 0.0])
    with pytest.raises(ShapeMismatchError, match="vector"):
        masked_dots(vector.mul_scalar(0.5), plain, [0.0, 0.0])
    other = CkksContext.generate(ckks_d1.params)
    with pytest.raises(KeyMismatchError, match="context"):
        masked_dots(CkksVector.encrypt(other, np.ones(10)), plain, [0.0, 0.0])
    no_keys = PlainColumns(ckks_d2_no_rotations, np.ones((10, 1)))
    with pytest.raises(ParameterError, match="Galois"):
        masked_dots(CkksVector.encrypt(ckks_d2_no_rotations, np.ones(10)), no_keys, [0.0])
    slots = ckks_d1.params.slots
    with pytest.raises(DomainError, match="masks"):
        masked_slot_products(vector, plain, np.zeros((1, slots)))
    with pytest.raises(DomainError, match="masks"):
        masked_slot_products(vector, plain, np.full((2, slots), 2.0**19))
    with pytest.raises(ShapeMismatchError, match="vector"):
        masked_slot_products(vector.mul_scalar(0.5), plain, np.zeros((2, slots)))
    with pytest.raises(DomainError, match="columns"):
        PlainColumns(ckks_d1, np.full((10, 1), np.inf))
    with pytest.raises(ShapeMismatchError, match="columns"):
        PlainColumns(ckks_d1, np.ones(10))
