from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpdp.cli import datasets_cmd, main
from mpdp.datasets import fetch as fetch_module


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "adult" in out and "synthetic-linear" in out and "PATH.csv" in out
    assert main(["datasets", "list", "--json"]) == 0
    names = [d["name"] for d in json.loads(capsys.readouterr().out)["datasets"]]
    assert names == ["adult", "synthetic-linear", "synthetic-logistic", "synthetic-mixed"]


def test_show_lists_columns_for_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "show", "--dataset", "synthetic-mixed:n=40,numeric=2,categorical=1", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["rows"] == 40 and [a["name"] for a in record["attributes"]] == ["num0", "num1", "cat0"]
    assert record["groups"] == {"numeric": ["num0", "num1"], "categorical": ["cat0"]}
    assert main(["datasets", "show", "--dataset", "synthetic-mixed:n=40"]) == 0
    assert "cat2" in capsys.readouterr().out


def test_fetch_reports_verified_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    (cache / "adult").mkdir(parents=True)
    made = {name: cache / "adult" / name for name in ("adult.data", "adult.test")}
    for name, path in made.items():
        path.write_text("stale " + name)
    refetched: list[bool] = []

    def fake_fetch(**kwargs: object) -> dict[str, Path]:
        assert kwargs["cache_dir"] == str(cache) and kwargs["timeout"] == 3.0
        refetched.append(not made["adult.data"].exists())
        for name, path in made.items():
            path.write_text(name)
        return made

    monkeypatch.setattr(datasets_cmd, "fetch_adult", fake_fetch)
    assert main(["datasets", "fetch", "adult", "--cache-dir", str(cache), "--timeout", "3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["files"]["adult.data"]["sha256"] == fetch_module.sha256_bytes(b"adult.data")
    assert main(["datasets", "fetch", "adult", "--cache-dir", str(cache), "--timeout", "3", "--refresh"]) == 0
    assert refetched == [False, True]  # --refresh deleted the cached copies before fetching
    assert main(["datasets", "fetch", "adult", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err
