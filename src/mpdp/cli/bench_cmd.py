"""``mpdp bench <suite>``: run a benchmark suite from the source tree's ``bench/`` folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mpdp.errors import ParameterError, explain


def _bench_root() -> Path | None:
    here = Path(__file__).resolve()
    for candidate in (Path.cwd(), here.parents[3]):
        if (candidate / "bench" / "__main__.py").is_file():
            return candidate
    return None


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench", help="run a benchmark suite (ratios against in-run baselines)")
    parser.add_argument("suite", help="suite name, e.g. runtime, mpc, he, dp, protocols")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    root = _bench_root()
    if root is None:
        raise ParameterError(
            explain("bench folder", "not found", "a mpdp source checkout with bench/",
                    "run `mpdp bench` from the root of a clone of the mpdp repository")
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from bench.__main__ import main as bench_main

    argv = [args.suite] + (["--json"] if args.json else []) + (["--quick"] if args.quick else [])
    code: int = bench_main(argv)
    return code
