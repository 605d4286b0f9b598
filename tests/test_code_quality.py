"""src/ stays ruff- and mypy-clean, and free of the patterns the house rules forbid."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mpdp"


def _tool(name: str) -> list[str]:
    if shutil.which(name) is None and not (Path(sys.executable).parent / name).exists():
        pytest.skip(f"{name} is not installed (it is in the dev extra)")
    return [sys.executable, "-m", name]


def test_ruff_clean() -> None:
    result = subprocess.run([*_tool("ruff"), "check", "src", "tests", "bench"], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = subprocess.run(_tool("mypy"), cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


FORBIDDEN = {
    r"^\s*(import pickle|from pickle|import cloudpickle|import dill)": "pickle (messages use mpdp.runtime.codec)",
    r"np\.random\.\w+\(|from numpy\.random|numpy\.random\.\w+\(": "numpy's non-CSPRNG randomness (use RandomSource)",
    r"^\s*import random\s*$|^\s*from random import": "the random module (use mpdp.randomness.RandomSource)",
    r"^\s*assert\s": "assert for validation (raise a typed mpdp error)",
}


def test_no_forbidden_patterns_in_src() -> None:
    offences = []
    for path in SRC.rglob("*.py"):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, why in FORBIDDEN.items():
                if re.search(pattern, line):
                    offences.append(f"{path.relative_to(ROOT)}:{lineno}: {why}")
    assert not offences, "\n".join(offences)
