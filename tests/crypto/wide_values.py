"""Z_2^128 test values shared by the wide ring's and the wide Beaver kernels' tests: uniform elements with about
half of their 64-bit limbs replaced by word extremes (carries and borrows at every limb edge), and their Python
integers mod 2^128 (the reference arithmetic)."""

from __future__ import annotations

import numpy as np

from mpdp.crypto.ring import Z2_128
from mpdp.randomness import RandomSource

RING = Z2_128()
M = 1 << 128
EDGES = np.array([0, 1, 2, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 2, (1 << 64) - 1],
                 dtype=np.uint64)


def edge_words(rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform Z_2^128 elements of ``shape``, about half of their limbs replaced by word extremes."""
    a = RING.random(rng, shape)
    pick = rng.integers(0, 2 * len(EDGES), a.shape)
    edge = pick < len(EDGES)
    a[edge] = EDGES[pick[edge]]
    return a


def as_ints(a: np.ndarray) -> np.ndarray:
    """The elements as Python integers in ``[0, 2^128)`` (an object array)."""
    return RING.to_object(a, signed=False)
