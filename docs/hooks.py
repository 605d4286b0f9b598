"""MkDocs hooks: one API reference page per public module of ``src/mpdp``, and the papers page, generated at build time.

Each page holds a single mkdocstrings directive (``::: mpdp.datasets.csvfile``); the "API reference" section of
the navigation lists them package by package, so a new module is documented without editing ``mkdocs.yml``.
Private modules (``_exact.py``) and ``__main__`` are left out; their public names are re-exported elsewhere.

``papers.md`` is the table of :data:`mpdp.learning.papers.PAPERS` (the one place the papers' citations are kept)
with each paper's package and ``mpdp reproduce`` ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

SRC = Path(__file__).resolve().parents[1] / "src"
PREFIX = "reference"


def modules() -> list[str]:
    """Dotted names of the public modules and packages under ``src/mpdp``, packages before their modules."""
    names = []
    for path in sorted((SRC / "mpdp").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        names.append(".".join(parts))
    return sorted(names, key=lambda n: n.split("."))


def page(name: str) -> str:
    return f"{PREFIX}/{name}.md"


def _nav(names: list[str]) -> list[Any]:
    """Nested navigation: a package's section opens with its own page, then its modules and subpackages."""
    packages = {n for n in names if (SRC / n.replace(".", "/")).is_dir()}

    def section(package: str) -> list[Any]:
        entries: list[Any] = [{"Overview": page(package)}] if package != "mpdp" else []
        for child in names:
            if child.rpartition(".")[0] != package:
                continue
            title = child.rpartition(".")[2]
            entries.append({title: section(child)} if child in packages else {title: page(child)})
        return entries

    return [{"mpdp": page("mpdp")}, *section("mpdp")]


PAPERS_PAGE = "papers.md"


def papers_page() -> str:
    """The papers page: every paper's full reference, its package and its reproductions."""
    from mpdp.learning.papers import PAPERS
    from mpdp.learning.registry import reproductions

    ids = sorted(reproductions())
    lines = ["# The papers", "",
             "mpdp implements five papers. This table is generated from `mpdp.learning.papers.PAPERS`, where the code "
             "and the tutorials take their citations from; `mpdp reproduce ID` reruns a paper's table or figure.", "",
             "| Paper | Reference | Package | `mpdp reproduce` |", "| --- | --- | --- | --- |"]
    for number, paper in PAPERS.items():
        package = paper.package.rpartition(".")[2]
        runs = ", ".join(f"`{i}`" for i in ids if i.startswith(number + "-")) or "-"
        lines.append(f"| {number} | {paper.citation} | [`{package}`][{paper.package}] | {runs} |")
    return "\n".join(lines) + "\n"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    config.nav = [*(config.nav or []), {"Papers": PAPERS_PAGE}, {"API reference": _nav(modules())}]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for name in modules():
        files.append(File.generated(config, page(name), content=f"# `{name}`\n\n::: {name}\n"))
    files.append(File.generated(config, PAPERS_PAGE, content=papers_page()))
    return files
