"""The papers' citations come from one table (:mod:`mpdp.learning.papers`): the learning packages, the tutorials
and the docs say the same, and nothing points at a file of this machine instead."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from mpdp.errors import ParameterError
from mpdp.learning.papers import PAPERS, paper

ROOT = Path(__file__).resolve().parents[2]


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("number", sorted(PAPERS))
def test_package_docstring_cites_the_paper(number: str) -> None:
    entry = PAPERS[number]
    doc = flat(importlib.import_module(entry.package).__doc__ or "")
    assert entry.title in doc and f"{entry.where} {entry.year}" in doc


@pytest.mark.parametrize("number", sorted(PAPERS))
def test_tutorial_cites_the_paper(number: str) -> None:
    (path,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    first = json.loads(path.read_text())["cells"][0]
    assert PAPERS[number].citation in "".join(first["source"])


def test_no_reference_to_a_local_copy_of_a_paper() -> None:
    local = re.compile(r"shared/papers|\b\d{3}_[0-9a-f]{16}\.txt")
    files = [p for folder in ("src", "notebooks", "docs") for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".md", ".ipynb") and p.is_file()]
    assert files
    assert [str(p.relative_to(ROOT)) for p in files if local.search(p.read_text(encoding="utf-8"))] == []


def test_citation_forms() -> None:
    assert paper("003").short == "Jayaraman et al., NeurIPS 2018"
    assert paper("004").short == "Fioretto and Van Hentenryck, AAMAS 2019"
    assert paper("000").citation.startswith('Depeng Xu, Shuhan Yuan and Xintao Wu. "Achieving Differential Privacy')
    with pytest.raises(ParameterError, match="paper: received '005'"):
        paper("005")
