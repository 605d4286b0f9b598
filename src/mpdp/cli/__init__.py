"""The ``mpdp`` command line.

Each subcommand lives in its own module of this package with ``add_parser(subparsers)`` registering it and
setting ``handler`` on its parser. ``main`` returns the process exit code: 0 on success, 2 for usage or
input errors (an :class:`~mpdp.errors.MpdpError` is printed as one readable line, not a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mpdp import __version__
from mpdp.cli import (
    align_cmd,
    audit_cmd,
    bench_cmd,
    certs_cmd,
    datasets_cmd,
    demo_cmd,
    flower_cmd,
    launch_cmd,
    party_cmd,
    predict_cmd,
    reproduce_cmd,
    run_cmd,
    synthesize_cmd,
)
from mpdp.errors import MpdpError

__all__ = ["build_parser", "main"]

COMMANDS = (demo_cmd, bench_cmd, certs_cmd, party_cmd, run_cmd, launch_cmd, predict_cmd, synthesize_cmd,
            reproduce_cmd, datasets_cmd, align_cmd, audit_cmd, flower_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpdp",
        description="Privacy-preserving multiparty learning: secure computation with differential privacy.",
    )
    parser.add_argument("--version", action="version", version=f"mpdp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        code: int = handler(args)
    except MpdpError as exc:
        print(f"mpdp: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
