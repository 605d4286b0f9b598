"""OFPA and OFAA's Flower apps in one process: the model equals mpdp's in-process fit under the same seed;
each owner charges its own ledger; a dropped owner leaves the survivors' weighted average."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("flwr")

from mpdp.dp.accounting import PrivacyLedger
from mpdp.flower import ofpa_ofaa
from mpdp.flower.inprocess import InProcessGrid
from mpdp.flower.plans import plan_run
from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, fit
from tests.flower.helpers import SEED, small_config


def _run(tmp_path: Path, method: str, **kwargs: object) -> tuple[dict[str, Any], Any]:
    config = small_config(parties=4)
    config = type(config)(train=config.train, test=config.test, parties=4, epsilon=1.0, delta=0.0, rng=config.rng,
                          options={"max_rounds": 3})
    plan = plan_run(method, config, tmp_path, seed=SEED, **kwargs)  # type: ignore[arg-type]
    grid = InProcessGrid(ofpa_ofaa.client_app, {100 + i: c for i, c in enumerate(plan.nodes.values())})
    return ofpa_ofaa.run(grid, plan.job), config


@pytest.mark.parametrize("method", ["ofpa", "ofaa"])
def test_equals_the_in_process_fit(tmp_path: Path, method: str) -> None:
    out, config = _run(tmp_path, method)
    settings = OfpaOfaaSettings(method=method, epsilon=1.0, max_rounds=3)
    expected = fit(config.party_data(), settings, rng=config.rng)
    # the aggregate is the same ring sum; OFPA's Newton solve is the same code on the same rows and noise
    handed = [r["result"] for r in out["runs"]["server"] if not r["counted"]]
    np.testing.assert_allclose(handed[-1], expected.theta, atol=1e-9, rtol=0)
    assert len(out["rounds"]) == expected.rounds
    for j in range(4):
        ledger = PrivacyLedger.open(tmp_path / f"party{j}.ledger.json")
        assert ledger.spent.epsilon == pytest.approx(1.0) and len(ledger.entries) == 1


def test_a_dropped_owner_leaves_the_survivors_average(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, "ofaa", max_dropouts=1, crash={"party1": 2})
    rounds = out["rounds"]
    assert [r["survivors"] for r in rounds][:2] == [4, 3]
    assert np.all(np.isfinite([r["result"] for r in out["runs"]["server"] if not r["counted"]][-1]))


def test_the_report_is_the_deployments(tmp_path: Path) -> None:
    from mpdp.flower.inprocess import run_in_process

    config = small_config(parties=4)
    config = type(config)(train=config.train, test=config.test, parties=4, epsilon=1.0, delta=0.0, rng=config.rng,
                          options={"max_rounds": 3, "noise": "fresh"})
    run = run_in_process("ofaa", config, seed=SEED, workdir=tmp_path)
    record = run.report.as_json()
    assert record["noise"] == "fresh" and record["variant"] == "ofaa" and record["converged"] in (True, False)
    assert record["metric"]["name"] == "accuracy" and record["metric"]["split"] == "test"
    assert record["metric"]["as_computed"]["name"] == "misclassification"
    assert record["epsilon_spent"] == 1.0 and set(record["per_party_epsilon"]) == {f"party{j}" for j in range(4)}
    assert record["rounds"] == len(run.rounds) and record["communication"]["bytes"] > 0
