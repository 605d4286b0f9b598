"""The house's shape: no import circles in src/, no module over 600 lines, and code that states the present.

* Imports are read from the source (every ``import``/``from`` statement, function-local and ``TYPE_CHECKING``
  ones included). Importing ``a.b.c`` first runs ``a.b``'s ``__init__``, so an import from outside ``a.b`` also
  counts as an import of ``a.b``; imports inside a package of its own ``__init__`` do not (Python resolves them).
* A diary line is history where a reader needs the present: a session named by its number, "commit" followed by
  a hash, a bare short commit hash. Figures live in ``bench/RESULTS.md`` with their command and date; history
  lives in git.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "mpdp").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> Iterator[str]:
    def nearest(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    if isinstance(node, ast.Import):
        for alias in node.names:
            if (hit := nearest(alias.name)) is not None:
                yield hit
        return
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            yield f"{base}.{alias.name}"
        elif (hit := nearest(base)) is not None:
            yield hit


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(module, path, node, known):
                if target == module:
                    continue
                graph[module].add(target)
                parts = target.split(".")
                for i in range(1, len(parts)):
                    package = ".".join(parts[:i])
                    if package in known and not (module == package or module.startswith(package + ".")):
                        graph[module].add(package)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_sees_a_circle_and_a_package_init() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_src() -> None:
    found = cycles(import_graph())
    assert not found, "import circles (move the shared part into a module below both):\n" + "\n".join(
        " <-> ".join(component) for component in found)


def test_no_module_over_600_lines() -> None:
    long = {str(path.relative_to(ROOT)): n for path in (SRC / "mpdp").rglob("*.py")
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split by responsibility): {long}"


_DIARY = [
    re.compile(r"\bsessions? \d+", re.IGNORECASE),
    re.compile(r"\b(commit|main|at|on) [0-9a-f]{7,40}\b"),
]
_HASH = re.compile(r"(?<![.\w])[0-9a-f]{7,12}(?!\w)")


def _looks_like_a_hash(word: str) -> bool:
    return sum(c.isdigit() for c in word) >= 2 and sum(c.isalpha() for c in word) >= 2


def diary_lines() -> list[str]:
    paths = [ROOT / "README.md"]
    for folder in ("src", "bench", "tests"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md"} and p.is_file()]
    here = Path(__file__).resolve()
    found = []
    for path in paths:
        if path.resolve() == here or path.name == "RESULTS.md" or "egg-info" in str(path):
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if any(p.search(line) for p in _DIARY) or any(_looks_like_a_hash(w) for w in _HASH.findall(line)):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    return found


def test_diary_detector_flags_history_and_spares_numbers() -> None:
    # The session example is assembled at run time so that the project's own grep for diaries passes over this file.
    assert any(p.search("measured in " + "session" + " 12") for p in _DIARY)
    assert any(p.search("run on commit 4e9c786") for p in _DIARY)
    assert [w for w in _HASH.findall("(e34637a; load 3)") if _looks_like_a_hash(w)] == ["e34637a"]
    assert not [w for w in _HASH.findall("x = 1.97312378e-3, 0x5851f42d") if _looks_like_a_hash(w)]


def test_code_states_the_present() -> None:
    found = diary_lines()
    assert not found, ("history in docstrings or comments (state what is true now; figures go in "
                       "bench/RESULTS.md, history in git):\n" + "\n".join(found))
