"""``mpdp run dpvi`` and the Figure 2/3 reproductions, on small data."""

from __future__ import annotations

import json

import pytest

from mpdp.cli import main
from mpdp.datasets import train_test_split
from mpdp.datasets.dataset import Dataset
from mpdp.learning import registry
from mpdp.learning.dpvi import experiments as dpvi_experiments
from mpdp.learning.registry import ReproOptions
from mpdp.randomness import RandomSource


def test_registered() -> None:
    assert "dpvi" in registry.algorithms()
    assert {"002-fig2", "002-fig3", "002-floor"} <= set(registry.reproductions())


def test_run_json_carries_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "dpvi", "--dataset", "synthetic-mixed:n=150", "--partition", "num0,num1;cat0,cat1,cat2,num2,num3",
            "--label-party", "1", "--option", "epochs=1", "--option", "batch=60", "--option", "components=2",
            "--seed", "4", "--json"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["algorithm"] == "dpvi" and record["metric"]["name"] == "nll"
    assert record["baseline"]["name"].startswith("non-partitioned") and record["baseline"]["value"] > 0
    assert record["epsilon_spent"] <= record["epsilon"] and set(record["per_party_epsilon"]) == {"party0", "party1"}
    assert record["non_private"]["name"] == "nll" and len(record["curves"]) == 2
    assert record["runner"] == "greenlets"


def test_human_output_says_what_the_per_party_epsilon_means(capsys: pytest.CaptureFixture[str]) -> None:
    """Towards each party, DPVI's epsilon has no subsampling amplification and is far above the analyst's; the
    table says why, and with Poisson minibatches names the option that bounds it."""
    argv = ["run", "dpvi", "--dataset", "synthetic-mixed:n=150", "--partition", "num0,num1;cat0,cat1,cat2,num2,num3",
            "--label-party", "1", "--option", "epochs=1", "--option", "batch=60", "--option", "components=2",
            "--option", "baseline=false", "--seed", "4", "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "per-party epsilon: party0" in out
    assert "(towards each party (VPDP): no subsampling amplification" in out
    assert "--option batching=disjoint bounds it by epochs" in out
    assert main([*argv, "--option", "batching=disjoint"]) == 0
    out = capsys.readouterr().out
    assert "towards each party (VPDP)" in out and "batching=disjoint" not in out


def test_bad_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "dpvi", "--dataset", "synthetic-mixed:n=150", "--option", "noise=tee", "--json"]
    assert main(argv) == 2
    assert "noise" in capsys.readouterr().err
    assert main([*argv[:-2], "runner=threads", "--json"]) == 2
    assert "runner" in capsys.readouterr().err


def test_figure2_quick_on_a_small_adult(adult: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    def tiny(options: ReproOptions) -> tuple[Dataset, Dataset]:
        small, _ = train_test_split(adult, 0.995, rng=options.rng.spawn("tiny"))
        return train_test_split(small, 0.2, rng=options.rng.spawn("split"))

    monkeypatch.setattr(dpvi_experiments, "_adult", tiny)
    table = registry.get_reproduction("002-fig2").run(ReproOptions(rng=RandomSource.seeded(5), quick=True))
    methods = {row.setting["method"] for row in table.rows}
    assert len(methods) == 3 and all(row.metric == "test_nll" and row.paper is None for row in table.rows)
    assert {row.setting["epoch"] for row in table.rows} == {1, 2}
