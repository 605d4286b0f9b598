from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpdp.cli import main
from mpdp.cli.repro_layout import table_axis
from mpdp.learning import registry
from mpdp.learning.registry import ReproRow

TOY_MODULE = "tests.cli.toy_algorithms"


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MODULES", (*registry.MODULES, TOY_MODULE))
    monkeypatch.setattr(registry, "REPRODUCTION_MODULES", (*registry.REPRODUCTION_MODULES, TOY_MODULE))


def test_list(toys: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--list"]) == 0
    assert "toy-table1" in capsys.readouterr().out
    assert main(["reproduce", "--list", "--json"]) == 0
    ids = {r["id"] for r in json.loads(capsys.readouterr().out)["reproductions"]}
    assert "toy-table1" in ids and ids >= set(registry.reproductions())


def test_json_rows_carry_paper_and_ours(toys: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "toy-table1", "--quick", "--json", "--seed", "1"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert captured.err == ""
    assert record["id"] == "toy-table1" and record["quick"] is True and record["notes"]
    assert [r["setting"]["epsilon"] for r in record["rows"]] == [0.1, 1.0, 10.0]
    for row in record["rows"]:
        assert set(row) == {"setting", "metric", "paper", "ours"}
        assert set(row["ours"]) == {"mean", "std", "repetitions"} and row["ours"]["repetitions"] == 2
    assert main(["reproduce", "toy-table1", "--repetitions", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["ours"]["repetitions"] == 4


def test_human_table_and_plot(toys: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "table.png"
    assert main(["reproduce", "toy-table1", "--quick", "--plot", str(out)]) == 0
    text = capsys.readouterr().out
    assert "toy-table1: Toy accuracy against epsilon" in text
    assert "paper" in text and "ours (mean ± std)" in text and "0.64" in text and "note: toy data" in text
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plot_axis_is_the_most_varying_numeric_setting() -> None:
    rows = [ReproRow({"epsilon": e, "K": k, "data": "adult"}, "acc", None, 0.5, 0.1, 1)
            for e in (0.1, 1.0, 10.0) for k in (2, 4)]
    assert table_axis(rows) == "epsilon"
    assert table_axis([ReproRow({"data": "adult"}, "acc", 0.8, 0.8, 0.0, 1)]) is None
    # values that are not numbers (a baseline's None, "any" iteration) place no row on the axis
    rows = [ReproRow({"T": t}, "gap", None, 1.0, 0.0, 1) for t in (1, 10, "any", None)]
    assert table_axis(rows) == "T"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "000-table99"], "reproduction id: received '000-table99'"),
        (["reproduce"], "reproduction id"),
        (["reproduce", "toy-table1", "--repetitions", "0"], ">= 1"),
        (["reproduce", "toy-table1", "--folds", "0"], ">= 1"),
    ],
)
def test_bad_input(argv: list[str], message: str, toys: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
