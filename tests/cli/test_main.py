from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mpdp import __version__
from mpdp.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from mpdp.cli import COMMANDS

    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(f"    {name}" in out for name in COMMANDS)


def test_a_command_imports_only_its_own_module() -> None:
    # in a fresh interpreter: `mpdp party` must not pay for the audit's statistics or other commands' modules
    code = ("import contextlib, io, sys\nfrom mpdp.cli import main\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['party', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('mpdp.cli.') or m in ('mpdp.audit', 'sklearn')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == "['mpdp.cli.party_cmd']", loaded


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
