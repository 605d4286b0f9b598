"""Secure comparison and its uses are exact, in every ring, at the edges of the range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION, FixedPointFormat
from mpdp.crypto.ring import Z2k
from mpdp.errors import ParameterError
from mpdp.protocols.mpc import MPCSession
from mpdp.protocols.mpc import comparison as cmp
from mpdp.protocols.mpc.bits import at_least, bit_decompose
from mpdp.randomness import RandomSource
from tests.protocols.mpc.harness import first, run_mpc

FORMATS = [FAST, HIGH_PRECISION, FixedPointFormat(24, 6)]


def _grid(fmt: FixedPointFormat, x: np.ndarray) -> np.ndarray:
    return fmt.decode(fmt.encode(x))


@pytest.mark.parametrize("comparisons", ["circuit", "fss"])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_comparisons_match_numpy(fmt: FixedPointFormat, comparisons: str, data: st.DataObject) -> None:
    bound = min(1000.0, fmt.max_value / 4)
    ulp = fmt.resolution
    values = st.one_of(st.floats(-bound, bound), st.sampled_from([0.0, ulp, -ulp, bound, -bound]))
    x = np.array(data.draw(st.lists(values, min_size=5, max_size=5)))
    y = np.array(data.draw(st.lists(values, min_size=5, max_size=5)))
    # ties and neighbours on the grid
    y[0], y[1] = x[0], x[1] + ulp if abs(x[1]) + ulp <= bound else x[1]

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=bound, fmt=fmt)
        b = s.input("bob", y if s.comm.name == "bob" else None, bound=bound, fmt=fmt)
        return {"ltz": cmp.ltz(a).reveal(), "lt": (a < b).reveal(), "gt": (a > b).reveal(),
                "le": (a <= b).reveal(), "ge": (a >= b).reveal(), "max": cmp.maximum(a, b).reveal(),
                "min": cmp.minimum(a, b).reveal(), "relu": cmp.relu(a).reveal(), "sign": cmp.sign(a).reveal(),
                "clip": cmp.clip(a, -1.5, 2.0).reveal(), "maxall": a.max().reveal(),
                "where": cmp.where(a < b, 7.0, b).reveal()}

    out = first(run_mpc(program, fmt=fmt, parties=2, comparisons=comparisons))
    xe, ye = _grid(fmt, x), _grid(fmt, y)
    assert np.array_equal(out["ltz"], (xe < 0).astype(float))
    assert np.array_equal(out["lt"], (xe < ye).astype(float))
    assert np.array_equal(out["gt"], (xe > ye).astype(float))
    assert np.array_equal(out["le"], (xe <= ye).astype(float))
    assert np.array_equal(out["ge"], (xe >= ye).astype(float))
    assert np.array_equal(out["max"], np.maximum(xe, ye))
    assert np.array_equal(out["min"], np.minimum(xe, ye))
    assert np.array_equal(out["relu"], np.maximum(xe, 0))
    assert np.array_equal(out["sign"], np.where(xe < 0, -1.0, 1.0))
    assert np.array_equal(out["clip"], np.clip(xe, -1.5, 2.0))
    assert out["maxall"] == xe.max()
    assert np.array_equal(out["where"], np.where(xe < ye, 7.0, ye))


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION], ids=str)
def test_ltz_at_the_edges_of_the_ring(fmt: FixedPointFormat) -> None:
    ring = fmt.ring
    edge = (1 << (ring.bits - 2)) - 1
    raw = np.array([edge, -edge, 1, -1, 0, (1 << 40) + 1, -(1 << 40)], dtype=object)

    def program(s: MPCSession) -> np.ndarray:
        share = ring.from_int(raw) if s.leader else ring.zeros((len(raw),))
        x = s.from_shares(share, bound=fmt.max_value, scale=fmt.frac_bits, fmt=fmt)
        return cmp.ltz(x).reveal()

    assert first(run_mpc(program, fmt=fmt, parties=3)).tolist() == [0, 1, 0, 1, 0, 0, 1]


@pytest.mark.parametrize(("fmt", "rounds"), [(FAST, 7), (HIGH_PRECISION, 8)], ids=str)
def test_ltz_opens_its_input_with_the_first_level_of_the_carry_tree(fmt: FixedPointFormat, rounds: int) -> None:
    # open + 5 carry levels (6 for Z_2^128's two words) + the daBit; the mask bits' pair products ride along
    def program(s: MPCSession) -> tuple[list[float], int]:
        x = s.input("alice", np.array([-2.0, 0.0, 3.0]) if s.leader else None, bound=4.0, fmt=fmt)
        ring = fmt.ring
        s.provider.prefetch([CorrelationSpec("compare", ring.bits, (3,)),
                             *cmp.pair_circuit_specs(ring.words, (ring.words, 3), (3,)),
                             CorrelationSpec("dabit", ring.bits, (3,))])
        s.provider.receive_prefetched()  # type: ignore[attr-defined]  # the dealer's round trip before counting
        before = s.comm.traffic.messages_sent  # one message to the one peer per round
        bit = cmp.ltz(x)
        spent = s.comm.traffic.messages_sent - before
        return bit.reveal().tolist(), spent

    out, spent = first(run_mpc(program, fmt=fmt))
    assert out == [1.0, 0.0, 0.0] and spent == rounds


def test_bit_decomposition_recovers_every_bit() -> None:
    x = np.array([0.0, 1.0, -1.0, 123.456, -(2.0**30), 2.0**41 - 1])

    def program(s: MPCSession) -> np.ndarray:
        a = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**41)
        words = bit_decompose(a)
        (opened,) = s.open_xor([words], sharing_id=s.new_id(), label="test")
        return opened

    opened = first(run_mpc(program, parties=3))
    assert opened.tolist() == FAST.encode(x).tolist()


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION])
def test_many_thresholds_against_one_mask_are_exact(fmt: FixedPointFormat) -> None:
    # every value at, just below and just above each threshold, plus negatives and the signed word's ends
    t = np.array([-(1 << 61), -5, 0, 1, 1 << 20, 1 << 61], dtype=np.int64)  # every x - t_j fits a signed word
    raw = np.concatenate([t, t - 1, t + 1, [-(1 << 62) + 1, (1 << 62) - 1]]).astype(np.int64)
    ring = fmt.ring

    def program(s: MPCSession) -> np.ndarray:
        word = raw.astype(np.uint64) if s.leader else np.zeros(raw.shape, dtype=np.uint64)
        bits = at_least(s, word, t, ring)
        shared = s.from_shares(bits, bound=1.0, scale=0, fmt=fmt)
        return shared.reveal()

    out = first(run_mpc(program, fmt=fmt, parties=3))
    assert out.shape == (len(t), len(raw))
    assert out.tolist() == (raw[None, :] >= t[:, None]).astype(float).tolist()


def test_where_needs_a_bit() -> None:
    def program(s: MPCSession) -> None:
        a = s.public(np.ones(2))
        with pytest.raises(ParameterError, match="shared bit"):
            cmp.where(a, 1.0, 0.0)
        with pytest.raises(ParameterError, match="low <= high"):
            cmp.clip(a, 2.0, 1.0)

    run_mpc(program)


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("words", [1, 2])
def test_less_than_public_compares_public_words_with_xor_shared_words(words: int, paired: bool) -> None:
    # Ties, neighbours and the extremes of a 64-bit word, in one and in two words (word 0 least significant).
    top = (1 << 64) - 1
    pairs = [(0, 0), (0, 1), (1, 0), (top, top), (top - 1, top), (top, 0), (5, 6), (1 << 63, (1 << 63) - 1)]
    c = np.array([[p[0] for p in pairs]] * words, dtype=np.uint64)
    r = np.array([[p[1] for p in pairs]] * words, dtype=np.uint64)
    if words == 2:  # the high words decide unless they tie: make the first half tie, the second differ
        c[1, 4:], r[1, 4:] = np.uint64(1), np.uint64(2)
    wide = [int(c[-1, i]) << 64 * (words - 1) | int(c[0, i]) for i in range(len(pairs))]
    wide_r = [int(r[-1, i]) << 64 * (words - 1) | int(r[0, i]) for i in range(len(pairs))]
    expected = [int(a < b) for a, b in zip(wide, wide_r, strict=True)]

    assert [int(v) for v in _open_less_than_public(c, r, paired)] == expected


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("words", [1, 2])
def test_less_than_public_on_many_elements_spanning_several_bit_sliced_blocks(words: int, paired: bool) -> None:
    # 3 x 70 elements: four blocks of 64 bit-sliced elements, the last one partial; r agrees with c on a
    # random number of top bits, so every level of the tree decides some comparisons.
    rng = RandomSource.seeded("less-than-public-many")
    shape = (3, 70)
    c = rng.uint64((words, *shape))
    flips = rng.uint64((words, *shape))
    keep = rng.integers(0, 64 * words, shape)
    wide_c = [sum(int(c[w].flat[i]) << 64 * w for w in range(words)) for i in range(c[0].size)]
    wide_f = [sum(int(flips[w].flat[i]) << 64 * w for w in range(words)) for i in range(c[0].size)]
    wide_r = [a ^ (f & ((1 << int(k)) - 1)) for a, f, k in zip(wide_c, wide_f, keep.flat, strict=True)]
    r = np.array([[(v >> 64 * w) & ((1 << 64) - 1) for v in wide_r] for w in range(words)],
                 dtype=np.uint64).reshape(words, *shape)
    expected = np.array([int(a < b) for a, b in zip(wide_c, wide_r, strict=True)]).reshape(shape)

    np.testing.assert_array_equal(_open_less_than_public(c, r, paired), expected)


def _open_less_than_public(c: np.ndarray, r: np.ndarray, paired: bool = False) -> np.ndarray:
    """``[c < r]`` opened, for public words ``c`` and words ``r`` that party 0 XOR-shares with party 1; with
    ``paired``, the first level's products of ``r``'s bit pairs come with an opening (:func:`.open_with_pairs`)."""

    def program(s: MPCSession) -> np.ndarray:
        mask = s.comm.rng.uint64(r.shape) if s.leader else None
        if s.leader:
            s.comm.send(s.peers[0], mask, label="test.r")
            share = r ^ mask
        else:
            share = s.comm.recv(s.parties[0], label="test.r")
        if paired:
            value = np.full(3, 7 if s.leader else 0, dtype=np.uint64)
            (seven,), pairs = cmp.open_with_pairs(s, Z2k(64), [value], share, label="test.open")
            if seven.tolist() != [7, 7, 7]:
                raise ValueError(f"the opening beside the pairs went wrong: {seven}")
            bits = cmp.less_than_public_pairs(s, c, share, pairs)
        else:
            bits = cmp.less_than_public(s, c, share)
        (opened,) = s.open_xor([bits], sharing_id=s.new_id(), label="test")
        return opened

    result: np.ndarray = first(run_mpc(program))
    return result


@pytest.mark.parametrize(("words", "shape"), [(1, (39, 100)), (2, (41, 53)), (2, (7, 3)), (1, (64,)), (2, (128,)),
                                              (1, (1,)), (1, (65,))])
def test_bit_slicing_transposes_every_block(words: int, shape: tuple[int, ...]) -> None:
    """Row i of the sliced words holds bit i of every element (a reference from numpy's unpackbits), on both routes
    (from _LARGE elements on, with and without a partial last block)."""
    from mpdp.protocols.mpc.comparison import _slice_bits

    rng = RandomSource.seeded(f"slice{words}{shape}")
    w = rng.uint64((2, words, *shape))
    n = int(np.prod(shape))
    sliced = _slice_bits(w, n)
    count = -(-n // 64)
    assert sliced.shape == (2, 64 * words, count)
    bits = np.unpackbits(w.reshape(2, words, n, 1).view(np.uint8), axis=-1, bitorder="little")  # (2, words, n, 64)
    for side in range(2):
        for word in range(words):
            for i in range(64):
                row = np.unpackbits(sliced[side, 64 * word + i].view(np.uint8), bitorder="little")[:n]
                assert np.array_equal(row, bits[side, word, :, i])
