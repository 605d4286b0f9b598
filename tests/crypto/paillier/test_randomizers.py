from __future__ import annotations

import gmpy2
import pytest

from mpdp.crypto.paillier import (
    CrtRandomizer,
    FixedBaseRandomizer,
    FixedPoint,
    RandomizerPool,
    StandardRandomizer,
    decrypt,
    encrypt,
)
from mpdp.errors import KeyMismatchError, ParameterError
from mpdp.randomness import RandomSource


def _sources(keypair, rng):
    pk, sk = keypair
    return [
        StandardRandomizer(pk, rng=rng),
        CrtRandomizer(sk, rng=rng),
        RandomizerPool(StandardRandomizer(pk, rng=rng), size=4),
        FixedBaseRandomizer(pk, rng=rng, window=6),
    ]


def test_every_source_yields_distinct_encryptions_of_zero(keypair, rng) -> None:
    _, sk = keypair
    for source in _sources(keypair, rng):
        rho = source.draw(6)
        assert len({int(r) for r in rho}) == 6, type(source).__name__
        assert all(sk.raw_decrypt(r) == 0 for r in rho), type(source).__name__


def test_crt_randomizer_lands_in_the_same_subgroup_as_r_to_the_n(keypair, rng) -> None:
    # rho is an n-th residue iff rho^(lambda) = 1 mod n^2 ... checked through its residues mod p^2 and q^2:
    # an n-th residue has order dividing p - 1 modulo p^2.
    _, sk = keypair
    for rho in CrtRandomizer(sk, rng=rng).draw(5):
        assert gmpy2.powmod(rho, sk.p - 1, sk.p2) == 1 and gmpy2.powmod(rho, sk.q - 1, sk.q2) == 1


def test_pool_never_hands_out_a_randomizer_twice(keypair, rng) -> None:
    pk, _ = keypair
    pool = RandomizerPool(StandardRandomizer(pk, rng=rng), size=5)
    assert pool.available == 5
    drawn = pool.draw(3) + pool.draw(4)
    assert pool.available == 0 and pool.misses == 2
    assert len({int(r) for r in drawn}) == 7
    pool.fill(2)
    assert pool.available == 2 and pool.assumption == "DCR"


def test_fixed_base_table_computes_h_s_to_the_alpha(keypair, rng, monkeypatch) -> None:
    pk, _ = keypair
    source = FixedBaseRandomizer(pk, rng=rng, window=5)
    assert source.exponent_bits == 512 and "short-exponent" in source.assumption
    alpha = (1 << 511) + 123456789
    digits = [(alpha >> (5 * i)) & 31 for i in range(-(-512 // 5))]
    monkeypatch.setattr(source, "_exponent_digits", lambda count: [digits] * count)
    assert source.draw(1)[0] == gmpy2.powmod(source.base, alpha, pk.n2)


def test_fixed_base_exponents_are_below_the_declared_length(keypair, rng) -> None:
    pk, _ = keypair
    source = FixedBaseRandomizer(pk, rng=rng, window=7, exponent_bits=300)
    for digits in source._exponent_digits(50):
        alpha = sum(d << (7 * i) for i, d in enumerate(digits))
        assert 0 <= alpha < 1 << 300
    assert max(max(d) for d in source._exponent_digits(50)) < 1 << 7


def test_randomizer_parameters_are_validated(keypair) -> None:
    pk, _ = keypair
    with pytest.raises(ParameterError, match="window"):
        FixedBaseRandomizer(pk, window=0)
    with pytest.raises(ParameterError, match="exponent_bits"):
        FixedBaseRandomizer(pk, exponent_bits=100)
    with pytest.raises(ParameterError, match="count"):
        StandardRandomizer(pk).draw(-1)


def test_a_randomizer_for_another_key_is_refused(keypair, other_keypair) -> None:
    pk, sk = keypair
    _, other_sk = other_keypair
    with pytest.raises(KeyMismatchError, match="randomizer"):
        encrypt(pk, [0.5], FixedPoint(8), randomizer=CrtRandomizer(other_sk))
    x = encrypt(pk, [0.5], FixedPoint(8), randomizer=CrtRandomizer(sk, rng=RandomSource.seeded(3)))
    assert decrypt(sk, x).tolist() == [0.5]
