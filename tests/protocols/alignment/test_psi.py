from __future__ import annotations

import hashlib
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.ristretto import hash_to_group, random_scalar, split_elements
from mpdp.errors import (
    DuplicateIdError,
    IntersectionTooSmallError,
    InvalidGroupElementError,
    MalformedMessageError,
    ParameterError,
    PrivacyLeakWarning,
)
from mpdp.protocols.alignment import DOMAIN, Alignment, AlignmentParty, AlignmentSpec, simulate_alignment
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, run_protocol
from mpdp.runtime.transport import InMemoryTransport

# seeded keys warn (PrivacyLeakWarning), as they should; one test checks the warning, the others use seeds freely
pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


@st.composite
def id_columns(draw: Any) -> tuple[dict[str, list[str]], set[str]]:
    """2-3 parties sharing ``common`` ids (0 to all of each party's), each with its own extras, shuffled;
    one party writes its ids in upper case with stray spaces."""
    parties = ("alice", "bob", "carol")[: draw(st.integers(2, 3))]
    common = [f"p{i}" for i in range(draw(st.integers(0, 25)))]
    columns = {}
    for k, party in enumerate(parties):
        extras = [f"{party}-{i}" for i in range(draw(st.integers(0 if common else 1, 15)))]
        column = draw(st.permutations(common + extras))
        columns[party] = [f" {x.upper()}  " for x in column] if k == 1 else list(column)
    return columns, set(common)


@settings(max_examples=30)
@given(case=id_columns(), seed=st.integers(0, 2**32))
def test_every_party_gets_the_plaintext_intersection_in_one_order(
        case: tuple[dict[str, list[str]], set[str]], seed: int) -> None:
    columns, common = case
    if not common:
        with pytest.raises(IntersectionTooSmallError, match="0 common"):
            simulate_alignment(columns, min_intersection=1, rng=RandomSource.seeded(seed), workers=1)
        return
    result, _ = simulate_alignment(columns, min_intersection=1, rng=RandomSource.seeded(seed), workers=2)
    aligned = {p: [columns[p][i].strip().lower() for i in result[p].rows] for p in columns}
    first = next(iter(aligned.values()))
    assert set(first) == common
    assert all(rows == first for rows in aligned.values())  # row r is the same id everywhere
    for party, alignment in result.items():
        assert alignment.size == len(common)
        assert alignment.set_sizes == {p: len(c) for p, c in columns.items()}
        assert alignment.as_json() == {"aligned_rows": len(common),
                                       "rows_per_party": {p: len(c) for p, c in columns.items()}}
        assert alignment.party == party


def test_the_agreed_order_is_pseudorandom_not_a_party_row_order() -> None:
    ids = [f"u{i}" for i in range(200)]
    result, _ = simulate_alignment({"alice": ids, "bob": ids[::-1]}, rng=RandomSource.seeded(5), workers=1)
    rows = result["alice"].rows
    assert sorted(rows.tolist()) == list(range(200))
    assert rows.tolist() != list(range(200)) and rows.tolist() != list(range(199, -1, -1))
    again, _ = simulate_alignment({"alice": ids, "bob": ids[::-1]}, rng=RandomSource.seeded(5), workers=2)
    assert np.array_equal(again["alice"].rows, rows)  # seeded runs repeat


class RecordingTransport(InMemoryTransport):
    def __init__(self, parties: tuple[str, ...]) -> None:
        super().__init__(parties)
        self.wire: list[bytes] = []

    def _send(self, src: str, dst: str, data: bytes) -> None:
        self.wire.append(bytes(data))
        super()._send(src, dst, data)


def test_no_message_carries_an_id_or_a_plain_hash_of_one() -> None:
    ids_a = [f"customer-{i:05d}@bank.example" for i in range(150)]
    ids_b = [f"customer-{i:05d}@bank.example" for i in range(50, 300)]
    spec = AlignmentSpec(parties=("alice", "bob"), min_intersection=10)
    transport = RecordingTransport(spec.parties)
    run_protocol({"alice": AlignmentParty("alice", ids_a, spec), "bob": AlignmentParty("bob", ids_b, spec)},
                 transport=transport, rng=RandomSource.seeded(9))
    wire = b"".join(transport.wire)
    assert len(transport.wire) == 6 and len(wire) > 32 * 400
    unkeyed = split_elements(hash_to_group([x.encode() for x in ids_a + ids_b], domain=DOMAIN))
    for x, h in zip(ids_a + ids_b, unkeyed, strict=True):
        raw = x.encode()
        digests = [hashlib.new(name, raw).digest() for name in ("md5", "sha1", "sha256", "sha512", "blake2b")]
        for needle in (raw, raw.upper(), *digests, *(d.hex().encode() for d in digests), h):
            assert needle[:16] not in wire, x


@pytest.mark.filterwarnings("default::mpdp.errors.PrivacyLeakWarning")
def test_seeded_keys_warn_and_fresh_ones_do_not() -> None:
    ids = [f"u{i}" for i in range(3)]
    with pytest.warns(PrivacyLeakWarning, match="anyone who knows the seed"):
        simulate_alignment({"a": ids, "b": ids}, min_intersection=1, rng=RandomSource.seeded(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate_alignment({"a": ids, "b": ids}, min_intersection=1)


def test_identifiers_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(DuplicateIdError, match="1 identifier"):
        simulate_alignment({"alice": ["a", "b", "A"], "bob": ["a", "b"]}, min_intersection=1)


def test_a_small_intersection_is_refused_by_every_party_with_its_size() -> None:
    a = [f"x{i}" for i in range(120)]
    b = [f"x{i}" for i in range(60, 200)]
    with pytest.raises(IntersectionTooSmallError, match=r"60 common record\(s\).*at least 100"):
        simulate_alignment({"alice": a, "bob": b})
    result, _ = simulate_alignment({"alice": a, "bob": b}, min_intersection=60, workers=1)
    assert result["bob"].size == 60


def _sizes(comm: Comm, n: int) -> None:
    comm.broadcast(n, label="psi-sizes", to=["alice"])
    comm.gather(["alice"], label="psi-sizes")


def test_a_party_sending_non_group_elements_is_refused() -> None:
    spec = AlignmentSpec(parties=("alice", "bob"), min_intersection=1)

    def bob(comm: Comm) -> None:
        _sizes(comm, 3)
        comm.send("alice", b"\xff" * 96, label="psi-hop1")
        comm.recv("alice", label="psi-hop1")

    with pytest.raises(InvalidGroupElementError, match=r"bob's list from bob \(hop 1\)\[0\]"):
        run_protocol({"alice": AlignmentParty("alice", ["a", "b", "c"], spec), "bob": bob})

    def short(comm: Comm) -> None:
        _sizes(comm, 3)
        comm.send("alice", b"\x00" * 64, label="psi-hop1")
        comm.recv("alice", label="psi-hop1")

    with pytest.raises(MalformedMessageError, match="96 bytes"):
        run_protocol({"alice": AlignmentParty("alice", ["a", "b", "c"], spec), "bob": short})


def test_a_leader_reporting_impossible_positions_is_refused() -> None:
    spec = AlignmentSpec(parties=("alice", "bob"), min_intersection=1)

    def leader(comm: Comm) -> None:
        comm.broadcast(2, label="psi-sizes", to=["bob"])
        comm.gather(["bob"], label="psi-sizes")
        comm.send("bob", hash_to_group([b"p", b"q"], domain=b"x"), label="psi-hop1")
        comm.recv("bob", label="psi-hop1")
        comm.recv("bob", label="psi-full")
        comm.send("bob", {"size": 2, "positions": np.array([0, 7], dtype=np.int64)}, label="psi-result")

    with pytest.raises(MalformedMessageError, match="positions from alice"):
        run_protocol({"alice": leader, "bob": AlignmentParty("bob", ["a", "b", "c"], spec)})


def test_forked_parties_return_their_alignment_in_wire_form() -> None:
    ids = [f"u{i}" for i in range(40)]
    spec = AlignmentSpec(parties=("alice", "bob"), min_intersection=5)
    run = run_protocol({"alice": AlignmentParty("alice", ids, spec), "bob": AlignmentParty("bob", ids[5:], spec)},
                       processes=True, rng=RandomSource.seeded(2))
    alice = Alignment.from_wire(run.results["alice"])
    assert alice.size == 35 and sorted(ids[i] for i in alice.rows) == sorted(ids[5:])


def test_spec_checks_and_config_round_trip() -> None:
    spec = AlignmentSpec(parties=("a", "b", "c"), min_intersection=7, case_sensitive=True)
    assert AlignmentSpec.from_config(spec.to_config()) == spec
    with pytest.raises(ParameterError, match="two or more"):
        AlignmentSpec(parties=("a",))
    with pytest.raises(ParameterError, match="min_intersection"):
        AlignmentSpec(parties=("a", "b"), min_intersection=0)
    with pytest.raises(ParameterError, match="keys among"):
        AlignmentSpec.from_config({"parties": ["a", "b"], "min": 3})
    with pytest.raises(ParameterError, match="one of"):
        AlignmentParty("zed", ["x"], spec)
    assert random_scalar(RandomSource.seeded(0))  # the spec holds no key: each party draws its own


def test_the_catalog_builds_alignment_roles_from_npy_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from mpdp.protocols.catalog import PartySetup, build_role, load_input

    np.save(tmp_path / "a.npy", np.array([f"u{i}" for i in range(30)]))
    np.save(tmp_path / "b.npy", np.array([f"U{i}" for i in range(10, 50)]))
    params = {"min_intersection": 20}
    roles = {p: build_role("alignment", PartySetup(p, ("a", "b"), params, load_input(str(tmp_path / f"{p}.npy"), p)))
             for p in ("a", "b")}
    result = run_protocol(roles, rng=RandomSource.seeded(4)).results
    assert result["a"].size == 20 and result["a"].to_wire()["set_sizes"] == {"a": 30, "b": 40}
    with pytest.raises(ParameterError, match="1-D array of str ids"):
        build_role("alignment", PartySetup("a", ("a", "b"), params, np.arange(3)))
