"""``mpdp run`` on a CSV that needs a decision: the CLI says what the loader did, or refuses with the lines.

The three options of the CSV loader that reach the command line (``--id-column``, ``--numeric``, ``--missing``)
and the ``"dropped_rows"`` key of the run's JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpdp.cli import main
from mpdp.learning import registry
from tests.cli import toy_algorithms

DOMAINS = ["--bounds", "age=0:120,score=0:10,target=0:120", "--categories", "city=Lyon|Nice|Paris"]


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MODULES", (*registry.MODULES, "tests.cli.toy_algorithms"))
    monkeypatch.setattr(registry, "REPRODUCTION_MODULES", (*registry.REPRODUCTION_MODULES, "tests.cli.toy_algorithms"))
    toy_algorithms.SEEN.clear()


def csv(tmp_path: Path, *, blanks: int = 0, typo: bool = False) -> Path:
    """40 records: customer (unique text), age, city, score, target; ``blanks`` rows lose their city."""
    lines = ["customer,age,city,score,target"]
    for k in range(40):
        city = "" if k < blanks else ("Paris", "Lyon", "Nice")[k % 3]
        score = "abc" if typo and k == 7 else f"{(k * 37) % 100 / 10:g}"
        lines.append(f"c{k:03d},{20 + (7 * k) % 45},{city},{score},{30 + k % 50}")
    path = tmp_path / "clients.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(path: Path, *extra: str) -> list[str]:
    return ["run", "toy-horizontal", "--dataset", str(path), "--label", "target", *DOMAINS, "--seed", "1",
            "--json", *extra]


def test_dropped_rows_reach_the_json_and_the_warning(toys: None, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(run(csv(tmp_path, blanks=3), "--id-column", "customer")) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record["dropped_rows"] == 3 and record["train_rows"] + record["test_rows"] == 37
    assert "DatasetWarning" in captured.err
    assert "dropped 3 of 40 rows with missing values (lines 2, 3, 4;" in captured.err
    assert toy_algorithms.SEEN[-1].train.attribute_names == ("age", "city", "score")  # customer is no feature
    assert main(run(csv(tmp_path, blanks=3), "--missing", "error")) == 2
    assert "lines 2, 3, 4" in capsys.readouterr().err


def test_an_undeclared_identifier_is_excluded_with_a_warning(toys: None, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(run(csv(tmp_path))) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["dropped_rows"] == 0
    assert "customer is unique per row" in captured.err and "--id-column customer" in captured.err
    assert "customer" not in toy_algorithms.SEEN[-1].train.attribute_names


def test_a_typo_in_a_numeric_column_is_refused(toys: None, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for extra in ([], ["--numeric", "score"]):
        assert main(run(csv(tmp_path, typo=True), "--id-column", "customer", *extra)) == 2
        err = capsys.readouterr().err
        assert "score" in err and "line 9 'abc'" in err and "--categorical score" in err


def test_csv_options_are_refused_for_built_in_datasets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "fm-logistic", "--dataset", "synthetic-logistic:n=100,d=3", "--id-column", "id"]) == 2
    assert "--id-column" in capsys.readouterr().err


def test_datasets_show_counts_dropped_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = csv(tmp_path, blanks=2)
    argv = ["datasets", "show", "--dataset", str(path), "--label", "target", "--id-column", "customer", *DOMAINS]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["rows"] == 38 and record["dropped_rows"] == 2
    assert main(argv) == 0
    assert "38 rows (2 dropped for missing values)" in capsys.readouterr().out
