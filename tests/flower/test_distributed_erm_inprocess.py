"""Paper 003's Flower app (MPC Grad P, MPC Out P), run in one process (:class:`InProcessGrid`): equality with
mpdp's in-process run, dropouts up to and beyond the threshold, and the bad inputs of the issue (schema, ledger)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from mpdp.errors import BudgetExceededError, ProtocolAbortError, ShapeMismatchError
from mpdp.flower import distributed_erm as app
from mpdp.flower.inprocess import InProcessGrid
from mpdp.flower.nodes import write_rows
from mpdp.flower.plans import plan_run
from mpdp.learning.distributed_erm.problem import PartyGroup
from tests.flower.helpers import SEED, in_memory_iterates, prepared, small_config

# One grid unit 2^-24 per client's encoded gradient, summed over 4 clients and 2 steps of size 1: far below.
TOLERANCE = 1e-6


def _grid(plan: object) -> InProcessGrid:
    nodes = plan.nodes  # type: ignore[attr-defined]
    return InProcessGrid(app.client_app, {100 + i: cfg for i, cfg in enumerate(nodes.values())})


def _iterates(out: dict) -> np.ndarray:  # type: ignore[type-arg]
    """The recorded iterates a data party holds (the hub's result is the deployed parties')."""
    return np.asarray(out["runs"]["party0"][0]["result"][1])


def test_equals_mpdp_run_without_dropouts(tmp_path: Path) -> None:
    config = small_config()
    plan = plan_run("mpc-gradp", config, tmp_path, seed=SEED)
    out = app.run(_grid(plan), plan.job)
    expected = in_memory_iterates(config)
    assert [r["survivors"] for r in out["rounds"]] == [4, 4]
    np.testing.assert_allclose(_iterates(out), expected, atol=TOLERANCE, rtol=0)
    # every client charged the whole run once on its own ledger: what a deployed party of the same run is charged
    from mpdp.dp.accounting import PrivacyLedger
    from mpdp.learning.distributed_erm.deployment import ERMDeployment
    from mpdp.learning.registry import get_algorithm
    from mpdp.learning.spec.deployment import shared_parameters

    deployment = ERMDeployment()
    deployed = deployment.plan("mpc-gradp", deployment.prepare(get_algorithm("mpc-gradp").configure(config)))
    for j in range(4):
        (entry,) = PrivacyLedger.open(tmp_path / f"party{j}.ledger.json").entries
        assert entry.cost == deployment.cost(shared_parameters(deployed), f"party{j}")
        assert 0 < entry.cost.epsilon <= config.epsilon


def test_dropout_within_threshold_gives_the_survivors_aggregate(tmp_path: Path) -> None:
    config = small_config()
    plan = plan_run("mpc-gradp", config, tmp_path, seed=SEED, max_dropouts=1, crash={"party2": 2})
    out = app.run(_grid(plan), plan.job)
    assert [r["survivors"] for r in out["rounds"]] == [4, 3]
    assert out["rounds"][1]["dropped"] == ["party2"]
    full = in_memory_iterates(config)
    np.testing.assert_allclose(_iterates(out)[0], full[0], atol=TOLERANCE, rtol=0)
    # Round 2's noise equals the in-process run's (seeded aggregators), so the survivors' aggregate is recovered
    # exactly: noise = 4 * g_full - sum_all, expected step uses (sum_survivors + noise) / 3.
    data = prepared(config)
    theta1, lam = full[0], data.problem.lam
    grads = []
    for j in range(4):
        with np.load(tmp_path / f"party{j}.npz") as f:
            grads.append(PartyGroup(0, f["X"][None], f["y"][None]).local_gradients(data.problem, theta1)[0])
    g_full = (theta1 - full[1]) - lam * theta1  # eta = 1: theta2 = theta1 - (g + lam theta1)
    noise = 4 * g_full - np.sum(grads, axis=0)
    g_survivors = (np.sum(grads, axis=0) - grads[2] + noise) / 3
    np.testing.assert_allclose(_iterates(out)[1], theta1 - (g_survivors + lam * theta1), atol=TOLERANCE, rtol=0)


def test_more_dropouts_than_the_threshold_abort(tmp_path: Path) -> None:
    plan = plan_run("mpc-gradp", small_config(), tmp_path, seed=SEED, max_dropouts=1,
                    crash={"party0": 1, "party3": 1})
    with pytest.raises(ProtocolAbortError, match="2 of 4 clients dropped out"):
        app.run(_grid(plan), plan.job)
    # the aborted round released nothing, but each client charged before contributing: no ledger under-reports
    assert (tmp_path / "party1.ledger.json").exists()


def test_a_client_with_another_schema_is_refused(tmp_path: Path) -> None:
    plan = plan_run("mpc-gradp", small_config(), tmp_path, seed=SEED)
    with np.load(tmp_path / "party1.npz") as f:
        write_rows(tmp_path / "party1.npz", f["X"][:, :-1], f["y"])
    with pytest.raises(ShapeMismatchError, match="party1"):
        app.run(_grid(plan), plan.job)


def test_a_client_with_an_exhausted_ledger_stops_the_run(tmp_path: Path) -> None:
    from mpdp.dp.accounting import PrivacyCost, PrivacyLedger

    plan = plan_run("mpc-gradp", small_config(), tmp_path, seed=SEED)
    ledger = PrivacyLedger.open_or_create(tmp_path / "party3.ledger.json", epsilon=1.0, delta=1e-5, method="zcdp",
                                          subject="party:party3")
    ledger.spend(PrivacyCost(epsilon=0.9, delta=0.0, rho=0.405, mechanism="laplace"), label="earlier study")
    with pytest.raises(BudgetExceededError, match="party3"):
        app.run(_grid(plan), plan.job)
    assert len(PrivacyLedger.open(tmp_path / "party3.ledger.json").entries) == 1


def test_mpc_outp_releases_the_noisy_average_of_the_local_minimisers(tmp_path: Path) -> None:
    from mpdp.learning.distributed_erm import HorizontalParties
    from mpdp.learning.distributed_erm.problem import equal_parts

    config = dataclasses.replace(small_config(parties=4), options={})  # one-shot: no iterations
    plan = plan_run("mpc-outp", config, tmp_path, seed=SEED)
    out = app.run(_grid(plan), plan.job)
    data = prepared(config)
    parties = HorizontalParties.from_rows(data.X, data.y, equal_parts(config.train, 4, rng=config.rng.spawn("rows")),
                                          task=data.problem.task)
    mean = np.mean(np.concatenate([g.local_minimizers(data.problem) for g in parties]), axis=0)
    noise = np.asarray(out["runs"]["agg0"][0]["result"]) - mean
    # two aggregators' exact discrete Laplace of the calibrated scale on the sum; 6 coordinates far below 20 scales
    scale = out["privacy"]["laplace_scale_of_sum_per_aggregator"] / 4
    assert 0 < np.max(np.abs(noise)) < 20 * scale
    # the Flower mechanism itself is exactly epsilon-DP (each client's charge is the deployment's: its ledger)
    assert out["privacy"]["epsilon_distributed_laplace"] == pytest.approx(config.epsilon)
