"""Test keys: 1024-bit (insecure, fast) unless a test needs the 2048-bit default."""

from __future__ import annotations

import warnings

import pytest

from mpdp.crypto.paillier import PaillierPrivateKey, PaillierPublicKey, generate_keypair
from mpdp.errors import PrivacyLeakWarning
from mpdp.randomness import RandomSource


def make_keypair(bits: int, seed: str) -> tuple[PaillierPublicKey, PaillierPrivateKey]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return generate_keypair(bits, rng=RandomSource.seeded(seed), insecure_for_tests=bits < 2048)


@pytest.fixture(scope="session")
def keypair() -> tuple[PaillierPublicKey, PaillierPrivateKey]:
    return make_keypair(1024, "paillier-test-key")


@pytest.fixture(scope="session")
def other_keypair() -> tuple[PaillierPublicKey, PaillierPrivateKey]:
    return make_keypair(1024, "paillier-other-key")


@pytest.fixture(scope="session")
def small_keypair() -> tuple[PaillierPublicKey, PaillierPrivateKey]:
    return make_keypair(512, "paillier-small-key")


@pytest.fixture(autouse=True)
def _quiet_test_keys():  # type: ignore[no-untyped-def]
    """Small test keys warn by design; tests that check the warning use pytest.warns, which still sees it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield
