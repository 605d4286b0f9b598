"""The random source: reproducibility, freshness, exact uniformity of every draw."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource, resolve

# Statistical tests use fixed seeds; each is a chi-square or binomial test at level ALPHA, so a correct
# implementation fails a given test with probability ALPHA for a random seed, and never for these seeds.
ALPHA = 1e-6


def test_seeded_source_reproduces_and_says_so() -> None:
    a, b = RandomSource.seeded(7), RandomSource.seeded(7)
    assert np.array_equal(a.uint64(100), b.uint64(100))
    assert a.bytes(33) == b.bytes(33)
    assert a.is_seeded
    assert "seeded=7" in repr(a) and "NOT for production" in repr(a)


def test_distinct_seeds_and_seed_types_differ() -> None:
    draws = {s: RandomSource.seeded(s).bytes(16) for s in (1, 2, "1", b"1")}
    assert len(set(draws.values())) == 4


def test_fresh_sources_never_repeat() -> None:
    a, b = RandomSource.fresh(), RandomSource.fresh()
    assert not a.is_seeded
    assert a.bytes(32) != b.bytes(32)
    assert "fresh OS entropy" in repr(a)


def test_resolve_defaults_to_fresh_and_rejects_other_generators() -> None:
    assert not resolve(None).is_seeded
    with pytest.raises(ParameterError, match="RandomSource"):
        resolve(np.random.default_rng(0))  # type: ignore[arg-type]


def test_spawn_gives_independent_reproducible_children() -> None:
    parent = RandomSource.seeded(3)
    alice, bob = parent.spawn("alice"), parent.spawn("bob")
    assert alice.bytes(16) != bob.bytes(16)
    assert RandomSource.seeded(3).spawn("alice").bytes(16) == RandomSource.seeded(3).spawn("alice").bytes(16)
    assert alice.is_seeded
    with pytest.raises(ParameterError, match="label"):
        parent.spawn("")


def test_stream_continues_across_calls() -> None:
    a, b = RandomSource.seeded(5), RandomSource.seeded(5)
    joined = a.bytes(10) + a.bytes(30)
    assert joined == b.bytes(40)


@pytest.mark.parametrize("modulus", [3, 7, 10, 1000, (1 << 61) - 1, (1 << 64) - 59])
def test_below_is_uniform(modulus: int) -> None:
    rng = RandomSource.seeded(modulus)
    x = rng.below(modulus, 200_000)
    assert x.dtype == np.uint64 and int(x.max()) < modulus
    bins = min(modulus, 50)
    # Map to `bins` equal-probability classes when modulus is small; otherwise test the top bits.
    classes = (x % np.uint64(bins)) if modulus <= 50 else (x.astype(np.float64) / modulus * bins).astype(int)
    counts = np.bincount(classes.astype(np.int64), minlength=bins)
    if modulus <= 50:
        expected = np.full(bins, len(x) / bins)
    else:
        expected = np.full(bins, len(x) / bins)
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_modulo_bias_would_be_caught() -> None:
    # The naive `word % m` for m = 3 * 2^62 puts twice the mass on [0, 2^62): the same test rejects it.
    rng = RandomSource.seeded(1)
    m = 3 << 62
    naive = rng.uint64(100_000) % np.uint64(m)
    counts = np.bincount((naive >> np.uint64(62)).astype(np.int64), minlength=3)
    assert stats.chisquare(counts).pvalue < ALPHA
    good = rng.below(m, 100_000)
    counts = np.bincount((good >> np.uint64(62)).astype(np.int64), minlength=3)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_bits_ring_and_floats() -> None:
    rng = RandomSource.seeded(11)
    bits = rng.bits((1000, 10))
    assert bits.shape == (1000, 10) and set(np.unique(bits)) <= {0, 1}
    assert stats.binomtest(int(bits.sum()), bits.size).pvalue > ALPHA
    ring = rng.ring(10_000, bits=12)
    assert int(ring.max()) < 4096
    f = rng.random(100_000)
    assert f.min() >= 0.0 and f.max() < 1.0
    assert stats.kstest(f, "uniform").pvalue > ALPHA
    g = rng.random_open(1000)
    assert g.min() > 0.0 and g.max() < 1.0


def test_integers_cover_range_exactly() -> None:
    x = RandomSource.seeded(2).integers(-3, 4, 70_000)
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 3
    assert stats.chisquare(np.bincount(x + 3)).pvalue > ALPHA


@given(st.integers(min_value=1, max_value=1 << 4096))
def test_randbelow_stays_below(modulus: int) -> None:
    rng = RandomSource.seeded(modulus % 1000)
    assert 0 <= rng.randbelow(modulus) < modulus
    assert all(0 <= v < modulus for v in rng.randbelow_many(modulus, 5))


def test_randbelow_many_is_uniform_on_small_modulus() -> None:
    values = RandomSource.seeded(4).randbelow_many(5, 50_000)
    assert stats.chisquare(np.bincount(values)).pvalue > ALPHA


def test_permutation_is_a_permutation_and_uniform() -> None:
    rng = RandomSource.seeded(9)
    assert sorted(rng.permutation(100)) == list(range(100))
    firsts = np.array([rng.permutation(4)[0] for _ in range(4000)])
    assert stats.chisquare(np.bincount(firsts, minlength=4)).pvalue > ALPHA


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda r: r.ring(3, bits=65), "bits"),
        (lambda r: r.below(0, 3), "modulus"),
        (lambda r: r.below((1 << 64) + 1, 3), "modulus"),
        (lambda r: r.integers(5, 5, 3), "low, high"),
        (lambda r: r.uint64((-1, 2)), "shape"),
        (lambda r: r.bytes(-1), "byte count"),
        (lambda r: r.randbelow(0), "modulus"),
    ],
)
def test_bad_parameters_raise_typed_errors(call, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=match):
        call(RandomSource.seeded(0))


@pytest.mark.parametrize("seed", [-1, 1.5, True, None])
def test_bad_seeds(seed) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match="seed"):
        RandomSource.seeded(seed)


def test_bernoulli_compares_each_word_with_the_rounded_down_threshold() -> None:
    # the same stream read as words: True exactly where the word is below floor(p 2^64)
    p = 0.3
    got = RandomSource.seeded(5).bernoulli((200, 5), p)
    words = RandomSource.seeded(5).uint64((200, 5))
    threshold = int(p * 2.0**64)  # p 2^64 is exact in binary; int() floors a positive float
    assert got.dtype == np.bool_ and got.shape == (200, 5)
    assert np.array_equal(got, np.array([[int(w) < threshold for w in row] for row in words]))
    assert not RandomSource.seeded(6).bernoulli(1000, 0.0).any()
    assert RandomSource.seeded(6).bernoulli(1000, 1).all()
    # a probability that is a multiple of 2^-64 is kept exactly: 2^-1 splits the words at 2^63
    half = RandomSource.seeded(7).bernoulli(4000, 0.5)
    assert np.array_equal(half, RandomSource.seeded(7).uint64(4000) < np.uint64(1 << 63))


def test_bernoulli_rate_is_p() -> None:
    hits = RandomSource.seeded(8).bernoulli(200_000, 0.0123)
    assert stats.binomtest(int(hits.sum()), hits.size, 0.0123).pvalue > ALPHA


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), True, "0.5", None])
def test_bernoulli_refuses_what_is_not_a_probability(p) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match="probability"):
        RandomSource.seeded(0).bernoulli(3, p)
