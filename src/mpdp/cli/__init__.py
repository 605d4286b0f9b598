"""The ``mpdp`` command line.

Each subcommand lives in its own module of this package with ``add_parser(subparsers)`` registering it and
setting ``handler`` on its parser. ``main`` returns the process exit code: 0 on success, 2 for usage or
input errors. It reports every error in one place, for every command: an :class:`~mpdp.errors.MpdpError` or a
usage error as one readable line on stderr (``mpdp: error: Type: message``, not a traceback), or, when the
command line has ``--json``, as the one JSON object on stdout (:func:`mpdp.cli.common.error_record`):
``{"error": {"type", "message", "field", "fix"}}`` (``field`` and ``fix`` when the message names them).
Under ``--json`` an unexpected exception is reported the same way (its traceback on stderr) with exit code 1,
so stdout always holds exactly one JSON object.

``main`` also builds the command's :class:`~mpdp.progress.Progress` (``args.progress``): phase lines and bars
on stderr when stderr is a terminal and ``--quiet`` is not given, silent otherwise.

A command's module is imported only when that command runs (``mpdp --help`` imports them all): a deployed
party (``mpdp party``) then starts without importing, say, the audit's statistics or every paper's estimators.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from mpdp import __version__
from mpdp.errors import MpdpError
from mpdp.progress import Progress

__all__ = ["COMMANDS", "UsageError", "build_parser", "main"]

#: command name -> the module that registers and runs it, in the order ``mpdp --help`` lists them
COMMANDS: dict[str, str] = {
    name: f"mpdp.cli.{name}_cmd"
    for name in ("demo", "bench", "certs", "party", "run", "launch", "predict", "synthesize", "reproduce",
                 "datasets", "align", "audit")
}


class UsageError(SystemExit):
    """A command line argparse refuses (unknown option, missing argument): exit status 2, as argparse's own.

    A ``SystemExit``, so a caller of ``build_parser().parse_args`` sees argparse's behaviour; :func:`main`
    catches it to report it like every other error (under ``--json``, as the JSON error object)."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(2)
        self.message = message
        self.prog = prog

    def __str__(self) -> str:
        return self.message


class _Parser(argparse.ArgumentParser):
    """argparse's parser (and, through ``add_subparsers``, every subcommand's): a usage error is printed as
    argparse prints it (usage and message on stderr) and raised as :class:`UsageError`."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise UsageError(message, self.prog)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (``command`` given) of that command only, importing only its module."""
    parser = _Parser(
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


def _wants_json(words: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (before a ``--`` that ends the options)."""
    options = words[: words.index("--")] if "--" in words else words
    return "--json" in options


def _report(exc: BaseException, as_json: bool) -> None:
    from mpdp.cli.common import error_record, print_json

    if as_json:
        print_json(error_record(exc))
    else:
        print(f"mpdp: error: {type(exc).__name__}: {exc}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(words)
    command = _command_of(words)
    try:
        parser = build_parser(command)
        args = parser.parse_args(words)
    except UsageError as exc:  # already printed on stderr, as argparse prints it
        if command is not None and exc.prog == parser.prog:  # the extra words after a command are its own
            exc.prog = f"{parser.prog} {command}"
        if as_json:
            _report(exc, as_json)
        return 2
    except MpdpError as exc:  # a command's options that cannot be built (e.g. a registry that fails to load)
        _report(exc, as_json)
        return 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    args.progress = Progress.for_terminal(quiet=bool(getattr(args, "quiet", False)))
    as_json = bool(getattr(args, "json", as_json))
    try:
        code: int = handler(args)
    except MpdpError as exc:
        _report(exc, as_json)
        return 2
    except Exception as exc:
        if not as_json:
            raise
        traceback.print_exc(file=sys.stderr)  # a bug: its traceback for the report, stdout still one object
        _report(exc, as_json)
        return 1
    except KeyboardInterrupt as exc:
        if not as_json:
            raise
        _report(exc, as_json)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
