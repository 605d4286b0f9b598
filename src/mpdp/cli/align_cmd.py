"""``mpdp align``: privately match the rows of per-party CSV files by an id column; each party writes its own.

Every ``--data PARTY=FILE`` is one party's file. The parties run the private set intersection of
:mod:`mpdp.protocols.alignment` (as real parties exchanging messages, here all in this process) and each
writes ``OUT/PARTY.csv``: its own rows of the common records, all its columns, id included, in the one order
every party agreed on, so row ``r`` is the same record in every output file. The JSON reports
``aligned_rows`` (the intersection size, which the protocol reveals to every party) and ``rows_per_party``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mpdp.cli.common import add_output_arguments, print_json, progress_of, rng_from_args, show_warnings
from mpdp.cli.party_data import add_party_data_arguments, align_tables, alignment_record, read_tables
from mpdp.datasets.party_files import write_table

__all__ = ["add_parser", "handle"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "align", help="privately match per-party CSV files by an id column; each party writes its aligned file",
        description="Private record alignment (ECDH PSI): each party learns which of its rows are common to "
                    "all parties, in one agreed order, and nothing about the others' other ids.")
    add_party_data_arguments(parser, required=True)
    parser.add_argument("--out", default="aligned", metavar="DIR",
                        help="folder for the aligned files, one PARTY.csv per party (default: ./aligned)")
    add_output_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    progress = progress_of(args)
    progress.phase("align: reading " + ", ".join(f"{party}'s {path}" for party, path in args.data))
    tables = read_tables(args)
    with show_warnings():
        result, run = align_tables(tables, rng=rng_from_args(args).spawn("alignment"),
                                   min_intersection=args.min_intersection, case_sensitive=args.case_sensitive_ids,
                                   progress=progress)
    progress.phase(f"align: writing each party's aligned file to {args.out}")
    files = {}
    for table in tables:
        rows = result[table.party].rows.tolist()
        header = [table.id_column, *table.columns]
        files[table.party] = str(write_table(Path(args.out) / f"{table.party}.csv", header,
                                             [[table.ids[i], *table.cells[i]] for i in rows]))
    record = {**alignment_record(result, run, args.min_intersection), "files": files, "seed": args.seed}
    if args.json:
        print_json(record)
    else:
        print(f"{record['aligned_rows']:,} common records; rows per party: "
              + ", ".join(f"{p} {n:,}" for p, n in record["rows_per_party"].items()))
        for party, path in files.items():
            print(f"  {party}: {path}")
    return 0
