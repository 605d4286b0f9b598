"""``mpdp run --save``, ``mpdp predict`` and ``mpdp synthesize`` end to end on a user CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mpdp.cli import main
from mpdp.randomness import RandomSource

CATEGORIES = ("Lyon", "Nice", "Paris")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = RandomSource.seeded("release-csv")
    folder = tmp_path_factory.mktemp("release")
    lines = ["age,city,hours,outcome"]
    n = 240
    ages, cities, hours_ = 18 + (70 * rng.random(n)).astype(int), rng.integers(0, 3, n), 80 * rng.random(n)
    for age, code, hours in zip(ages.tolist(), cities.tolist(), hours_.tolist(), strict=True):
        city = CATEGORIES[code]
        lines.append(f"{age},{city},{hours:.1f},{'yes' if age + 20 * (city == 'Paris') > 55 else 'no'}")
    (folder / "train.csv").write_text("\n".join(lines) + "\n")
    (folder / "new.csv").write_text("id,hours,city,age\n1,5,Lyon,20\n2,120,Paris,95\n3,30,Nice,50\n")
    return folder


def _run(table: Path, algorithm: str, out: str, *extra: str) -> Path:
    args = ["run", algorithm, "--dataset", str(table / "train.csv"), "--label", "outcome", "--bounds",
            "age=0:120,hours=0:100", "--categories", "city=" + "|".join(CATEGORIES), "--seed", "1", "--json",
            "--save", str(table / out), *extra]
    assert main(args) == 0
    return table / out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_save_then_predict(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = _run(table, "fm-logistic", "fm")
    record = json.loads(capsys.readouterr().out)
    assert json.loads((saved / "run.json").read_text())["epsilon_spent"] == record["epsilon_spent"]
    assert main(["predict", "--model", str(saved), "--dataset", str(table / "new.csv"), "--out",
                 str(table / "pred.csv"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 3 and summary["clipped"] == {"hours": 1} and summary["epsilon_spent"] == 0.0
    rows = _rows(table / "pred.csv")
    assert [set(r) for r in rows] == [{"prediction", "probability"}] * 3
    # the classes as the training table wrote them ("no" < "yes": "yes" is class 1)
    assert all(r["prediction"] in ("no", "yes") and 0 <= float(r["probability"]) <= 1 for r in rows)
    assert main(["predict", "--model", str(saved), "--dataset", str(table / "new.csv"), "--out",
                 str(table / "p.csv"), "--out-of-bounds", "error"]) == 2
    assert "SchemaMismatchError" in capsys.readouterr().err


def test_a_tampered_model_is_refused(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = _run(table, "fm-logistic", "tampered")
    path = saved / "model.json"
    path.write_text(path.read_text().replace('"epsilon_spent": 1.0', '"epsilon_spent": 0.1', 1))
    capsys.readouterr()
    assert main(["predict", "--model", str(saved), "--dataset", str(table / "new.csv"), "--out",
                 str(table / "x.csv")]) == 2
    assert "ModelChecksumError" in capsys.readouterr().err


@pytest.mark.parametrize(("algorithm", "extra"), [
    ("dpvi", ("--partition", "age,city;hours", "--label-party", "1", "--option", "epochs=1", "--option",
              "components=2", "--option", "baseline=false")),
    ("pfds", ("--parties", "3", "--option", "eval_agents=1")),
])
def test_synthesize_writes_the_schema(table: Path, capsys: pytest.CaptureFixture[str], algorithm: str,
                                      extra: tuple[str, ...]) -> None:
    saved = _run(table, algorithm, algorithm, *extra)
    twin = table / f"{algorithm}-twin.csv"
    assert main(["synthesize", "--model", str(saved), "--rows", "50", "--out", str(twin), "--seed", "2"]) == 0
    rows = _rows(twin)
    assert len(rows) == 50 and list(rows[0]) == ["age", "city", "hours", "outcome"]
    assert {r["city"] for r in rows} <= set(CATEGORIES) and len({r["city"] for r in rows}) > 1
    assert all(0 <= float(r["age"]) <= 120 and 0 <= float(r["hours"]) <= 100 for r in rows)
    # each column keeps its type: age was written in whole numbers, hours with decimals
    assert all(r["age"].isdigit() for r in rows) and not all(r["hours"].isdigit() for r in rows)
    assert {r["outcome"] for r in rows} <= {"no", "yes"}  # the training table's own class names
    capsys.readouterr()
    assert main(["predict", "--model", str(saved), "--dataset", str(table / "new.csv"), "--out",
                 str(table / "x.csv")]) == 2
    assert "UnsupportedModelError" in capsys.readouterr().err


def test_save_is_refused_before_a_run_that_releases_no_model(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "np-agt", "--dataset", str(table / "train.csv"), "--label", "outcome", "--save", str(table / "np")]
    assert main(args) == 2
    assert "UnsupportedModelError" in capsys.readouterr().err and not (table / "np").exists()
