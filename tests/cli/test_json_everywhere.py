"""Every ``mpdp`` command under ``--json`` prints exactly one JSON object on stdout, for success and error alike.

The sweep covers every command of :data:`mpdp.cli.COMMANDS` (and every action of ``datasets``): a usage error
(an option no command has), an error the command itself raises, and, where it is cheap, a success. A command
added without a case here fails :func:`test_every_command_is_swept`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpdp.cli import COMMANDS, main

#: command -> the words after it that make the command itself refuse (an MpdpError from its handler)
ERRORS: dict[str, list[str]] = {
    "demo": ["--parties", "0"],
    "bench": ["no-such-suite"],
    "certs": ["--out", "{tmp}/certs", "--parties", "alice", "--ca-key-out", "{tmp}/ca"],
    "party": ["--config", "{tmp}/missing.json"],
    "run": ["no-such-algorithm"],
    "launch": ["no-such-algorithm"],
    "predict": ["--model", "{tmp}/missing", "--dataset", "{tmp}/x.csv", "--out", "{tmp}/p.csv"],
    "synthesize": ["--model", "{tmp}/missing", "--rows", "3", "--out", "{tmp}/t.csv"],
    "reproduce": ["999-fig9"],
    "datasets": ["show", "--dataset", "no-such-dataset"],
    "align": ["--data", "a={tmp}/a.csv", "--data", "b={tmp}/b.csv", "--id-column", "id"],
    "audit": ["no-such-audit"],
}

#: command -> cheap successful invocations (the costly ones have their own tests: bench, party, launch)
SUCCESSES: dict[str, list[list[str]]] = {
    "demo": [["--length", "3", "--seed", "1"]],
    "certs": [["--out", "{tmp}/certs", "--parties", "alice", "bob"]],
    "run": [["--list"], ["ofpa", "--dataset", "synthetic-logistic:n=300,d=3", "--seed", "1"]],
    "launch": [["--list"]],
    "reproduce": [["--list"]],
    "datasets": [["list"], ["show", "--dataset", "synthetic-mixed:n=50"]],
    "audit": [["--list"]],
    "align": [["--data", "a={tmp}/ids_a.csv", "--data", "b={tmp}/ids_b.csv", "--id-column", "id",
               "--min-intersection", "5", "--out", "{tmp}/aligned", "--seed", "1"]],
    "predict": [["--model", "{tmp}/model", "--dataset", "{tmp}/new.csv", "--out", "{tmp}/p.csv"]],
    "synthesize": [],  # needs a generative model: tests/cli/test_release_cmds.py
}


def _words(words: list[str], tmp: Path) -> list[str]:
    return [w.replace("{tmp}", str(tmp)) for w in words]


def one_object(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The command's stdout, which must be one JSON object on one line and nothing else."""
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.endswith("\n"), out[:500]
    record = json.loads(out)
    assert isinstance(record, dict)
    return record


def test_every_command_is_swept() -> None:
    assert set(ERRORS) == set(COMMANDS) and set(SUCCESSES) <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_usage_error_is_one_json_error_object(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    words = [command, "show"] if command == "datasets" else [command]
    assert main([*words, "--json", "--no-such-option"]) == 2
    error = one_object(capsys)["error"]  # the unknown option, or a required argument missing
    assert error["type"] == "UsageError" and error["message"]
    assert error["fix"] in (f"see `mpdp {command} --help`", f"see `mpdp {' '.join(words)} --help`")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_error_is_one_json_error_object(command: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, *_words(ERRORS[command], tmp_path), "--json"]) == 2
    error = one_object(capsys)["error"]
    assert error["type"].endswith("Error") and error["message"]
    assert set(error) <= {"type", "message", "field", "expected", "fix", "notes"}


def test_the_error_object_carries_the_field_and_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "ofpa", "--epsilon", "-1", "--json"]) == 2
    error = one_object(capsys)["error"]
    assert error == {"type": "ParameterError", "field": "--epsilon", "expected": "a finite number > 0",
                     "fix": "pass e.g. --epsilon 1.0", "message": error["message"]}
    assert main(["reproduce", "999-fig9", "--json"]) == 2
    error = one_object(capsys)["error"]
    assert error["field"] == "reproduction id" and error["message"].startswith("reproduction id: received '999")
    assert main(["reproduce", "999-fig9"]) == 2  # without --json: one line on stderr, nothing on stdout
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("mpdp: error: ParameterError: reproduction id: received")


def test_an_unexpected_exception_is_one_json_error_object(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from mpdp.cli import demo_cmd

    def broken(args: Any) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(demo_cmd, "handle", broken)
    assert main(["demo", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"error": {"type": "RuntimeError", "message": "a bug"}}
    assert "Traceback" in captured.err  # for the bug report, on stderr
    with pytest.raises(RuntimeError):  # without --json: the traceback as usual
        main(["demo"])


@pytest.fixture
def inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    ids = [f"p{k:03d}" for k in range(30)]
    (tmp_path / "ids_a.csv").write_text("id,x\n" + "".join(f"{i},{k}\n" for k, i in enumerate(ids[:20])))
    (tmp_path / "ids_b.csv").write_text("id,y\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids[8:])))
    assert main(["run", "fm-logistic", "--dataset", "synthetic-logistic:n=200,d=3", "--seed", "1", "--json",
                 "--save", str(tmp_path / "model")]) == 0
    capsys.readouterr()
    (tmp_path / "new.csv").write_text("x0,x1,x2\n0.1,0.2,0.3\n-0.5,0.5,0\n")
    return tmp_path


@pytest.mark.parametrize(("command", "case"), [(c, k) for c, cases in SUCCESSES.items() for k in range(len(cases))])
def test_a_success_is_one_json_object(command: str, case: int, inputs: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, *_words(SUCCESSES[command][case], inputs), "--json"]) == 0
    assert "error" not in one_object(capsys)
