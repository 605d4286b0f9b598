from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from mpdp.crypto.paillier import (
    CrtRandomizer,
    FixedPoint,
    KeyShare,
    Packing,
    PartialDecryption,
    combine_partial_decryptions,
    combine_partial_decryptions_ints,
    encrypt,
    split_private_key,
)
from mpdp.errors import (
    InsufficientSharesError,
    KeyMismatchError,
    ParameterError,
    TamperedCiphertextError,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode

CODEC = FixedPoint(frac_bits=16, max_abs=1.0)
X = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -0.125]])


@pytest.fixture(scope="module")
def setup(keypair):
    pk, sk = keypair
    rng = RandomSource.seeded("threshold")
    shares = split_private_key(sk, 3, rng=rng)
    array = encrypt(pk, X, CODEC, packing=Packing.for_key(pk, 32), randomizer=CrtRandomizer(sk, rng=rng))
    partials = [s.partial_decrypt(array) for s in shares]
    return pk, sk, shares, array, partials


def test_all_shares_decrypt(setup) -> None:
    pk, sk, shares, array, partials = setup
    assert combine_partial_decryptions(array, partials).tolist() == X.tolist()
    assert combine_partial_decryptions(array, partials[::-1]).tolist() == X.tolist()
    d = sum(s.exponent for s in shares)
    assert d % (sk.p - 1) == 0 and d % (sk.q - 1) == 0 and d % pk.n == 1


def test_every_proper_subset_is_refused_with_the_missing_shares_named(setup) -> None:
    _, _, _, array, partials = setup
    for size in (1, 2):
        for subset in itertools.combinations(partials, size):
            missing = sorted({1, 2, 3} - {p.index for p in subset})
            with pytest.raises(InsufficientSharesError, match=re.escape(f"collect the missing shares {missing}")):
                combine_partial_decryptions(array, list(subset))
    with pytest.raises(InsufficientSharesError, match="drop duplicates"):
        combine_partial_decryptions(array, [partials[0], partials[0], partials[1]])
    with pytest.raises(InsufficientSharesError):
        combine_partial_decryptions(array, [])


def test_n_minus_one_partials_do_not_reveal_the_plaintext(setup) -> None:
    # The product of two of three partials is c^(d - d_i): not of the form 1 + m n.
    pk, _, _, _array, partials = setup
    for i in range(3):
        others = [p for p in partials if p.index != i + 1]
        prod = others[0].values[0] * others[1].values[0] % pk.n2
        assert prod % pk.n != 1


def test_partials_of_other_ciphertexts_or_other_splits_do_not_combine(setup, keypair) -> None:
    pk, sk, shares, array, partials = setup
    other = encrypt(pk, X, CODEC, packing=array.packing, randomizer=CrtRandomizer(sk, rng=RandomSource.seeded(9)))
    with pytest.raises(KeyMismatchError, match="other ciphertexts"):
        combine_partial_decryptions(array, [partials[0], partials[1], shares[2].partial_decrypt(other)])
    resplit = split_private_key(sk, 3, rng=RandomSource.seeded("again"))
    with pytest.raises(KeyMismatchError, match="one split_private_key call"):
        combine_partial_decryptions(array, [partials[0], partials[1], resplit[2].partial_decrypt(array)])


def test_a_corrupted_partial_is_detected(setup) -> None:
    pk, _, _, array, partials = setup
    bad = PartialDecryption(partials[0].key_id, partials[0].sharing_id, 1, 3, partials[0].digest,
                            partials[0].values * 1)
    bad.values[0] = bad.values[0] * 3 % pk.n2
    with pytest.raises(TamperedCiphertextError, match="not 1 mod n"):
        combine_partial_decryptions_ints(array, [bad, partials[1], partials[2]])


def test_partials_and_shares_serialise(setup, other_keypair) -> None:
    pk, _, shares, array, partials = setup
    received = [PartialDecryption.from_wire(decode(encode(p)), pk) for p in partials]
    assert combine_partial_decryptions(array, received).tolist() == X.tolist()
    with pytest.raises(KeyMismatchError):
        PartialDecryption.from_wire(decode(encode(partials[0])), other_keypair[0])
    with pytest.raises(ParameterError, match="to_wire"):
        encode(shares[0])
    back = KeyShare.from_private_wire(decode(encode(shares[1].to_private_wire())), insecure_for_tests=True)
    assert back == shares[1] and back.exponent == shares[1].exponent
    assert str(shares[1].exponent) not in repr(shares[1])
    wire = decode(encode(partials[0]))
    wire["values"][0] = 0
    with pytest.raises(TamperedCiphertextError):
        PartialDecryption.from_wire(wire, pk)


def test_split_parameters_are_validated(keypair) -> None:
    with pytest.raises(ParameterError, match="n_shares"):
        split_private_key(keypair[1], 1)
