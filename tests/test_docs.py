"""The documentation site builds with every warning an error, and lists every notebook as a tutorial.

The build (``mkdocs build --strict`` into a temporary folder, about 20 s of CPU) is what catches a docstring whose
cross-reference names nothing, a numpy-style section griffe cannot parse, or a page link that went stale. It is
skipped only when the docs tools (the ``docs`` extra, part of ``dev``) are not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("mkdocs", "material", "mkdocstrings_handlers.python", "mkdocs_jupyter")


def _missing_tools() -> list[str]:
    missing = []
    for name in TOOLS:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def test_every_notebook_is_a_tutorial() -> None:
    notebooks = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    tutorials = {p.name for p in (ROOT / "docs" / "tutorials").glob("*.ipynb")}
    assert notebooks and tutorials == notebooks, "link each notebook into docs/tutorials/ and mkdocs.yml's nav"
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"tutorials/{name}" in nav for name in notebooks)


@pytest.mark.skipif(bool(_missing_tools()), reason=f"docs tools not installed ({', '.join(_missing_tools())}): "
                    "pip install -e '.[docs]' (the dev extra includes it)")
def test_docs_build_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    problems = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0, "\n".join(problems) or done.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "threat-model" / "index.html").is_file()
    assert (site / "tutorials" / "002_dpvi" / "index.html").is_file()
    reference = (site / "reference" / "mpdp.datasets.csvfile" / "index.html").read_text()
    assert "load_csv" in reference and ":class:`" not in reference  # roles became links
