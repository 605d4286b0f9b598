"""DCF keys evaluate to ``beta [x < alpha]`` exactly, at the edges (0, alpha +- 1, the domain's ends), in every ring."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fss import dcf_eval, dcf_gen, key_words
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import ring_for_bits
from mpdp.errors import ParameterError


def _keys(bits: int, depth: int, alpha: np.ndarray, seed: bytes) -> tuple:
    ring = ring_for_bits(bits)
    prg = AesCtrPrg(seed)
    n = alpha.shape[0]
    beta = ring.random(prg, (n,))
    seeds = (prg.uint64((n, 2)), prg.uint64((n, 2)))
    cw, last = dcf_gen(alpha, beta, seeds, depth, ring)
    return ring, beta, seeds, cw, last


def _edges(depth: int, alpha: np.ndarray) -> list[np.ndarray]:
    top = np.uint64((1 << depth) - 1)
    one = np.uint64(1)
    with np.errstate(over="ignore"):
        return [alpha, (alpha - one) & top, (alpha + one) & top, np.zeros_like(alpha), np.full_like(alpha, top)]


@pytest.mark.parametrize("bits", [16, 64, 128])
@settings(max_examples=8, deadline=None)
@given(depth=st.integers(1, 63), salt=st.binary(min_size=16, max_size=16))
def test_dcf_matches_plaintext_on_edges(bits: int, depth: int, salt: bytes) -> None:
    depth = min(depth, bits - 1)
    top = (1 << depth) - 1
    prg = AesCtrPrg(salt)
    alpha = prg.uint64(12) & np.uint64(top)
    alpha[:4] = [0, 1, top, max(top - 1, 0)]  # the domain's ends and their neighbours
    ring, beta, seeds, cw, last = _keys(bits, depth, alpha, salt + b"keys")
    for x in _edges(depth, alpha):
        y = ring.add(dcf_eval(0, seeds[0], cw, last, x, depth, ring), dcf_eval(1, seeds[1], cw, last, x, depth, ring))
        expected = np.where(x < alpha, beta, ring.zeros((alpha.shape[0],)))
        assert np.array_equal(y, expected)


def test_one_key_alone_looks_uniform() -> None:
    """A party's outputs of a key whose payload is 1 are spread over the ring (not the 0/1 of the function)."""
    ring = ring_for_bits(64)
    alpha = np.full(4000, 1 << 20, dtype=np.uint64)
    prg = AesCtrPrg(b"u" * 16)
    seeds = (prg.uint64((4000, 2)), prg.uint64((4000, 2)))
    cw, last = dcf_gen(alpha, np.ones(4000, dtype=np.uint64), seeds, 40, ring)
    y0 = dcf_eval(0, seeds[0], cw, last, np.zeros(4000, dtype=np.uint64), 40, ring)
    top = (y0 >> np.uint64(63)).mean()  # a fair bit: 0.5 +- 0.04 with probability > 1 - 1e-6
    assert abs(top - 0.5) < 0.04


def test_key_size_and_shapes_are_checked() -> None:
    ring = ring_for_bits(64)
    assert key_words(63, ring) == 2 + 3 * 63 + 1
    _, _, seeds, cw, last = _keys(64, 10, np.arange(5, dtype=np.uint64), b"s" * 16)
    with pytest.raises(ParameterError):
        dcf_eval(0, seeds[0], cw, last, np.zeros(6, dtype=np.uint64), 10, ring)  # another shape
    with pytest.raises(ParameterError):
        dcf_eval(0, seeds[0], cw, last, np.zeros(5, dtype=np.uint64), 65, ring)
