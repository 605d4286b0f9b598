from __future__ import annotations

import warnings

import gmpy2
import phe
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.crypto.paillier import PaillierPrivateKey, PaillierPublicKey, StandardRandomizer, generate_keypair
from mpdp.errors import MalformedMessageError, ParameterError, PrivacyLeakWarning, TamperedCiphertextError
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode


def test_default_key_is_2048_bits_and_reproducible_from_a_seed() -> None:
    pk, sk = generate_keypair(rng=RandomSource.seeded("k"))
    assert pk.bits == 2048 and sk.p * sk.q == pk.n
    assert sk.p % 4 == 3 and sk.q % 4 == 3 and sk.p.bit_length() == sk.q.bit_length() == 1024
    again, _ = generate_keypair(rng=RandomSource.seeded("k"))
    assert again == pk


def test_short_keys_are_refused_unless_flagged_for_tests() -> None:
    with pytest.raises(ParameterError, match=r"1024 bits', expected >= 2048 bits.*insecure_for_tests"):
        generate_keypair(1024)
    with pytest.warns(PrivacyLeakWarning, match="insecure, for tests only"):
        pk, _ = generate_keypair(512, insecure_for_tests=True, rng=RandomSource.seeded(1))
    assert pk.bits == 512
    with pytest.raises(ParameterError, match="even int"):
        generate_keypair(2047)
    with pytest.raises(ParameterError, match="expected >= 2048"):
        PaillierPublicKey(pk.n)


@given(st.integers())
def test_raw_encryption_round_trips_signed_plaintexts(keypair, value: int) -> None:
    pk, sk = keypair
    m = max(-pk.max_plaintext, min(pk.max_plaintext, value))
    c = pk.raw_encrypt(m, StandardRandomizer(pk, rng=RandomSource.seeded(m % 1000)).draw(1)[0])
    assert sk.decrypt_int(c) == m


def test_plaintext_extremes_round_trip(keypair, rng) -> None:
    pk, sk = keypair
    rho = StandardRandomizer(pk, rng=rng).draw(4)
    for m, r in zip([pk.max_plaintext, -pk.max_plaintext, 0, -1], rho, strict=True):
        assert sk.decrypt_int(pk.raw_encrypt(m, r)) == m


def test_decryption_rejects_values_outside_the_ciphertext_group(keypair) -> None:
    pk, sk = keypair
    for bad in (0, pk.n2, pk.n2 + 5, sk.p, sk.q * 7):
        with pytest.raises(TamperedCiphertextError, match=r"expected an element of \[1, n\^2\)"):
            sk.raw_decrypt(gmpy2.mpz(bad))


def test_phe_interoperates_both_ways(keypair, rng) -> None:
    pk, sk = keypair
    phe_pk, phe_sk = pk.to_phe(), sk.to_phe()
    c = phe_pk.encrypt(-12345)
    assert sk.decrypt_int(gmpy2.mpz(c.ciphertext())) == -12345
    ours = pk.raw_encrypt(-777, StandardRandomizer(pk, rng=rng).draw(1)[0])
    assert phe_sk.decrypt(phe.EncryptedNumber(phe_pk, int(ours), 0)) == -777
    assert PaillierPrivateKey.from_phe(phe_sk, insecure_for_tests=True) == sk


def test_phe_generated_keys_are_accepted() -> None:
    phe_pk, phe_sk = phe.generate_paillier_keypair(n_length=2048)
    sk = PaillierPrivateKey.from_phe(phe_sk)
    assert sk.public_key == PaillierPublicKey.from_phe(phe_pk)
    assert sk.decrypt_int(gmpy2.mpz(phe_pk.encrypt(42).ciphertext())) == 42


def test_public_key_wire_round_trip(keypair) -> None:
    pk, _ = keypair
    back = PaillierPublicKey.from_wire(decode(encode(pk)), insecure_for_tests=True)
    assert back == pk and back.key_id == pk.key_id


def test_private_key_serialises_only_when_asked(keypair) -> None:
    _pk, sk = keypair
    with pytest.raises(ParameterError, match="to_wire"):
        encode(sk)
    assert str(int(sk.p)) not in repr(sk) and str(int(sk.q)) not in repr(sk)
    back = PaillierPrivateKey.from_private_wire(decode(encode(sk.to_private_wire())), insecure_for_tests=True)
    assert back == sk and back.p == sk.p


@pytest.mark.parametrize(
    ("wire", "error", "match"),
    [
        ({"type": "paillier.public_key", "version": 1, "n": 2**1024 + 2}, ParameterError, "product of two"),
        ({"type": "paillier.public_key", "version": 1, "n": 7 * 11}, ParameterError, "product of two"),
        ({"type": "paillier.public_key", "version": 2, "n": 15}, MalformedMessageError, "version"),
        ({"type": "paillier.private_key", "version": 1, "n": 15}, MalformedMessageError, "type"),
        ({"type": "paillier.public_key", "version": 1}, MalformedMessageError, "fields"),
        ({"type": "paillier.public_key", "version": 1, "n": "15"}, MalformedMessageError, "an int"),
    ],
)
def test_public_key_from_wire_is_strict(wire, error, match) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(error, match=match):
            PaillierPublicKey.from_wire(wire, insecure_for_tests=True)


def test_private_key_must_match_its_public_key(keypair, other_keypair) -> None:
    pk, _sk = keypair
    _, other = other_keypair
    with pytest.raises(ParameterError, match="do not match the public key"):
        PaillierPrivateKey(pk, other.p, other.q)
