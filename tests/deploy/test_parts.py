"""The deployment's pieces that need no network: party files, the network model, per-party certificate folders,
the configuration digest."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.cli import main
from mpdp.datasets import load_dataset
from mpdp.datasets.holdings import PartyData, dataset_from_schema, read_party_data, schema_of, write_party_data
from mpdp.deploy.session import canonical, digest
from mpdp.errors import DatasetError, ShapeMismatchError
from mpdp.runtime.network import NAMED, network_model

finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, width=64)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=20))
def test_party_files_round_trip_exactly(tmp_path_factory: pytest.TempPathFactory,
                                        rows: list[tuple[float, float]]) -> None:
    X = np.array(rows, dtype=np.float64)
    y = (X[:, 0] > 0).astype(np.float64)
    path = tmp_path_factory.mktemp("f") / "p.csv"
    write_party_data(path, PartyData("alice", X, ("a", "b"), y))
    schema = {"features": ["a", "b"], "attributes": []}
    back = read_party_data(path, "alice", schema, label=True, rows=len(rows))
    assert back.X.tobytes() == X.tobytes() and back.y is not None and back.y.tobytes() == y.tobytes()


def test_a_party_file_must_match_the_schema(tmp_path: Path) -> None:
    path = write_party_data(tmp_path / "p.csv", PartyData("bob", np.zeros((3, 2)), ("a", "b")))
    schema = {"features": ["a", "b", "c"], "attributes": []}
    with pytest.raises(ShapeMismatchError, match=r"columns of bob's data file.*missing \['x:c'\]"):
        read_party_data(path, "bob", schema)
    with pytest.raises(ShapeMismatchError, match=r"rows of bob's data file.*2 rows"):
        read_party_data(path, "bob", schema, features=["a", "b"], rows=2)
    with pytest.raises(DatasetError, match="data file of bob"):
        read_party_data(tmp_path / "missing.csv", "bob", schema)


def test_a_horizontal_party_rebuilds_its_dataset_from_the_public_schema(tmp_path: Path) -> None:
    data = load_dataset("synthetic-mixed:n=50")
    own = data.rows(np.arange(10))
    path = write_party_data(tmp_path / "p.csv", PartyData("p", own.X, own.feature_names, own.y, own.values))
    schema = json.loads(json.dumps(schema_of(data)))  # as the parties read it
    back = dataset_from_schema(schema, read_party_data(path, "p", schema, label=True, values=True))
    assert back.row_norm_bound == data.row_norm_bound and back.attributes == data.attributes
    assert np.array_equal(back.values, own.values) and np.array_equal(back.X, own.X)


def test_network_models() -> None:
    """The modelled wall time's arithmetic on fixed inputs (compute + rounds x RTT + bytes / bandwidth): the
    fields are in seconds, but no clock is read; nothing here is timed."""
    assert network_model("lan") == NAMED["lan"] and NAMED["wan"].rtt_ms == 50.0 and NAMED["wan"].mbps == 100.0
    custom = network_model("20,500")
    out = custom.model(1.5, {"bytes": 10_000_000, "rounds": 10}, {"a": 1_000_000, "b": 250_000})
    assert out["latency_seconds"] == pytest.approx(0.2)
    assert out["transfer_seconds"] == pytest.approx(8e6 / 500e6)  # the busiest party's uplink
    assert out["modelled_seconds"] == pytest.approx(1.5 + 0.2 + 8e6 / 500e6)
    assert custom.model(0.0, {"bytes": 10_000_000, "rounds": 0})["transfer_seconds"] == pytest.approx(0.16)
    for bad in ("fast", "20", "-1,10", "10,0"):
        with pytest.raises(argparse.ArgumentTypeError, match="RTT_ms,Mbps"):
            network_model(bad)


def test_run_reports_the_network_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "fm-logistic", "--dataset", "synthetic-mixed:n=120", "--seed", "1", "--network", "lan",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    net = record["network"]  # the model's rounds x 1 ms, computed from the counted rounds: arithmetic, not a timing
    assert net["latency_seconds"] == pytest.approx(record["communication"]["rounds"] * 0.001)
    assert net["compute_seconds"] == record["phases"]["train"]  # the protocol's time, not the load or evaluation
    assert net["modelled_seconds"] == pytest.approx(net["compute_seconds"] + net["latency_seconds"]
                                                    + net["transfer_seconds"])


def test_certs_split_keeps_each_party_apart_and_the_ca_key_elsewhere(tmp_path: Path) -> None:
    out, keep = tmp_path / "orgs", tmp_path / "ca"
    assert main(["certs", "--out", str(out), "--parties", "bank", "clinic", "--split", "--ca-key-out", str(keep)]) == 0
    for party in ("bank", "clinic"):
        assert sorted(p.name for p in (out / party).iterdir()) == sorted(["ca.pem", f"{party}.pem", f"{party}.key"])
        assert (out / party / f"{party}.key").stat().st_mode & 0o077 == 0
    assert not list(out.glob("**/ca.key")) and (keep / "ca.key").exists()
    assert main(["certs", "--out", str(tmp_path / "x"), "--parties", "a", "--ca-key-out", str(keep)]) == 2


def test_the_digest_is_order_free_and_sees_every_value() -> None:
    a = {"algorithm": "ofpa", "shared": {"epsilon": 1.0, "x": [1, 2]}}
    b = {"shared": {"x": [1, 2], "epsilon": 1.0}, "algorithm": "ofpa"}
    assert canonical(a) == canonical(b) and digest(a) == digest(b)
    assert digest({**a, "shared": {"epsilon": 1.0000001, "x": [1, 2]}}) != digest(a)


def test_every_deployable_name_is_registered_and_served() -> None:
    from mpdp.deploy.deployments import deployable, deployment_for
    from mpdp.learning.registry import algorithms
    from mpdp.learning.spec.deployment import AlgorithmDeployment

    registered = algorithms()
    assert deployable()
    for name in deployable():
        assert name in registered and isinstance(deployment_for(name), AlgorithmDeployment)


def test_party_processes_on_one_machine_share_its_blas_pools_unless_the_user_sized_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from mpdp.deploy.launcher import party_environment

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    env = party_environment(3)
    assert env["OPENBLAS_NUM_THREADS"] == "2" and env["OMP_NUM_THREADS"] == "3"  # 8 cores // 3; the user's kept
    assert party_environment(20)["OPENBLAS_NUM_THREADS"] == "1"  # never below one thread
