"""Paper 003's reproductions and CLI entries: Table 1's six noise columns, the figures' plumbing, bad input."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from mpdp.learning.distributed_erm import experiments as paper003
from mpdp.learning.registry import ReproOptions
from mpdp.randomness import RandomSource


@pytest.mark.parametrize("method", paper003.METHODS)
def test_table1_generated_noise_std_matches_expected(method: str) -> None:
    family, scale = paper003.table1_scales()[method]
    samples = paper003.generate_noise(method, family, scale, 1000, rng=RandomSource.seeded(f"table1/{method}"))
    expected = paper003.expected_std(family, scale)
    # Relative standard error of the std of 1,000 draws: ~3.5% (Laplace, kurtosis 6), ~2.2% (Gaussian). The 5%
    # tolerance the issue asks for is 1.4 (Laplace) / 2.2 (Gaussian) standard errors, so a *fresh* seed would
    # fail about 16% / 3% of the time; these seeds are fixed, and the test below checks 100,000 draws at 1%.
    assert np.std(samples) == pytest.approx(expected, rel=0.05)
    assert abs(np.mean(samples)) < 4 * expected / math.sqrt(1000)


@pytest.mark.parametrize("method", [m for m in paper003.METHODS if not m.startswith("mpc-")])
def test_table1_local_noise_std_to_one_and_a_half_percent(method: str) -> None:
    family, scale = paper003.table1_scales()[method]
    samples = paper003.generate_noise(method, family, scale, 100_000, rng=RandomSource.seeded(f"big/{method}"))
    # 100,000 draws: standard error 0.35% (Laplace) / 0.22% (Gaussian), so 1.5% is > 4 standard errors. (The
    # in-MPC columns are checked on 2,000 draws in test_mpc_perturbation: in-MPC sampling is slower.)
    assert np.std(samples) == pytest.approx(paper003.expected_std(family, scale), rel=0.015)


def test_table1_reproduction_prints_the_paper_beside_ours() -> None:
    table = paper003.reproduce_table1(ReproOptions(rng=RandomSource.seeded(3), quick=True))
    analytic = {r.setting["method"]: r for r in table.rows if r.setting.get("row") == "analytic bound"}
    assert len(analytic) == 6
    for row in analytic.values():  # the analytic row matches the printed one to its printed precision
        assert row.ours_mean == pytest.approx(row.paper, rel=0.01)
    generated = [r for r in table.rows if r.setting.get("row") == "generated noise"]
    assert len(generated) == 6 and all(r.paper is not None and r.repetitions == 3 for r in generated)
    theorem = next(r for r in table.rows if r.setting.get("row") == "Theorem 3.4 sigma")
    assert theorem.ours_mean == pytest.approx(2.97e-3, abs=0.005e-3)
    local = next(r for r in table.rows if r.setting.get("row") == "Theorem 3.4 sigma of the average")
    assert local.ours_mean == pytest.approx(10 * theorem.ours_mean)  # sqrt(m) = 10 times MPC Grad P's
    readings = [r for r in table.rows if r.setting.get("row") == "rho = eps^2 zCDP sigma (the printed reading)"]
    assert len(readings) == 2 and all(r.ours_mean == pytest.approx(r.paper, rel=0.01) for r in readings)
    assert any("rho = eps^2" in note for note in table.notes)


def test_run_reports_privacy_metrics_and_curves(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from mpdp.cli import main

    args = ["run", "mpc-gradp", "--dataset", "synthetic-logistic:n=300,d=4", "--parties", "5", "--epsilon", "0.5",
            "--delta", "1e-3", "--seed", "2", "--json", "--option", "T=20"]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["epsilon_spent"] <= 0.5 and record["delta_spent"] == 1e-3
    assert record["privacy"]["accountant"] == "zcdp" and record["privacy"]["epsilon_exact"] < 0.5
    assert record["curves"][0]["name"] == "optimality gap" and record["curves"][0]["x"][-1] == 20.0
    assert record["non_private"]["name"] == "accuracy" and record["optimality_gap"] >= 0


@pytest.mark.parametrize(
    ("option", "match"),
    [("T=0", "T: received '0'"), ("lam=0", "lam: received '0'"), ("lam=-1", "lam: received '-1'"),
     ("accountant=rdp", "accountant")],
)
def test_run_refuses_bad_input(option: str, match: str, capsys: pytest.CaptureFixture[str]) -> None:
    from mpdp.cli import main

    args = ["run", "mpc-gradp", "--dataset", "synthetic-logistic:n=200,d=4", "--parties", "4", "--seed", "1",
            "--option", option]
    assert main(args) == 2
    assert re.search(match, capsys.readouterr().err)


def test_run_refuses_bad_privacy_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    from mpdp.cli import main

    for flags in (["--epsilon", "0"], ["--delta", "1.5"]):
        code = main(["run", "local-gradp", "--dataset", "synthetic-logistic:n=200,d=4", "--parties", "4", *flags])
        assert code == 2 and "Fix:" in capsys.readouterr().err


def test_equal_parts_keep_every_row_once_and_put_equal_sizes_together() -> None:
    from mpdp.datasets.synthetic import sparse_linear_regression
    from mpdp.learning.distributed_erm.problem import HorizontalParties

    data = sparse_linear_regression(1003, 3, 1.0, rng=RandomSource.seeded(5)).data
    from mpdp.learning.distributed_erm.problem import equal_parts

    parts = equal_parts(data, 100, rng=RandomSource.seeded(6))
    assert sorted(np.concatenate(parts).tolist()) == list(range(1003))
    assert [len(p) for p in parts] == [10] * 97 + [11] * 3
    X = np.clip(data.X / 2, -0.5, 0.5)
    parties = HorizontalParties.from_rows(X, np.clip(data.y, -1, 1), parts, task="regression")
    assert len(parties.groups) == 2  # one vectorised group per size, not one per run of equal sizes


def test_run_uses_the_cli_row_split(capsys: pytest.CaptureFixture[str]) -> None:
    """``--fractions`` reaches the parties: the algorithm must not re-split the rows on its own."""
    import json

    from mpdp.cli import main

    args = ["run", "local-gradp", "--dataset", "synthetic-logistic:n=200,d=4", "--fractions", "60,30,10",
            "--seed", "1", "--option", "T=3", "--json"]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["parties"] == 3
    rows = record["party_rows"]
    assert sorted(rows) == rows and sum(rows) == record["train_rows"]
    assert rows[2] >= 1.8 * rows[1] and rows[1] >= 2.5 * rows[0]  # 60 : 30 : 10, not an equal split
    assert record["n_min"] == rows[0]
