"""Additive sharing: reconstruction, uniformity of partial views, and refusal of mixed sharings."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.additive import AdditiveShare, reconstruct, share
from mpdp.crypto.ring import Z2_128, Z2k
from mpdp.errors import KeyMismatchError, ParameterError
from mpdp.randomness import RandomSource


@pytest.mark.parametrize("ring", [Z2k(64), Z2_128(), Z2k(16)], ids=repr)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_share_and_reconstruct(ring, n: int) -> None:
    rng = RandomSource.seeded(n)
    secret = ring.random(rng, (4, 3))
    shares = share(secret, ring, n, rng=rng)
    assert np.array_equal(reconstruct(shares), secret)
    assert np.array_equal(reconstruct(list(reversed(shares))), secret)


def test_partial_views_are_uniform() -> None:
    # The n-1 shares other than party 0's are fresh uniform draws: their low bit is a fair coin.
    rng = RandomSource.seeded(2)
    ring = Z2k(64)
    shares = share(np.zeros(20000, dtype=np.uint64), ring, 3, rng=rng)
    for s in shares:
        ones = int(np.sum(s.value & np.uint64(1)))
        # 6 standard deviations: false failure rate below 1e-8
        assert abs(ones - 10000) < 6 * 71


def test_mixed_sharings_are_refused() -> None:
    rng = RandomSource.seeded(3)
    ring = Z2k(64)
    a = share(np.arange(3, dtype=np.uint64), ring, 2, rng=rng)
    b = share(np.arange(3, dtype=np.uint64), ring, 2, rng=rng)
    with pytest.raises(KeyMismatchError, match="sharing_id"):
        reconstruct([a[0], b[1]])


def test_incomplete_share_sets_are_refused() -> None:
    rng = RandomSource.seeded(4)
    ring = Z2k(64)
    a = share(np.arange(3, dtype=np.uint64), ring, 3, rng=rng)
    with pytest.raises(ParameterError, match="n-of-n"):
        reconstruct(a[:2])
    with pytest.raises(ParameterError, match="n-of-n"):
        reconstruct([a[0], a[1], a[1]])
    with pytest.raises(ParameterError, match="index"):
        AdditiveShare(ring, 3, 3, a[0].sharing_id, a[0].value)
