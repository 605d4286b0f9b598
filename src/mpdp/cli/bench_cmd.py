"""``mpdp bench <suite>``: run a benchmark suite from the source tree's ``bench/`` folder.

The benchmarks live beside ``src/`` in a clone (``bench/``, run by ``python -m bench``), not in the installed
package. This command finds that folder (the working directory or the clone this package was installed
from), lists its suites the way ``python -m bench`` does (every module of ``bench/suites`` not starting with
``_``, each described by its docstring's first line) and runs the suite as ``python -m bench SUITE`` in a
child process of this interpreter, with the clone on the child's ``PYTHONPATH``: this package never imports
``bench`` nor edits its own ``sys.path``. The child's output (a table, or one JSON object with ``--json``)
and its exit status are the command's (a failing suite's own error stays on stderr).
"""

from __future__ import annotations

import argparse
import ast
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.progress import SILENT, Progress

__all__ = ["add_parser", "bench_root", "handle", "suites"]


def bench_root() -> Path | None:
    """The clone holding ``bench/`` (the working directory first), or None outside a clone."""
    here = Path(__file__).resolve()
    for candidate in (Path.cwd(), here.parents[3]):
        if (candidate / "bench" / "__main__.py").is_file():
            return candidate
    return None


def _summary(path: Path) -> str:
    """The first line of a suite module's docstring, read without importing it."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8")))
    except (OSError, SyntaxError, ValueError):
        return ""
    return doc.strip().splitlines()[0] if doc else ""


def suites(root: Path | None) -> dict[str, str]:
    """Suite name -> one-line description, as ``python -m bench`` discovers them in ``root/bench/suites``."""
    if root is None:
        return {}
    folder = root / "bench" / "suites"
    names = sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if not m.name.startswith("_"))
    out = {}
    for name in names:
        text = _summary(folder / f"{name}.py").removeprefix(f"Suite ``{name}``:").strip()
        out[name] = text.replace("``", "")
    return out


def add_parser(subparsers: Any) -> None:
    root = bench_root()
    known = suites(root)
    if root is not None and known:
        width = max(len(n) for n in known)
        listing = "\n".join(f"  {name.ljust(width)}  {text}" for name, text in known.items())
        epilog = f"suites (from {root / 'bench' / 'suites'}):\n{listing}"
    else:
        epilog = "suites: none found (run `mpdp bench` from a clone of the mpdp repository, which holds bench/)"
    parser = subparsers.add_parser(
        "bench", help="run a benchmark suite (ratios against in-run baselines)",
        description="Run a benchmark suite of the source tree's bench/ folder (python -m bench SUITE): timings as "
                    "ratios against baselines measured in the same run.",
        epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", metavar="SUITE", help="one of the suites listed below")
    parser.add_argument("--json", action="store_true", help="print one JSON object, for an error too")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    root = bench_root()
    if root is None:
        raise ParameterError(
            explain("bench folder", "not found", "a mpdp source checkout with bench/",
                    "run `mpdp bench` from the root of a clone of the mpdp repository")
        )
    known = suites(root)
    if args.suite not in known:
        raise ParameterError(explain("suite", args.suite, f"one of {list(known)}", "see `mpdp bench --help`"))
    command = [sys.executable, "-m", "bench", args.suite] + (["--json"] if args.json else []) + \
        (["--quick"] if args.quick else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)])
    progress: Progress = getattr(args, "progress", SILENT)
    progress.phase(f"bench {args.suite}: running `python -m bench {args.suite}` in a child process"
                   + (" (quick)" if args.quick else ""))
    # stdout through this process (its result is this command's), stderr straight to the terminal
    done = subprocess.run(command, env=env, check=False, stdout=subprocess.PIPE, text=True)  # noqa: S603
    sys.stdout.write(done.stdout)
    return done.returncode
