"""``mpdp launch --engine flower --json`` prints the record ``--engine grpc`` prints: the same fields (the
deployment assembles both reports), and under one seed the same metric where the engines draw the same noise.

The gRPC side is the real launcher (one process per party); the Flower side runs the same apps, plan and report
assembly with every node in the test's process (:func:`mpdp.flower.inprocess.run_in_process`), since a real
Flower launch takes a minute (``test_launch_net`` runs one).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("flwr")
pytest.importorskip("grpc")

from mpdp.cli import main
from mpdp.deploy.engine import DEPLOYMENT_FIELDS
from mpdp.flower.inprocess import run_in_process
from mpdp.flower.plans import flower_algorithms

pytestmark = pytest.mark.net

#: the Flower apps whose seeded noise is the deployment's (MPC Out P's aggregators add a distributed Laplace
#: instead of the in-MPC one: the same privacy, other draws)
SEEDED_EQUAL = {"mpc-gradp", "ofpa", "ofaa"}
#: fields whose value is a measurement of the run (times, bytes) or says which engine ran it
ENGINE_OWN = {"seconds", "phases", "communication", "deployment"}


def _record(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    return record


@pytest.mark.parametrize("algorithm", sorted(flower_algorithms()))
def test_flower_prints_the_grpc_record(algorithm: str, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("mpdp.flower.launcher.launch", run_in_process)
    options = ["--option", "T=3"] if algorithm == "mpc-gradp" else []
    options += ["--option", "max_rounds=3"] if algorithm in ("ofpa", "ofaa") else []
    argv = ["launch", algorithm, "--dataset", "synthetic-logistic:n=300,d=4", "--parties", "3", "--seed", "5",
            "--epsilon", "2", "--json", *options]
    grpc = _record([*argv, "--engine", "grpc"], capsys)
    flower = _record([*argv, "--engine", "flower"], capsys)
    assert sorted(flower) == sorted(grpc)
    assert set(DEPLOYMENT_FIELDS) <= set(flower["deployment"]) & set(grpc["deployment"])
    assert flower["options"] == grpc["options"] and flower["epsilon_spent"] == grpc["epsilon_spent"]
    assert flower["per_party_epsilon"] == grpc["per_party_epsilon"]
    assert flower["non_private"] == grpc["non_private"]
    if algorithm in SEEDED_EQUAL:
        # the same noise; MPC Grad P's shares round each client's gradient to 2^-24 apart from the deployment's
        # vectorised encoding, far below one test record's weight in the accuracy
        assert flower["metric"]["value"] == pytest.approx(grpc["metric"]["value"], abs=1e-12)
