"""``mpdp run``: the JSON schema for every registered algorithm, on a user CSV, and the bad-input paths.

The schema test is parametrized over ``registry.algorithms()`` (so each paper's algorithms are covered as
soon as their module joins ``MODULES``) plus two test-only algorithms registered by monkeypatching MODULES.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpdp.cli import main
from mpdp.learning import registry
from mpdp.randomness import RandomSource
from tests.cli import toy_algorithms

TOY_MODULE = "tests.cli.toy_algorithms"
REAL = sorted(registry.algorithms())
TOYS = [a.name for a in toy_algorithms.SPECS]


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MODULES", (*registry.MODULES, TOY_MODULE))
    monkeypatch.setattr(registry, "REPRODUCTION_MODULES", (*registry.REPRODUCTION_MODULES, TOY_MODULE))
    toy_algorithms.SEEN.clear()


@pytest.fixture(scope="module")
def user_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """80 records of mixed types: two numeric, two categorical, a binary and a numeric label candidate."""
    rng = RandomSource.seeded("user-csv")
    n = 80
    age = np.round(18 + 60 * rng.random(n))
    score = np.round(10 * rng.random(n), 2)
    city = np.array(["Paris", "Lyon", "Nice"])[rng.integers(0, 3, n)]
    member = np.array(["no", "yes"])[rng.integers(0, 2, n)]
    target = np.round(0.5 * age + 3 * score + 5 * (member == "yes") + 4 * rng.random(n), 1)
    y = ((age > 45) ^ (rng.random(n) < 0.1)).astype(int)
    path = tmp_path_factory.mktemp("csv") / "people.csv"
    lines = ["age,city,score,member,y,target"]
    lines += [f"{a:g},{c},{s:g},{m},{label},{t:g}" for a, c, s, m, label, t in
              zip(age, city, score, member, y, target, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


BOUNDS = "age=0:120,score=0:10,target=0:120,y=0:1"
CATEGORIES = "city=Lyon|Nice|Paris,member=no|yes"


def csv_args(algo: registry.Algorithm, csv: Path) -> list[str]:
    regression = algo.task == "regression"
    label, other = ("target", "y") if regression else ("y", "target")
    args = ["--dataset", str(csv), "--label", label, "--bounds", BOUNDS, "--categories", CATEGORIES]
    if algo.partitioning == "vertical":
        args += ["--partition", f"age,city,{other};score,member", "--label-party", "1"]
    else:
        args += ["--parties", "2"]
    if algo.backends:
        args += ["--backend", "shares" if "shares" in algo.backends else algo.backends[0]]
    if algo.name == "dpvi":  # its default is the paper's 3000 iterations: 3000 epochs of 64 rows here
        args += ["--option", "epochs=2"]
    return args


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def check_schema(record: dict[str, Any], name: str) -> None:
    numbers = ("epsilon", "delta", "epsilon_spent", "delta_spent", "seconds")
    assert record["algorithm"] == name and isinstance(record["dataset"], str)
    assert isinstance(record["parties"], int) and record["parties"] >= 1
    for key in numbers:
        assert isinstance(record[key], int | float) and record[key] >= 0, key
    assert record["epsilon_spent"] <= record["epsilon"] * (1 + 1e-9)
    assert record["delta_spent"] <= record["delta"] * (1 + 1e-9) + 1e-300
    ppe = record["per_party_epsilon"]
    assert ppe is None or (isinstance(ppe, dict) and all(isinstance(v, int | float) for v in ppe.values()))
    for key in ("metric", "non_private"):
        metric = record[key]
        if key == "non_private" and metric is None:
            continue
        assert isinstance(metric["name"], str) and isinstance(metric["value"], int | float | None)
    assert set(record["communication"]) >= {"bytes", "messages", "rounds"}
    assert all(isinstance(v, int) and v >= 0 for v in record["communication"].values())
    assert isinstance(record["curves"], list)


@pytest.mark.parametrize("name", [*REAL, *TOYS])
def test_json_schema_for_every_registered_algorithm_on_a_user_csv(
    name: str, toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    algo = registry.get_algorithm(name)
    record = run_json(capsys, ["run", name, *csv_args(algo, user_csv), "--epsilon", "1", "--seed", "3", "--json"])
    check_schema(record, name)
    assert record["dataset"] == "people" and record["seed"] == 3
    assert record["train_rows"] + record["test_rows"] == 80
    assert capsys.readouterr().err == ""  # no progress bars under --json


def test_config_reaches_the_algorithm(toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    algo = registry.get_algorithm("toy-vertical")
    record = run_json(capsys, ["run", "toy-vertical", *csv_args(algo, user_csv), "--seed", "1", "--json"])
    config = toy_algorithms.SEEN[-1]
    assert config.partition == (("age", "city", "target"), ("score", "member"))
    assert config.label_party == 1 and config.backend == "shares" and config.parties == 2
    assert (config.train.n, config.test.n) == (64, 16) and not config.progress.enabled  # stderr is no terminal
    assert record["partition"] == [["age", "city", "target"], ["score", "member"]]
    assert record["communication"]["messages"] == 4  # the toy's 2-party secure sum: 2 n (n - 1)
    run_json(capsys, ["run", "toy-horizontal", "--dataset", str(user_csv), "--label", "target", "--bounds", BOUNDS,
                      "--categories", CATEGORIES, "--option", "steps=2", "--parties", "4", "--json"])
    config = toy_algorithms.SEEN[-1]
    assert config.options == {"steps": 2} and config.parties == 4 and config.partition is None


def test_row_splits_for_horizontal_parties(toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "toy-horizontal", "--dataset", str(user_csv), "--label", "target", "--bounds", BOUNDS,
            "--categories", CATEGORIES, "--json", "--seed", "2"]
    record = run_json(capsys, [*argv, "--fractions", "40,30,10"])
    assert record["party_rows"] == [32, 24, 8] and record["parties"] == 3
    rows = toy_algorithms.SEEN[-1].row_partition
    assert rows is not None and sorted(np.concatenate(rows).tolist()) == list(range(64))
    record = run_json(capsys, [*argv, "--anchor", "age", "--parties", "2"])
    assert sum(record["party_rows"]) == 64 and len(record["party_rows"]) == 2
    assert run_json(capsys, argv)["party_rows"] == [22, 21, 21]  # default: 3 equal parties


def test_seed_makes_runs_reproducible(toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "toy-horizontal", "--dataset", str(user_csv), "--label", "target", "--bounds", BOUNDS,
            "--categories", CATEGORIES, "--json"]
    first = run_json(capsys, [*argv, "--seed", "5"])
    second = run_json(capsys, [*argv, "--seed", "5"])
    third = run_json(capsys, [*argv, "--seed", "6"])
    assert first["metric"] == second["metric"] != third["metric"]


def test_human_output_progress_and_plot(toys: None, user_csv: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    algo = registry.get_algorithm("toy-vertical")
    out = tmp_path / "curve.png"
    assert main(["run", "toy-vertical", *csv_args(algo, user_csv), "--plot", str(out)]) == 0
    captured = capsys.readouterr()
    assert "toy-vertical on people with 2 parties" in captured.out and "per-party epsilon" in captured.out
    assert "plot written" in captured.err and "toy:" not in captured.err  # the status line; no bar off a terminal
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["run", "toy-vertical", *csv_args(algo, user_csv), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_default_vertical_partition_uses_named_groups(toys: None, capsys: pytest.CaptureFixture[str]) -> None:
    run_json(capsys, ["run", "toy-vertical", "--dataset", "synthetic-mixed:n=60", "--json", "--seed", "1"])
    assert toy_algorithms.SEEN[-1].partition == (("num0", "num1", "num2", "num3"), ("cat0", "cat1", "cat2"))
    run_json(capsys, ["run", "toy-vertical", "--dataset", "synthetic-mixed:n=60", "--parties", "3", "--json"])
    assert [len(g) for g in toy_algorithms.SEEN[-1].partition or ()] == [3, 2, 2]


def test_list(toys: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--list"]) == 0
    out = capsys.readouterr().out
    assert "toy-vertical" in out and "shares,paillier" in out and "--option for toy-horizontal:\n  steps=1" in out
    listing = run_json(capsys, ["run", "--list", "--json"])
    assert {a["name"] for a in listing["algorithms"]} >= set(TOYS)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["toy-vertical", "--partition", "age,city;score,member"], r"not assigned: \['target'\]"),
        (["toy-vertical", "--partition", "age,city,target;score,member", "--parties", "3"], "--partition groups"),
        (["toy-vertical", "--partition", "age,city,target;score,member", "--label-party", "2"], "label_party"),
        (["toy-vertical", "--backend", "ckks"], r"one of \['shares', 'paillier'\]"),
        (["toy-horizontal", "--backend", "shares"], "drop --backend"),
        (["toy-horizontal", "--partition", "a;b"], "only for vertical"),
        (["toy-horizontal", "--parties", "65"], "1 to 64"),
        (["toy-horizontal", "--option", "stpes=2"], r"options among \['steps'\]"),
        (["toy-horizontal", "--option", "steps=0"], r"steps.*an integer >= 1"),
        (["toy-horizontal", "--option", "steps=abc"], r"steps.*an integer >= 1"),
        (["toy-horizontal", "--fractions", "40,30", "--parties", "3"], "one per --fractions weight"),
        (["toy-horizontal", "--anchor", "city"], "numeric attribute"),
        (["toy-vertical", "--fractions", "1,1"], "only for horizontal"),
        (["toy-horizontal", "--label", "y", "--option", "steps=2"], "regression for toy-horizontal"),
        (["toy-vertical", "--epsilon", "0"], "finite number > 0"),
        (["toy-vertical", "--delta", "1"], r"\[0, 1\)"),
        (["toy-vertical", "--plot", "curve.txt"], ".png"),
        (["toy-vertical", "--dataset", "nowhere.csv"], "existing file"),
        (["no-such-algorithm"], "mpdp run --list"),
    ],
)
def test_bad_input_exits_2_with_a_readable_message(
    extra: list[str], message: str, toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = extra[0]
    base = ["--dataset", str(user_csv), "--bounds", BOUNDS, "--categories", CATEGORIES]
    if "--label" not in extra:
        base += ["--label", "target" if name == "toy-horizontal" else "y"]
    argv = ["run", *extra, *base]
    if "--dataset" in extra:
        argv = ["run", *extra, "--label", "y"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpdp: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_csv_domain_inference_warns_on_stderr(toys: None, user_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "toy-horizontal", "--dataset", str(user_csv), "--label", "target", "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert "PrivacyLeakWarning" in captured.err and "--bounds" in captured.err


def test_no_algorithm_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert "mpdp run --list" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["dpvi", "pfds", "np-agt"])
def test_fewer_parties_than_the_algorithm_needs_are_refused_before_it_runs(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    minimum = registry.get_algorithm(name).min_parties
    assert minimum >= 2
    assert main(["run", name, "--dataset", "synthetic-mixed:n=60", "--parties", "1"]) == 2
    assert f"at least {minimum} data parties for {name}" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["ofaa", "fm-linear"])
def test_the_record_times_the_runs_phases_under_fixed_names(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = "synthetic-mixed:n=120" + (",task=regression" if name == "fm-linear" else "")
    record = run_json(capsys, ["run", name, "--dataset", dataset, "--seed", "1", "--json"])
    phases = record["phases"]
    assert list(phases) == ["load", "train", "baseline", "evaluate"]  # no --data: nothing aligned
    assert all(v >= 0 for v in phases.values()) and phases["train"] > 0
    assert record["seconds"] == pytest.approx(sum(phases.values()))
    assert record["metric"]["split"] == "test"
