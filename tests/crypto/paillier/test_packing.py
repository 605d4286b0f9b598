from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.paillier import CrtRandomizer, FixedPoint, Packing, decrypt, decrypt_ints, encrypt
from mpdp.errors import EncodingOverflowError, ParameterError, PrecisionError, TamperedCiphertextError
from mpdp.randomness import RandomSource


def _slot_values(width: int, rows: int, cols: int) -> st.SearchStrategy[np.ndarray]:
    cap = (1 << (width - 1)) - 1
    value = st.one_of(st.sampled_from([cap, -cap, 0, 1, -1]), st.integers(-cap, cap))
    return st.lists(value, min_size=rows * cols, max_size=rows * cols).map(
        lambda v: np.array(v, dtype=object).reshape(rows, cols)
    )


@pytest.mark.parametrize("width", [8, 16, 64, 13, 100])
@given(data=st.data())
def test_pack_unpack_round_trips_at_the_slot_limits(width, data) -> None:
    packing = Packing(slot_bits=width, slots=5)
    rows, cols = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 12))
    values = data.draw(_slot_values(width, rows, cols))
    packed = packing.pack(values)
    assert packed.shape == (rows, packing.blocks(cols))
    back = packing.unpack(packed, cols, packing.capacity)
    assert [int(v) for v in back.reshape(-1)] == [int(v) for v in values.reshape(-1)]


@pytest.mark.parametrize("width", [16, 13])
def test_one_past_the_slot_capacity_is_refused(width) -> None:
    packing = Packing(slot_bits=width, slots=4)
    with pytest.raises(EncodingOverflowError, match=f"{packing.capacity}"):
        packing.pack(np.array([[0, packing.capacity + 1]], dtype=object))
    with pytest.raises(EncodingOverflowError, match="slot"):
        packing.pack(np.array([[-(packing.capacity + 1)]], dtype=object))


@pytest.mark.parametrize("width", [16, 13])
def test_unpacking_reports_values_beyond_the_bound_and_dirty_spare_slots(width) -> None:
    packing = Packing(slot_bits=width, slots=4)
    packed = packing.pack(np.array([[5, -7, 3]], dtype=object))
    with pytest.raises(EncodingOverflowError, match=r"\|v\| <= 6"):
        packing.unpack(packed, 3, 6)
    dirty = packed.copy()
    dirty[0, 0] += 1 << (3 * width)  # the unused fourth slot
    with pytest.raises(TamperedCiphertextError, match="unused packing slot"):
        packing.unpack(dirty, 3, 10)


def test_headroom_is_sized_for_the_declared_computation(keypair) -> None:
    pk, _ = keypair
    codec = FixedPoint(frac_bits=16, max_abs=1.0)
    p = Packing.for_computation(pk, codec, terms=45_222, weight_codec=codec)
    need = 45_222 * 2**16 * 2**16
    assert p.capacity >= need and p.slot_bits % 8 == 0 and p.slot_bits * p.slots <= pk.bits - 2
    assert Packing.for_computation(pk, codec, terms=45_222, weight_codec=codec, byte_aligned=False).slot_bits == (
        need.bit_length() + 1
    )
    assert Packing.for_computation(pk, codec, mask_bits=80).capacity >= 2**80
    with pytest.raises(PrecisionError, match="larger key"):
        Packing.for_computation(pk, FixedPoint(200, 2.0**100), terms=2**500, weight_codec=FixedPoint(200, 1e30))
    with pytest.raises(ParameterError, match="terms"):
        Packing.for_computation(pk, codec, terms=0)
    with pytest.raises(PrecisionError, match="fewer slots"):
        encrypt(pk, [0.5], codec, packing=Packing(slot_bits=64, slots=64))


def test_encrypted_sums_fill_the_headroom_exactly_and_one_more_term_is_refused(keypair) -> None:
    pk, sk = keypair
    codec = FixedPoint(frac_bits=4, max_abs=1.0)  # bound 16
    terms = 7
    packing = Packing.for_computation(pk, codec, terms=terms, byte_aligned=False)  # 16 * 7 = 112 -> 8-bit slots
    assert packing.capacity == 127
    rng = RandomSource.seeded("fill")
    top = encrypt(pk, np.ones((terms, 10)), codec, packing=packing, randomizer=CrtRandomizer(sk, rng=rng))
    bottom = encrypt(pk, -np.ones((terms, 10)), codec, packing=packing, randomizer=CrtRandomizer(sk, rng=rng))
    assert decrypt(sk, top.sum()).tolist() == [7.0] * 10
    assert decrypt_ints(sk, bottom.sum()).tolist() == [-112] * 10
    row = encrypt(pk, np.ones(10), codec, packing=packing, randomizer=CrtRandomizer(sk, rng=rng))
    acc = row
    for _ in range(terms - 1):
        acc = acc + row
    assert decrypt_ints(sk, acc).tolist() == [112] * 10
    with pytest.raises(EncodingOverflowError, match="declare more headroom"):
        acc + row
