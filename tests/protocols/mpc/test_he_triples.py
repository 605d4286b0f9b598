"""Paillier-generated Beaver triples: correct in every ring, usable by the sharing engine, no dealer needed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mpdp.crypto.beaver import beaver_combine
from mpdp.crypto.ring import Z2_128, Z2k
from mpdp.errors import ParameterError, PrivacyLeakWarning, ProtocolAbortError
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.protocols.mpc.dealer import DealerProvider
from mpdp.protocols.mpc.he_triples import PaillierTriples
from mpdp.protocols.mpc.provider import WithTriplesFrom
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

REQUESTS = [
    ("mul", Z2k(64), (3,), (3,)),
    ("mul", Z2k(64), (2, 3), (3,)),
    ("mul", Z2k(13), (4,), ()),
    ("mul", Z2_128(), (2,), (2,)),
    ("matmul", Z2k(64), (2, 4), (4, 3)),
    ("matmul", Z2k(64), (4,), (4, 2)),
    ("matmul", Z2_128(), (2, 3), (3, 2)),
]


def _triples(comm, requests, **kwargs):
    source = PaillierTriples(comm, key_bits=512, insecure_for_tests=True, **kwargs)
    out = []
    for kind, ring, a_shape, b_shape in requests:
        fn = source.mul_triple if kind == "mul" else source.matmul_triple
        out.append(fn(ring, a_shape, b_shape))
    source.close()
    return out


@pytest.mark.parametrize("short_exponent", [False, True])
def test_shares_sum_to_a_product_in_every_ring(short_exponent) -> None:
    run = run_protocol({p: (lambda c: _triples(c, REQUESTS, short_exponent=short_exponent)) for p in ("alice", "bob")},
                       rng=RandomSource.seeded("triples"))
    for (kind, ring, a_shape, b_shape), t0, t1 in zip(REQUESTS, run.results["alice"], run.results["bob"],
                                                       strict=True):
        a, b, c = ring.add(t0.a, t1.a), ring.add(t0.b, t1.b), ring.add(t0.c, t1.c)
        assert ring.shape(a) == a_shape and ring.shape(b) == b_shape
        expected = ring.matmul(a, b) if kind == "matmul" else ring.mul(a, b)
        np.testing.assert_array_equal(c, expected)
        # each party's own shares are uniform ring elements, not zero or equal to the other's
        assert not np.array_equal(t0.a, t1.a)


def test_two_parties_multiply_shared_integers_with_no_dealer_at_all() -> None:
    ring = Z2k(64)
    x, y = np.array([7, -3, 2**40, -(2**20)]), np.array([-5, 11, 3, 2**30])

    def party(comm):
        rng = comm.rng
        triples = PaillierTriples(comm, key_bits=512, insecure_for_tests=True)
        t = triples.mul_triple(ring, (4,), (4,))
        # additive sharing of each party's private input
        mine = ring.from_int(x if comm.name == "alice" else y)
        mask = ring.random(rng, (4,))
        other = comm.exchange(comm.peers[0], mask, label="share")
        share_x, share_y = (ring.sub(mine, mask), other) if comm.name == "alice" else (other, ring.sub(mine, mask))
        d_mine, e_mine = ring.sub(share_x, t.a), ring.sub(share_y, t.b)
        d_other, e_other = comm.exchange(comm.peers[0], [d_mine, e_mine], label="open")
        d, e = ring.add(d_mine, d_other), ring.add(e_mine, e_other)
        z = beaver_combine(ring, d, e, t.a, t.b, t.c, leader=comm.name == "alice")
        return ring.add(z, comm.exchange(comm.peers[0], z, label="reveal"))

    run = run_protocol({"alice": party, "bob": party}, rng=RandomSource.seeded("no dealer"))
    assert run.results["alice"].view(np.int64).tolist() == (x * y).tolist()


def test_fixed_point_products_with_paillier_triples_and_dealer_masks() -> None:
    def party(comm):
        triples = PaillierTriples(comm, parties=("alice", "bob"), key_bits=512, insecure_for_tests=True)
        provider = WithTriplesFrom(triples, rest=DealerProvider(comm, dealer="dealer"))
        with MPCSession(comm, provider=provider, parties=("alice", "bob")) as s:
            a = s.input("alice", np.array([[1.5, -2.0], [0.25, 3.0]]) if comm.name == "alice" else None, bound=4.0)
            b = s.input("bob", np.array([[2.0, 1.0], [-1.0, 0.5]]) if comm.name == "bob" else None, bound=4.0)
            return (a * b).reveal(), (a @ b).reveal()

    run = run_protocol({"alice": party, "bob": party, "dealer": TrustedDealer(parties=("alice", "bob"))},
                       rng=RandomSource.seeded("session"))
    prod, matprod = run.results["alice"]
    A, B = np.array([[1.5, -2.0], [0.25, 3.0]]), np.array([[2.0, 1.0], [-1.0, 0.5]])
    np.testing.assert_allclose(prod, A * B, atol=1e-4)
    np.testing.assert_allclose(matprod, A @ B, atol=1e-4)


def test_misconfiguration_is_refused() -> None:
    def mismatched(comm):
        bits = 512 if comm.name == "alice" else 1024
        return PaillierTriples(comm, key_bits=bits, insecure_for_tests=True)

    with pytest.raises(ProtocolAbortError, match="same key_bits"):
        run_protocol({"alice": mismatched, "bob": mismatched}, rng=RandomSource.seeded(1))

    def three(comm):
        return PaillierTriples(comm)

    with pytest.raises(ParameterError, match="exactly two computing parties"):
        run_protocol({"alice": three, "bob": three, "carol": three}, rng=RandomSource.seeded(1), timeout=5)

    def batched(comm):
        return PaillierTriples(comm, key_bits=512, insecure_for_tests=True).matmul_triple(Z2k(64), (2, 2, 2),
                                                                                          (2, 2, 2))

    with pytest.raises(ParameterError, match="1-D or 2-D"), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        run_protocol({"alice": batched, "bob": batched}, rng=RandomSource.seeded(1), timeout=5)


def test_parties_running_different_programs_abort() -> None:
    def party(comm):
        source = PaillierTriples(comm, key_bits=512, insecure_for_tests=True)
        if comm.name == "alice":
            return source.mul_triple(Z2k(64), (3,), (3,))
        return source.mul_triple(Z2k(64), (4,), (4,))

    with pytest.raises(ProtocolAbortError, match="different programs"):
        run_protocol({"alice": party, "bob": party}, rng=RandomSource.seeded(2), timeout=5)
