"""Pieces the ``mpdp`` subcommands share: dataset arguments, seeds, messages, JSON and tables."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from mpdp.datasets.catalog import DATASETS, load_dataset
from mpdp.datasets.csvfile import parse_bounds_spec, parse_categories_spec
from mpdp.datasets.dataset import Dataset
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = [
    "add_dataset_arguments",
    "add_output_arguments",
    "error_record",
    "jsonable",
    "load_from_args",
    "print_json",
    "progress_of",
    "reporter",
    "rng_from_args",
    "show_warnings",
    "table",
]


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_dataset_arguments(parser: argparse.ArgumentParser, *, default: str | None = "adult") -> None:
    group = parser.add_argument_group("data")
    names = ", ".join(sorted(DATASETS))
    group.add_argument("--dataset", default=default, metavar="NAME|PATH.csv",
                       help=f"{names} (NAME:key=value,... for parameters) or a CSV file (default: {default})")
    group.add_argument("--label", help="CSV: the column to predict")
    group.add_argument("--categorical", type=_names, default=[], metavar="A,B",
                       help="CSV: columns to treat as categorical (default: inferred)")
    group.add_argument("--numeric", type=_names, default=[], metavar="A,B",
                       help="CSV: columns to treat as numeric; a cell that is not a number is refused, with its line "
                            "(default: inferred)")
    group.add_argument("--bounds", type=parse_bounds_spec, default=None, metavar="A=LO:HI,...",
                       help="CSV: public bounds of numeric columns (default: inferred, with a privacy warning)")
    group.add_argument("--categories", type=parse_categories_spec, default=None, metavar="A=x|y,...",
                       help="CSV: public category lists (default: inferred, with a privacy warning)")
    group.add_argument("--positive", help="CSV: the label value that counts as class 1")
    # The record-identifier and missing-value options of the CSV loader (mpdp.datasets.csvcolumns): kept here,
    # in one place, for every command that reads a dataset.
    group.add_argument("--id-column", metavar="NAME",
                       help="CSV: the column that identifies records, never a feature (default: a column unique "
                            "per row is taken for one, with a warning)")
    group.add_argument("--missing", choices=("drop", "error"), default="drop",
                       help="CSV: rows with a missing value are dropped and counted (drop, default) or refused "
                            "(error)")
    group.add_argument("--adult-path", metavar="DIR", help="folder holding adult.data and adult.test")
    group.add_argument("--cache-dir", metavar="DIR", help="dataset cache (default: $MPDP_DATA_DIR or ~/.cache/mpdp)")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout, for an error too (progress, if a terminal shows "
                             "it, stays on stderr)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars, phase lines or status messages")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for a reproducible run (experiments only: anyone with the seed knows the noise)")


def rng_from_args(args: argparse.Namespace) -> RandomSource:
    return RandomSource.seeded(args.seed) if args.seed is not None else RandomSource.fresh()


def interactive(args: argparse.Namespace) -> bool:
    """Status lines (where a file was written, what was dropped): on unless ``--quiet`` or ``--json``."""
    return not (getattr(args, "quiet", False) or getattr(args, "json", False))


def progress_of(args: argparse.Namespace) -> Progress:
    """The command's progress reporter (:func:`mpdp.cli.main` builds it: phase lines and bars on stderr when
    stderr is a terminal and not ``--quiet``), or a silent one for a namespace built elsewhere."""
    progress = getattr(args, "progress", None)
    return progress if isinstance(progress, Progress) else SILENT


def reporter(args: argparse.Namespace) -> Callable[[str], None] | None:
    if not interactive(args):
        return None
    return lambda message: print(f"mpdp: {message}", file=sys.stderr)


def load_from_args(args: argparse.Namespace, rng: RandomSource) -> Dataset:
    return load_dataset(
        args.dataset, rng=rng, label=args.label, categorical=args.categorical, numeric=args.numeric,
        bounds=args.bounds, categories=args.categories, positive=args.positive, id_column=args.id_column,
        missing=args.missing, adult_path=args.adult_path,
        cache_dir=args.cache_dir, report=reporter(args),
    )


@contextmanager
def show_warnings() -> Iterator[None]:
    """Print warnings raised inside (e.g. PrivacyLeakWarning) as one readable stderr line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            seen = set()
            for w in caught:
                line = f"mpdp: warning: {w.category.__name__}: {w.message}"
                if line not in seen:
                    seen.add(line)
                    print(line, file=sys.stderr)


def jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars/arrays converted, non-finite floats as null (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def print_json(record: Any) -> None:
    print(json.dumps(jsonable(record), allow_nan=False))


#: the message :func:`mpdp.errors.explain` words: "<field>: received <value>, expected <what>. Fix: <how>"
_EXPLAINED = re.compile(r"(?P<field>.*?): received (?P<received>.*?), expected (?P<expected>.*?)\. Fix: (?P<fix>.*)",
                        re.DOTALL)


def error_record(exc: BaseException) -> dict[str, Any]:
    """The JSON object a command prints for ``exc`` under ``--json``: ``{"error": {"type", "message", ...}}``
    with ``field``, ``expected`` and ``fix`` when the message was worded by :func:`mpdp.errors.explain`, the
    exception's notes under ``notes``, and for a usage error the command's ``--help`` as the fix."""
    message = str(exc)
    error: dict[str, Any] = {"type": type(exc).__name__, "message": message}
    found = _EXPLAINED.search(message)
    if found:
        error.update(field=found["field"], expected=found["expected"], fix=found["fix"])
    elif type(exc).__name__ == "UsageError":
        error["fix"] = f"see `{getattr(exc, 'prog', 'mpdp')} --help`"
    elif isinstance(exc, KeyboardInterrupt):
        error["message"] = "interrupted"
    notes = getattr(exc, "__notes__", None)
    if notes:
        error["notes"] = [str(n) for n in notes]
    return {"error": error}


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)
