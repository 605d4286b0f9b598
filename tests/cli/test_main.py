from __future__ import annotations

import json

import pytest

from mpdp import __version__
from mpdp.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "demo" in out and "bench" in out


def test_demo_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "--seed", "1", "--length", "5"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["correct"] is True
    assert report["communication"]["rounds"] == 2
    assert report["communication"]["messages"] == 12


def test_bench_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "runtime", "--quick", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["suite"] == "runtime"
    keys = {"name", "n", "seconds", "per_s", "baseline", "ratio", "max_abs_error", "max_rel_error", "bytes"}
    assert report["results"] and all(keys <= set(r) for r in report["results"])
