from __future__ import annotations

import gmpy2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.paillier import multiexp
from mpdp.crypto.paillier.multiexp import best_window
from mpdp.errors import ParameterError, ShapeMismatchError


def _naive(bases, exps, modulus):
    acc = gmpy2.mpz(1)
    for b, e in zip(bases, exps, strict=True):
        acc = acc * gmpy2.powmod(b, int(e), modulus) % modulus
    return acc


@given(st.lists(st.integers(-(2**40), 2**40), max_size=40), st.integers(0, 2**64))
def test_matches_separate_powmods_for_signed_int64_exponents(keypair, exps, salt) -> None:
    pk, _ = keypair
    bases = [gmpy2.mpz((salt + 7919 * i) ** 3 % pk.n2 or 1) for i in range(len(exps))]
    bases = [b if gmpy2.gcd(b, pk.n) == 1 else gmpy2.mpz(2) for b in bases]
    assert multiexp(bases, np.array(exps, dtype=np.int64), pk.n2) == _naive(bases, exps, pk.n2)


@given(st.lists(st.integers(-(2**200), 2**200), max_size=12))
def test_matches_separate_powmods_for_big_exponents(keypair, exps) -> None:
    pk, _ = keypair
    bases = [gmpy2.mpz(3 + 2 * i) for i in range(len(exps))]
    assert multiexp(bases, np.array(exps, dtype=object), pk.n2) == _naive(bases, exps, pk.n2)
    assert multiexp(bases, exps, pk.n2) == _naive(bases, exps, pk.n2)


def test_edge_cases(keypair) -> None:
    pk, _ = keypair
    assert multiexp([], np.array([], dtype=np.int64), pk.n2) == 1
    assert multiexp([gmpy2.mpz(5)], np.array([np.iinfo(np.int64).min]), pk.n2) == gmpy2.powmod(5, -(2**63), pk.n2)
    with pytest.raises(ShapeMismatchError, match="one exponent per base"):
        multiexp([gmpy2.mpz(5)], [1, 2], pk.n2)
    with pytest.raises(ParameterError, match="integers"):
        multiexp([gmpy2.mpz(5)], np.array([1.5]), pk.n2)


def test_window_grows_with_the_number_of_terms() -> None:
    assert best_window(1, 17) <= 3 < best_window(45_222, 17) <= 12
    assert best_window(45_222, 64) >= best_window(100, 64)
