"""Shamir sharing: every (t+1)-subset reconstructs for n <= 7; t shares are uniform; conversions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.shamir import MERSENNE_61, MERSENNE_127, MERSENNE_521, PrimeField, ShamirScheme
from mpdp.errors import KeyMismatchError, ParameterError
from mpdp.randomness import RandomSource

FIELDS = [PrimeField(2**31 - 1), MERSENNE_61, MERSENNE_127]


@pytest.mark.parametrize("field", FIELDS, ids=repr)
@pytest.mark.parametrize("n", range(1, 8))
def test_every_t_plus_one_subset_reconstructs(field: PrimeField, n: int) -> None:
    rng = RandomSource.seeded(n)
    secret = field.random(rng, (3,))
    for t in range(n):
        scheme = ShamirScheme(field, n, t)
        shares = scheme.share(secret, rng=rng)
        for subset in itertools.combinations(shares, t + 1):
            assert np.array_equal(scheme.reconstruct(list(subset)), secret)
            xs = [s.x for s in subset]
            parts = [scheme.to_additive(s, xs) for s in subset]
            total = parts[0]
            for part in parts[1:]:
                total = field.add(total, part)
            assert np.array_equal(total, secret)


@settings(max_examples=30)
@given(a=st.integers(0, 2**61 - 2), b=st.integers(0, 2**61 - 2))
def test_mersenne_61_arithmetic(a: int, b: int) -> None:
    f = MERSENNE_61
    x, y = f.array([a, b]), f.array([b, a])
    p = f.p
    assert f.mul(x, y).tolist() == [a * b % p] * 2
    assert f.add(x, y).tolist() == [(a + b) % p] * 2
    assert f.sub(x, y).tolist() == [(a - b) % p, (b - a) % p]


def test_t_shares_are_uniform_whatever_the_secret() -> None:
    field = PrimeField(257)
    scheme = ShamirScheme(field, 4, 2)
    rng = RandomSource.seeded(9)
    for secret in (0, 200):
        shares = scheme.share(np.full(25_700, secret), rng=rng)
        for s in shares[:2]:
            counts = np.bincount(s.value.astype(np.int64), minlength=257)
            chi2 = float(np.sum((counts - 100.0) ** 2 / 100.0))
            # chi-square with 256 degrees of freedom: P(chi2 > 380) < 1e-6
            assert chi2 < 380


def test_a_256_bit_seed_is_shared_whole() -> None:
    seed = int.from_bytes(RandomSource.seeded(1).bytes(32), "big")
    scheme = ShamirScheme(MERSENNE_521, 5, 2)
    shares = scheme.share(np.array([seed], dtype=object), rng=RandomSource.seeded(2))
    assert int(scheme.reconstruct([shares[4], shares[0], shares[2]])[0]) == seed


def test_linearity_and_resharing_from_additive() -> None:
    field, rng = MERSENNE_61, RandomSource.seeded(3)
    scheme = ShamirScheme(field, 3, 1)
    a, b = field.random(rng, (4,)), field.random(rng, (4,))
    sa, sb = scheme.share(a, rng=rng), scheme.share(b, rng=rng)
    sums = [scheme.add(x, y, sharing_id=b"s" * 16) for x, y in zip(sa, sb, strict=True)]
    assert np.array_equal(scheme.reconstruct(sums[1:]), field.add(a, b))


def test_bad_use_is_refused() -> None:
    rng = RandomSource.seeded(4)
    scheme = ShamirScheme(MERSENNE_61, 5, 2)
    one, two = scheme.share(np.arange(3), rng=rng), scheme.share(np.arange(3), rng=rng)
    with pytest.raises(ParameterError, match="at least t \\+ 1"):
        scheme.reconstruct(one[:2])
    with pytest.raises(KeyMismatchError, match="sharing_id"):
        scheme.reconstruct([one[0], one[1], two[2]])
    with pytest.raises(ParameterError, match="distinct"):
        scheme.reconstruct([one[0], one[0], one[1]])
    with pytest.raises(ParameterError, match="prime"):
        PrimeField(2**61)
    with pytest.raises(ParameterError, match="0 <= t < n"):
        ShamirScheme(MERSENNE_61, 3, 3)
    with pytest.raises(ParameterError, match="subset"):
        scheme.to_additive(one[0], [1, 2])
    assert scheme.lagrange_at_zero((1, 2, 3)) is scheme.lagrange_at_zero((1, 2, 3))  # cached
