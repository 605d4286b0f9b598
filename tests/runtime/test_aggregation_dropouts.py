"""Secure aggregation over gRPC (``mpdp party``, one process per party) starts without absent clients up to
``max_dropouts``: the parties present wait ``connect_timeout`` for the others, say which were absent, and the
server's aggregate is the exact sum of the present clients' inputs within the fixed-point bound; more absent
clients than the bound is a PartyUnavailableError naming them at every party present."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc")

from mpdp.protocols.aggregation import AggregationSpec
from mpdp.protocols.catalog import load_input
from mpdp.runtime.certs import generate_demo_certificates
from tests.runtime.test_grpc_transport import ENV, ROOT, free_addresses

pytestmark = pytest.mark.net

CLIENTS = ("c0", "c1", "c2")
NAMES = ("server", "agg1", *CLIENTS)
DIM = 8
#: seconds every party waits for the absent client: a bound on the wait, long enough for a loaded machine to start
#: the present parties (each waits for the others up to this long too)
CONNECT = 25.0


def _run(tmp_path: Path, absent: tuple[str, ...], max_dropouts: int) -> dict[str, subprocess.CompletedProcess[str]]:
    generate_demo_certificates(tmp_path / "certs", NAMES)
    inputs = {c: {"synthetic": {"seed": 10 + k, "shape": [DIM], "kind": "uniform"}} for k, c in enumerate(CLIENTS)}
    params = {"server": "server", "aggregators": ["server", "agg1"], "clients": dict.fromkeys(CLIENTS, 1),
              "dim": DIM, "bound": 1.0, "max_dropouts": max_dropouts}
    config = {"protocol": "aggregation", "parties": free_addresses(NAMES), "certs": str(tmp_path / "certs"),
              "inputs": inputs, "params": params, "timeout": 60, "connect_timeout": CONNECT}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(config))
    procs = {n: subprocess.Popen([sys.executable, "-m", "mpdp", "party", "--config", str(path), "--name", n, "--json"],
                                 cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in NAMES if n not in absent}
    done = {}
    for n, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=CONNECT + 120)
        done[n] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return done


def test_aggregation_goes_on_without_an_absent_client_within_the_bound(tmp_path: Path) -> None:
    done = _run(tmp_path, ("c2",), max_dropouts=1)
    for n, proc in done.items():
        assert proc.returncode == 0, (n, proc.stderr[-2000:])
    reports = {n: json.loads(proc.stdout) for n, proc in done.items()}
    assert all(r["absent"] == ["c2"] for r in reports.values()), reports
    result = reports["server"]["result"]
    present = sum(np.asarray(load_input({"synthetic": {"seed": 10 + k, "shape": [DIM], "kind": "uniform"}}, c))
                  for k, c in enumerate(CLIENTS) if c != "c2")
    spec = AggregationSpec("server", ("server", "agg1"), dict.fromkeys(CLIENTS, 1), DIM, 1.0, max_dropouts=1)
    assert result["count"] == 2 and result["dropped"] == {"c2": [0]}
    assert np.max(np.abs(np.asarray(result["total"]) - present)) <= spec.error_bound


def test_more_absent_clients_than_the_bound_is_an_error_naming_them(tmp_path: Path) -> None:
    done = _run(tmp_path, ("c1", "c2"), max_dropouts=1)
    for n, proc in done.items():
        assert proc.returncode == 2, (n, proc.stdout, proc.stderr[-2000:])
        text = proc.stdout + proc.stderr
        assert "PartyUnavailableError" in text and "c1, c2" in text and "more than the 1 tolerated" in text, text
