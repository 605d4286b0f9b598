"""The ``mpdp`` command line.

Each subcommand lives in its own module of this package with ``add_parser(subparsers)`` registering it and
setting ``handler`` on its parser. ``main`` returns the process exit code: 0 on success, 2 for usage or
input errors (an :class:`~mpdp.errors.MpdpError` is printed as one readable line, not a traceback).

A command's module is imported only when that command runs (``mpdp --help`` imports them all): a deployed
party (``mpdp party``) then starts without importing, say, the audit's statistics or every paper's estimators.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mpdp import __version__
from mpdp.errors import MpdpError

__all__ = ["COMMANDS", "build_parser", "main"]

#: command name -> the module that registers and runs it, in the order ``mpdp --help`` lists them
COMMANDS: dict[str, str] = {
    name: f"mpdp.cli.{name}_cmd"
    for name in ("demo", "bench", "certs", "party", "run", "launch", "predict", "synthesize", "reproduce",
                 "datasets", "align", "audit")
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (``command`` given) of that command only, importing only its module."""
    parser = argparse.ArgumentParser(
        prog="mpdp",
        description="Privacy-preserving multiparty learning: secure computation with differential privacy.",
    )
    parser.add_argument("--version", action="version", version=f"mpdp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module).add_parser(subparsers)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, if its first word is one (options before it mean: build every parser)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words)
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
