"""Per-party files keyed by an id column (``--data PARTY=FILE --id-column NAME``), aligned privately.

Shared by ``mpdp run`` (vertical algorithms) and ``mpdp align``. Every party's file is read
(:func:`mpdp.datasets.party_files.read_party_table`), the parties run the private set intersection of
:mod:`mpdp.protocols.alignment` as real parties exchanging messages in memory, and each keeps its rows of the
intersection in the agreed order. The id column is never a feature.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.cli.common import reporter
from mpdp.datasets.catalog import load_dataset
from mpdp.datasets.dataset import Dataset
from mpdp.datasets.party_files import PartyTable, joined_rows, parse_data_spec, read_party_table, write_table
from mpdp.errors import ParameterError, explain
from mpdp.progress import SILENT, Progress
from mpdp.protocols.alignment import Alignment, simulate_alignment
from mpdp.randomness import RandomSource
from mpdp.runtime import ProtocolRun

__all__ = ["AlignedData", "add_party_data_arguments", "align_tables", "load_aligned_dataset", "read_tables"]


def _data(text: str) -> tuple[str, Path]:
    try:
        return parse_data_spec(text)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_party_data_arguments(parser: argparse.ArgumentParser, *, required: bool = False,
                             id_column: bool = True) -> None:
    """``--data`` and the alignment's options; ``id_column=False`` where the dataset options already define
    ``--id-column`` (``mpdp run``: with ``--data`` it is the alignment's key, without it the CSV's identifier)."""
    group = parser.add_argument_group("party files keyed by an id column (private record alignment)")
    group.add_argument("--data", type=_data, action="append", default=[], metavar="PARTY=FILE.csv",
                       required=required,
                       help="one party's own CSV file (repeat per party, in protocol order; the first leads the "
                            "alignment); rows need not be aligned: they are matched by --id-column")
    if id_column:
        group.add_argument("--id-column", metavar="NAME", required=required,
                           help="the identifier column every party's file has (never used as a feature)")
    group.add_argument("--min-intersection", type=int, default=100, metavar="N",
                       help="fewest common records accepted (default 100); fewer is refused")
    group.add_argument("--case-sensitive-ids", action="store_true",
                       help="compare ids without case-folding (they are always NFKC-normalised and stripped)")


def read_tables(args: argparse.Namespace) -> list[PartyTable]:
    """Every ``--data`` file, read with ``--id-column``."""
    if not args.data or not args.id_column:
        raise ParameterError(explain("--data/--id-column", (args.data, args.id_column),
                                     "both: one --data PARTY=FILE per party and the --id-column they share",
                                     "write e.g. --data alice=a.csv --data bob=b.csv --id-column id"))
    names = [name for name, _ in args.data]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ParameterError(explain("--data parties", names, "two or more distinct party names",
                                     "give one --data PARTY=FILE per party"))
    return [read_party_table(name, path, id_column=args.id_column) for name, path in args.data]


def align_tables(tables: list[PartyTable], *, rng: RandomSource, min_intersection: int = 100,
                 case_sensitive: bool = False, progress: Progress = SILENT,
                 ) -> tuple[dict[str, Alignment], ProtocolRun[Any]]:
    """Run the alignment between the tables' parties (first table leads), each seeing only its own ids;
    ``progress`` shows the leader's steps."""
    return simulate_alignment({t.party: t.ids for t in tables}, min_intersection=min_intersection,
                              case_sensitive=case_sensitive, rng=rng, progress=progress)


def alignment_record(result: dict[str, Alignment], run: ProtocolRun[Any], min_intersection: int) -> dict[str, Any]:
    """The run report's alignment fields: ``aligned_rows``, ``rows_per_party`` and the protocol's traffic."""
    first = next(iter(result.values()))
    return {**first.as_json(), "alignment": {
        "protocol": "ECDH PSI over ristretto255 (semi-honest; reveals set sizes and the intersection size)",
        "leader": first.party, "min_intersection": min_intersection, "seconds": run.seconds,
        **run.communication()}}


@dataclass(frozen=True)
class AlignedData:
    """The aligned parties' columns as one dataset (row ``r`` is the same record at every party)."""

    data: Dataset
    groups: tuple[tuple[str, ...], ...]
    label_party: int
    record: dict[str, Any]


def load_aligned_dataset(args: argparse.Namespace, rng: RandomSource, data_rng: RandomSource, *,
                         progress: Progress = SILENT) -> AlignedData:
    """Read, align and join the ``--data`` files, then load them as ``--dataset`` CSVs are loaded
    (``--label``, ``--categorical``, ``--bounds``, ... apply); one column group per party."""
    if args.label is None:
        raise ParameterError(explain("--label", None, "the column to predict (in one party's file)",
                                     "pass --label COLUMN"))
    tables = read_tables(args)
    holders = [k for k, t in enumerate(tables) if args.label in t.columns]
    if len(holders) != 1:
        raise ParameterError(explain("--label", args.label, "a column of exactly one party's file",
                                     f"columns: {({t.party: list(t.columns) for t in tables})}"))
    result, run = align_tables(tables, rng=rng, min_intersection=args.min_intersection,
                               case_sensitive=args.case_sensitive_ids, progress=progress)
    header, rows = joined_rows(tables, {p: a.rows for p, a in result.items()})
    with tempfile.TemporaryDirectory(prefix="mpdp-aligned-") as folder:
        path = write_table(Path(folder) / ("+".join(t.party for t in tables) + ".csv"), header, rows)
        data = load_dataset(str(path), rng=data_rng, label=args.label, categorical=args.categorical,
                            numeric=args.numeric, bounds=args.bounds, categories=args.categories,
                            positive=args.positive, missing=args.missing, report=reporter(args))
    groups = tuple(tuple(c for c in t.columns if c != args.label) for t in tables)
    return AlignedData(data, groups, holders[0], alignment_record(result, run, args.min_intersection))
