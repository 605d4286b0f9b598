"""DCF keys with vector payloads evaluate to ``beta [x < alpha]`` exactly, componentwise, at the edges, in every
ring; bad keys and sizes are refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fss_payload import MAX_WIDTH, dcf_eval_payload, dcf_gen_payload, payload_key_words
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import ring_for_bits
from mpdp.errors import ParameterError


def _edges(depth: int, alpha: np.ndarray) -> np.ndarray:
    top = np.uint64((1 << depth) - 1)
    one = np.uint64(1)
    with np.errstate(over="ignore"):
        rows = [alpha, (alpha - one) & top, (alpha + one) & top, np.zeros_like(alpha), np.full_like(alpha, top)]
    return np.stack(rows)


@pytest.mark.parametrize("many", [False, True])  # a step's few points or a bench's many
@pytest.mark.parametrize("bits", [16, 64, 128])
@settings(max_examples=6, deadline=None)
@given(depth=st.integers(1, 64), width=st.integers(1, 5), salt=st.binary(min_size=16, max_size=16))
def test_payload_dcf_matches_plaintext_on_edges(bits: int, depth: int, width: int, salt: bytes, many: bool) -> None:
    depth = min(depth, 64)
    ring = ring_for_bits(bits)
    prg = AesCtrPrg(salt)
    n = 9
    top = (1 << depth) - 1
    alpha = prg.uint64(n) & np.uint64(top)
    alpha[:4] = [0, 1, top, max(top - 1, 0)]  # the domain's ends and their neighbours
    beta = ring.random(prg, (width, n))
    seeds = (prg.uint64((n, 2)), prg.uint64((n, 2)))
    cw, last = dcf_gen_payload(alpha, beta, seeds, depth, ring)
    assert cw.size + 2 * n + last.size == payload_key_words(depth, ring, width) * n
    points = _edges(depth, alpha)
    if many:
        points = np.concatenate([points, prg.uint64((2000, n)) & np.uint64(top)])
    y = ring.add(dcf_eval_payload(0, seeds[0], cw, last, points, depth, ring),
                 dcf_eval_payload(1, seeds[1], cw, last, points, depth, ring))
    below = points < alpha[None, :]
    zero = ring.zeros((width, *points.shape))
    expected = np.where(below[None] if bits < 128 else below[None, None], ring.broadcast_to(
        ring.reshape(beta, (width, 1, n)), (width, *points.shape)), zero)
    assert np.array_equal(y, expected)
    single = ring.add(dcf_eval_payload(0, seeds[0], cw, last, points[1], depth, ring),
                      dcf_eval_payload(1, seeds[1], cw, last, points[1], depth, ring))
    assert np.array_equal(single, ring.index(expected, (slice(None), 1)))


def test_many_keys_are_dealt_and_evaluated_in_blocks() -> None:
    # more keys than a block of generation (2^12) and of evaluation (2^14 points): the same function throughout
    ring = ring_for_bits(128)
    prg = AesCtrPrg(b"m" * 16)
    n, depth = 5000, 12
    alpha = prg.uint64(n) & np.uint64((1 << depth) - 1)
    beta = ring.random(prg, (2, n))
    seeds = (prg.uint64((n, 2)), prg.uint64((n, 2)))
    cw, last = dcf_gen_payload(alpha, beta, seeds, depth, ring)
    points = _edges(depth, alpha)
    y = ring.add(dcf_eval_payload(0, seeds[0], cw, last, points, depth, ring),
                 dcf_eval_payload(1, seeds[1], cw, last, points, depth, ring))
    expected = np.where((points < alpha[None, :])[None, None], ring.broadcast_to(
        ring.reshape(beta, (2, 1, n)), (2, *points.shape)), ring.zeros((2, *points.shape)))
    assert np.array_equal(y, expected)


def test_one_party_outputs_look_uniform() -> None:
    """A party's output of a key whose payload is (1, 1) is spread over the ring, not 0/1 (a fair top bit:
    0.5 +- 0.04 with probability above 1 - 1e-6 for 4000 draws; fixed seeds)."""
    ring = ring_for_bits(64)
    n = 4000
    prg = AesCtrPrg(b"u" * 16)
    alpha = np.full(n, 1 << 20, dtype=np.uint64)
    seeds = (prg.uint64((n, 2)), prg.uint64((n, 2)))
    cw, last = dcf_gen_payload(alpha, np.ones((2, n), dtype=np.uint64), seeds, 40, ring)
    y0 = dcf_eval_payload(0, seeds[0], cw, last, np.zeros(n, dtype=np.uint64), 40, ring)
    assert abs(float((y0 >> np.uint64(63)).mean()) - 0.5) < 0.04


def test_bad_sizes_and_keys_are_refused() -> None:
    ring = ring_for_bits(64)
    prg = AesCtrPrg(b"k" * 16)
    seeds = (prg.uint64((3, 2)), prg.uint64((3, 2)))
    alpha = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ParameterError, match="depth"):
        dcf_gen_payload(alpha, np.ones((1, 3), dtype=np.uint64), seeds, 65, ring)
    with pytest.raises(ParameterError, match="payload width"):
        dcf_gen_payload(alpha, np.ones((MAX_WIDTH + 1, 3), dtype=np.uint64), seeds, 8, ring)
    with pytest.raises(ParameterError, match="one per key"):
        dcf_gen_payload(alpha, np.ones((2, 4), dtype=np.uint64), seeds, 8, ring)
    cw, last = dcf_gen_payload(alpha, np.ones((2, 3), dtype=np.uint64), seeds, 8, ring)
    with pytest.raises(ParameterError, match="payload DCF key"):
        dcf_eval_payload(0, seeds[0], cw[:, :, :2], last, np.zeros(3, dtype=np.uint64), 8, ring)
