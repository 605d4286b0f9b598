"""Secure X^T Y: every backend equals the plaintext product within its documented bound; bad input is named."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import (
    DomainError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    PrecisionError,
    ShapeMismatchError,
)
from mpdp.protocols.inner_product import (
    CrossProductSpec,
    PaillierBackend,
    SharesBackend,
    cross_product,
    simulate_cross_product,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

PAILLIER = PaillierBackend(key_bits=512, insecure_for_tests=True)


@pytest.fixture(scope="module")
def keys():  # type: ignore[no-untyped-def]
    from mpdp.crypto.paillier import generate_keypair

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return generate_keypair(512, rng=RandomSource.seeded("ip-keys"), insecure_for_tests=True)


def matrices(rows: int, a: int, b: int, seed: int, bound: float) -> tuple[np.ndarray, np.ndarray]:
    rng = RandomSource.seeded(seed)
    X = bound * (2 * rng.spawn("x").random((rows, a)) - 1)
    Y = bound * (2 * rng.spawn("y").random((rows, b)) - 1)
    X[0, :] = bound  # the edges of the domain
    Y[0, :] = -bound
    return X, Y


def outcome(run, spec: CrossProductSpec) -> np.ndarray:  # type: ignore[no-untyped-def]
    results = run.results
    if spec.reveal_to is None:
        return results[spec.left].reveal_with(results[spec.right])  # type: ignore[no-any-return]
    other = spec.right if spec.reveal_to == spec.left else spec.left
    assert results[other].value is None and results[other].share is None  # the other holder learns nothing
    return results[spec.reveal_to].value  # type: ignore[no-any-return]


@given(rows=st.integers(1, 40), a=st.integers(1, 4), b=st.integers(1, 4), seed=st.integers(0, 10**6),
       bound=st.sampled_from([1.0, 8.0]), reveal=st.sampled_from([None, "alice", "bob"]))
@settings(max_examples=30)
def test_shares_backend_matches_plaintext(rows, a, b, seed, bound, reveal) -> None:  # type: ignore[no-untyped-def]
    X, Y = matrices(rows, a, b, seed, bound)
    spec = CrossProductSpec("alice", "bob", rows, a, b, SharesBackend(), bound=bound, reveal_to=reveal)
    run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(seed))
    assert np.max(np.abs(outcome(run, spec) - X.T @ Y)) <= spec.error_bound
    assert run.rounds == (2 if reveal is None else 3)


@given(rows=st.integers(1, 12), a=st.integers(1, 3), b=st.integers(1, 3), seed=st.integers(0, 10**6),
       reveal=st.sampled_from([None, "alice", "bob"]), packing=st.booleans())
@settings(max_examples=12)
def test_paillier_backend_matches_plaintext(keys, rows, a, b, seed, reveal, packing) -> None:  # type: ignore[no-untyped-def]
    X, Y = matrices(rows, a, b, seed, 1.0)
    backend = PaillierBackend(key_bits=512, insecure_for_tests=True, packing=packing)
    spec = CrossProductSpec("alice", "bob", rows, a, b, backend, reveal_to=reveal)
    run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(seed), keys=keys)
    assert np.max(np.abs(outcome(run, spec) - X.T @ Y)) <= spec.error_bound


def test_a_precomputed_randomizer_pool_is_used_once_per_ciphertext(keys) -> None:  # type: ignore[no-untyped-def]
    from mpdp.crypto.paillier import CrtRandomizer, RandomizerPool

    X, Y = matrices(20, 1, 1, 3, 1.0)
    pk, sk = keys
    pool = RandomizerPool(CrtRandomizer(sk, rng=RandomSource.seeded("pool")), 25)  # the offline phase
    backend = PaillierBackend(key_bits=512, insecure_for_tests=True)
    spec = CrossProductSpec("alice", "bob", 20, 1, 1, backend, reveal_to="alice")
    run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(4), keys=(pk, sk, pool))
    assert abs(outcome(run, spec) - X.T @ Y).max() <= spec.error_bound
    assert pool.available == 5 and pool.misses == 0  # 20 ciphertexts took 20 randomizers, none reused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from mpdp.crypto.paillier import generate_keypair

        _, other_sk = generate_keypair(512, rng=RandomSource.seeded("other"), insecure_for_tests=True)
    with pytest.raises(KeyMismatchError, match="randomizer pool"):
        simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(4),
                               keys=(pk, sk, RandomizerPool(CrtRandomizer(other_sk), 1)))


def test_vectors_give_a_1x1_product_and_a_generated_key_works() -> None:
    x, y = np.linspace(-1, 1, 50), np.cos(np.arange(50))
    spec = CrossProductSpec("alice", "bob", 50, 1, 1, PAILLIER, reveal_to="alice")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = simulate_cross_product(x, y, spec, rng=RandomSource.seeded(1))
    assert run.results["alice"].value.shape == (1, 1)
    assert abs(run.results["alice"].value[0, 0] - x @ y) <= spec.error_bound


def test_shares_are_uniform_masks_not_the_product() -> None:
    X, Y = matrices(30, 2, 2, 7, 1.0)
    spec = CrossProductSpec("alice", "bob", 30, 2, 2)
    a = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(1)).results["alice"]
    b = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(2)).results["alice"]
    assert not np.array_equal(a.share, b.share)  # fresh masks each run
    assert np.max(np.abs(spec.fmt.decode(a.share, scale_bits=40))) > 1e3  # a share alone is far from X^T Y


def test_mismatched_rows_and_out_of_range_entries_are_refused_naming_the_party() -> None:
    spec = CrossProductSpec("alice", "bob", 10, 2, 1)
    with pytest.raises(ShapeMismatchError, match=r"data of bob: received \(9, 1\)"):
        simulate_cross_product(np.zeros((10, 2)), np.zeros(9), spec)
    with pytest.raises(DomainError, match="data of alice"):
        simulate_cross_product(np.full((10, 2), 2.0), np.zeros(10), spec)
    with pytest.raises(PrecisionError, match="X\\^T Y capacity"):
        CrossProductSpec("alice", "bob", 45_222, 2, 2, bound=100.0)
    with pytest.raises(ParameterError, match="a third party"):
        CrossProductSpec("alice", "bob", 3, 1, 1, SharesBackend(dealer="bob"))
    with pytest.raises(ParameterError, match="reveal_to"):
        CrossProductSpec("alice", "bob", 3, 1, 1, reveal_to="carol")
    wide = CrossProductSpec("alice", "bob", 45_222, 2, 2, bound=100.0, fmt=FixedPointFormat(128, 32))
    assert wide.result_bound == 45_222 * 100.0**2


def test_a_tampered_masked_matrix_is_a_typed_error() -> None:
    spec = CrossProductSpec("alice", "bob", 5, 1, 1)

    def liar(comm):  # type: ignore[no-untyped-def]
        comm.recv("dealer", label="ip.seed")
        comm.send("alice", np.zeros((4, 1), np.uint64), label="ip.masked")  # wrong number of rows
        comm.recv("alice", label="ip.masked")

    roles = {"alice": lambda c: cross_product(c, np.zeros(5), spec), "bob": liar,
             "dealer": lambda c: cross_product(c, None, spec)}
    with pytest.raises(MalformedMessageError, match="masked matrix from bob"):
        run_protocol(roles, rng=RandomSource.seeded(0))


def test_ckks_backend_matches_plaintext_within_its_bound() -> None:
    pytest.importorskip("tenseal")
    from mpdp.protocols.inner_product import CkksBackend

    X, Y = matrices(50, 2, 2, 3, 1.0)
    for reveal in (None, "alice", "bob"):
        spec = CrossProductSpec("alice", "bob", 50, 2, 2, CkksBackend(), reveal_to=reveal)
        run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(4))
        assert np.max(np.abs(outcome(run, spec) - X.T @ Y)) <= spec.error_bound


def test_ckks_replies_show_the_key_owner_only_masked_values(monkeypatch) -> None:
    """Every slot of a reply is masked, not slot 0 alone (which would show the key owner the unmasked entry of
    X^T Y in the other slots): slot ``s`` of a reply holds the entry's partial sum ``x_s y_s`` under its own mask,
    uniform over a period of about 2^20, so a slot within 1 of its partial sum has probability below 2^-19, and
    more than 3 of the 16,384 slots seen here has probability below 1e-6."""
    pytest.importorskip("tenseal")
    from mpdp.protocols.inner_product import CkksBackend, ckks
    from mpdp.protocols.inner_product.ckks_parameters import share_scale_bits
    from tests.crypto.ckks.slots import all_slots

    seen = []
    read = ckks.CkksVector.from_wire

    def spy(wire, context):  # type: ignore[no-untyped-def]
        vector = read(wire, context)
        if context.is_private:  # the key owner reading a reply
            seen.append(all_slots(context, vector))
        return vector

    monkeypatch.setattr(ckks.CkksVector, "from_wire", spy)
    X, Y = matrices(50, 2, 2, 3, 1.0)
    spec = CrossProductSpec("alice", "bob", 50, 2, 2, CkksBackend())
    run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(4))
    assert np.max(np.abs(outcome(run, spec) - X.T @ Y)) <= spec.error_bound
    assert len(seen) == 4
    scale = 2.0 ** -share_scale_bits(spec.backend.mask_bits)  # the key owner's columns are scaled
    near = 0
    for k, slots in enumerate(seen):
        i, j = divmod(k, 2)
        partial = np.zeros(slots.size)
        partial[:50] = X[:, i] * scale * Y[:, j]
        near += int(np.sum(np.abs(slots - partial) < 1.0))
    assert near <= 3


def test_ckks_shared_products_refuse_entries_beyond_the_slot_period() -> None:
    pytest.importorskip("tenseal")
    from mpdp.protocols.inner_product import CkksBackend

    with pytest.raises(PrecisionError, match="slot period"):  # B = 5e5 > 2^18: refused at construction
        CrossProductSpec("alice", "bob", 50, 1, 1, CkksBackend(mask_bits=10), bound=100.0)


@pytest.mark.parametrize("backend", ["shares", "paillier", "ckks", "dealer"])
def test_two_party_real_shares_add_up(keys, backend: str) -> None:  # type: ignore[no-untyped-def]
    from mpdp.protocols.inner_product import cross_product_share

    X, Y = matrices(20, 3, 2, 9, 1.0)
    options = {"insecure_for_tests": True, "key_bits": 512}
    if backend == "dealer":
        backend, options = "shares", {"dealer": "dealer"}
    roles = {"alice": lambda c: cross_product_share(c, "bob", X, left=True, backend=backend, **options),
             "bob": lambda c: cross_product_share(c, "alice", Y, left=False, backend=backend, **options)}
    if "dealer" in options:
        dealer_spec = CrossProductSpec("alice", "bob", 20, 3, 2, SharesBackend())
        roles["dealer"] = lambda c: cross_product(c, None, dealer_spec)
    run = run_protocol(roles, rng=RandomSource.seeded(1))
    total = run.results["alice"] + run.results["bob"]
    assert np.max(np.abs(total - X.T @ Y)) < 1e-3
    assert np.max(np.abs(run.results["alice"])) < 2.0**24


def test_two_party_shares_refuse_different_record_counts() -> None:
    from mpdp.protocols.inner_product import cross_product_share

    roles = {"alice": lambda c: cross_product_share(c, "bob", np.zeros((5, 2)), left=True),
             "bob": lambda c: cross_product_share(c, "alice", np.zeros((4, 1)), left=False)}
    with pytest.raises(ShapeMismatchError, match="record count of"):
        run_protocol(roles, rng=RandomSource.seeded(1))


def test_ckks_shared_products_send_no_galois_keys() -> None:
    """Shared CKKS products never rotate: the key owner's generated context has no Galois keys, so it sends about
    1 MB of public context instead of 18.6 MB; a revealed product (which rotates) still gets them, and its key
    owner refuses keys without them before sending anything."""
    pytest.importorskip("tenseal")
    from mpdp.protocols.inner_product import CkksBackend
    from mpdp.protocols.inner_product.ckks import ckks_holder, new_context

    X, Y = matrices(40, 1, 2, 5, 1.0)
    sent = {}
    for reveal in (None, "alice"):
        spec = CrossProductSpec("alice", "bob", 40, 1, 2, CkksBackend(), reveal_to=reveal)
        run = simulate_cross_product(X, Y, spec, rng=RandomSource.seeded(2))
        assert np.max(np.abs(outcome(run, spec) - X.T @ Y)) <= spec.error_bound
        sent[reveal] = run.traffic["alice"].bytes_sent
    assert sent[None] < 3e6 and sent["alice"] > sent[None] + 1.5e7
    spec = CrossProductSpec("alice", "bob", 40, 1, 2, CkksBackend(), reveal_to="alice")
    bare = new_context(galois_keys=False)
    roles = {"alice": lambda c: ckks_holder(c, spec, X, bare), "bob": lambda c: ckks_holder(c, spec, Y)}
    with pytest.raises(ParameterError, match="new_context\\(galois_keys=True\\)"):
        run_protocol(roles, rng=RandomSource.seeded(2))
