"""``--data PARTY=FILE --id-column NAME``: per-party files aligned privately, for ``mpdp run`` and ``mpdp align``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpdp.cli import main
from mpdp.cli.party_data import align_tables
from mpdp.datasets.party_files import joined_rows, read_party_table, write_table
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")  # --seed: seeded keys warn

N, COMMON_FROM, COMMON_TO = 400, 100, 380  # alice holds ids [0, 380), bob [100, 400): 280 common


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """alice: x1, x2 and the id (upper case); bob: the id (padded), x3 and the label y; each shuffled."""
    rng = RandomSource.seeded("party-files")
    x = np.round(rng.random((N, 3)) * 4 - 2, 3)
    y = (x @ np.array([1.0, -1.0, 0.5]) + 0.2 * rng.random(N) > 0).astype(int)
    folder = tmp_path_factory.mktemp("parties")
    alice_rows = rng.permutation(COMMON_TO).tolist()
    bob_rows = (COMMON_FROM + rng.permutation(N - COMMON_FROM)).tolist()
    write_table(folder / "a.csv", ["x1", "id", "x2"], [[x[i, 0], f"C{i:04d}", x[i, 1]] for i in alice_rows])
    write_table(folder / "b.csv", ["id", "x3", "y"], [[f" c{i:04d} ", x[i, 2], y[i]] for i in bob_rows])
    target = np.round(x @ np.array([0.5, -0.5, 0.25]), 3)  # a regression label in [-2, 2]
    write_table(folder / "t.csv", ["id", "x3", "y"], [[f"c{i:04d}", x[i, 2], target[i]] for i in bob_rows])
    return {"alice": folder / "a.csv", "bob": folder / "b.csv", "bob-regression": folder / "t.csv",
            "folder": folder}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main(argv) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    return record


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The error a --json run printed: its one JSON object on stdout, as ``Type: message``."""
    error = json.loads(capsys.readouterr().out)["error"]
    return f"{error['type']}: {error['message']}"


COMMON = ["--label", "y", "--bounds", "x1=-2:2,x2=-2:2,x3=-2:2", "--epsilon", "1", "--seed", "3", "--json"]


@pytest.mark.parametrize(("algorithm", "bob"), [("fm-logistic", "bob"), ("fm-linear", "bob-regression")])
def test_a_run_on_shuffled_overlapping_files_equals_the_run_on_pre_aligned_rows(
        capsys: pytest.CaptureFixture[str], files: dict[str, Path], algorithm: str, bob: str) -> None:
    data = ["--data", f"alice={files['alice']}", "--data", f"bob={files[bob]}", "--id-column", "id"]
    task = ["--bounds", "x1=-2:2,x2=-2:2,x3=-2:2,y=-3:3"] if bob == "bob-regression" else []
    aligned = _json(capsys, ["run", algorithm, *data, *COMMON, *task])
    assert aligned["aligned_rows"] == COMMON_TO - COMMON_FROM
    assert aligned["rows_per_party"] == {"alice": COMMON_TO, "bob": N - COMMON_FROM}
    assert aligned["partition"] == [["x1", "x2"], ["x3"]]
    assert aligned["alignment"]["messages"] == 6
    # the same rows, pre-aligned by the order the alignment agrees under this seed, run without ids
    tables = [read_party_table("alice", files["alice"], id_column="id"),
              read_party_table("bob", files[bob], id_column="id")]
    result, _ = align_tables(tables, rng=RandomSource.seeded(3).spawn("alignment"))
    header, rows = joined_rows(tables, {p: a.rows for p, a in result.items()})
    assert rows[0][:2] != tables[0].cells[0]  # the agreed order is no party's file order
    plain = write_table(files["folder"] / algorithm / "alice+bob.csv", header, rows)
    reference = _json(capsys, ["run", algorithm, "--dataset", str(plain), "--partition", "x1,x2;x3",
                               "--label-party", "1", *COMMON, *task])
    for key in ("metric", "non_private", "epsilon_spent", "train_rows", "test_rows", "partition", "dataset"):
        assert aligned[key] == reference[key], key
    # the same guarantees, each party under the one name the record gives it (its --data name)
    assert aligned["per_party_epsilon"] == {"alice": reference["per_party_epsilon"]["party0"],
                                            "bob": reference["per_party_epsilon"]["party1"]}
    assert aligned["communication"] == reference["communication"]


def test_align_writes_each_party_its_rows_in_one_order(capsys: pytest.CaptureFixture[str],
                                                       files: dict[str, Path], tmp_path: Path) -> None:
    record = _json(capsys, ["align", "--data", f"alice={files['alice']}", "--data", f"bob={files['bob']}",
                            "--id-column", "id", "--out", str(tmp_path), "--seed", "1", "--json"])
    assert record["aligned_rows"] == COMMON_TO - COMMON_FROM
    out = {p: list(csv.reader(Path(f).open())) for p, f in record["files"].items()}
    assert out["alice"][0] == ["id", "x1", "x2"] and out["bob"][0] == ["id", "x3", "y"]
    alice_ids = [r[0].strip().lower() for r in out["alice"][1:]]
    assert alice_ids == [r[0].strip().lower() for r in out["bob"][1:]]
    assert sorted(alice_ids) == [f"c{i:04d}" for i in range(COMMON_FROM, COMMON_TO)]


@pytest.mark.parametrize(("extra", "error"), [
    (["--id-column", "key"], "DatasetError: id column of alice"),
    (["--id-column", "id", "--min-intersection", "300"], "IntersectionTooSmallError"),
])
def test_align_refuses_bad_input(capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path,
                                 extra: list[str], error: str) -> None:
    argv = ["align", "--data", f"alice={files['alice']}", "--data", f"bob={files['bob']}", "--out", str(tmp_path)]
    assert main([*argv, *extra]) == 2
    assert error in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_run_refuses_party_files_where_they_do_not_apply(capsys: pytest.CaptureFixture[str],
                                                         files: dict[str, Path], tmp_path: Path) -> None:
    data = ["--data", f"alice={files['alice']}", "--data", f"bob={files['bob']}", "--id-column", "id"]
    assert main(["run", "ofpa", *data, *COMMON]) == 2
    assert "only for vertical algorithms" in _error(capsys)
    assert main(["run", "fm-logistic", *data, "--partition", "x1;x2", *COMMON]) == 2
    assert "no --partition with --data" in _error(capsys)
    assert main(["run", "fm-logistic", *data, "--label", "nope", "--json"]) == 2
    assert "a column of exactly one party's file" in _error(capsys)
    dup = tmp_path / "dup.csv"
    dup.write_text("id,x3,y\nc0100,1,0\nC0100 ,0.5,1\n" + "".join(f"c{i:04d},0,1\n" for i in range(101, 200)))
    assert main(["run", "fm-logistic", "--data", f"alice={files['alice']}", "--data", f"bob={dup}",
                 "--id-column", "id", *COMMON]) == 2
    assert "DuplicateIdError" in _error(capsys)
