"""Seeded runs of every registered algorithm give the results recorded in ``seeded_runs.json``.

The file pins, per case of :mod:`tests.run_cases`, the fields of ``mpdp run --json`` that a refactoring must not
change (metric, privacy spent, per-party spend, communication, non-private reference). A deliberate change of
results (a default fixed from the paper, a new noise draw) rewrites the file with ``MPDP_WRITE_SEEDED_RUNS=1``
and says why in its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mpdp.cli import main
from tests.run_cases import CASES, DATA, MEMORY_ONLY, SAME

RECORDED = Path(__file__).with_name("seeded_runs.json")
ALL = {**CASES, **MEMORY_ONLY}

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _run(capsys: pytest.CaptureFixture[str], case: str) -> dict[str, Any]:
    name = case.partition("/")[0]
    assert main(["run", name, *DATA, *ALL[case], "--json"]) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    return {key: record[key] for key in SAME}


@pytest.mark.parametrize("case", sorted(ALL))
def test_seeded_run_is_unchanged(capsys: pytest.CaptureFixture[str], case: str) -> None:
    got = _run(capsys, case)
    if os.environ.get("MPDP_WRITE_SEEDED_RUNS") == "1":
        recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
        recorded[case] = got
        RECORDED.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        return
    expected = json.loads(RECORDED.read_text())[case]
    for key in SAME:
        assert got[key] == expected[key], (case, key)
