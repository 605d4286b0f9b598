"""``python -m bench <suite> [--json] [--quick]``: run a benchmark suite."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from bench.harness import print_table, to_json

SUITES_DIR = Path(__file__).parent / "suites"


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(SUITES_DIR)]) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("suite", help=f"one of: {', '.join(available())}")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args(argv)
    if args.suite not in available():
        print(f"unknown suite {args.suite!r}; expected one of {available()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.suites.{args.suite}")
    results = module.run(quick=args.quick)
    if args.json:
        print(to_json(args.suite, results))
    else:
        print_table(args.suite, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
