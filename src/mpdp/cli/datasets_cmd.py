"""``mpdp datasets list|fetch|show``: what data is available, download it ahead of time, inspect columns."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from mpdp.cli.common import (
    add_dataset_arguments,
    add_output_arguments,
    load_from_args,
    print_json,
    reporter,
    rng_from_args,
    show_warnings,
    table,
)
from mpdp.datasets.adult import ADULT_SHA256, fetch_adult
from mpdp.datasets.catalog import DATASETS
from mpdp.datasets.fetch import default_cache_dir, sha256_file
from mpdp.errors import ParameterError, explain

__all__ = ["add_parser"]

FETCHABLE = ("adult",)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("datasets", help="list, fetch or inspect datasets")
    sub = parser.add_subparsers(dest="datasets_command", metavar="ACTION")

    listing = sub.add_parser("list", help="the built-in datasets and their parameters")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    listing.set_defaults(handler=handle_list)

    fetch = sub.add_parser("fetch", help="download a dataset into the cache (verified by sha256)")
    fetch.add_argument("name", choices=FETCHABLE)
    fetch.add_argument("--cache-dir", metavar="DIR", help="cache folder (default: $MPDP_DATA_DIR or ~/.cache/mpdp)")
    fetch.add_argument("--refresh", action="store_true", help="delete the cached files first and fetch again")
    fetch.add_argument("--timeout", type=float, default=10.0, help="network timeout per request in seconds")
    fetch.add_argument("--json", action="store_true", help="print one JSON object")
    fetch.add_argument("--quiet", action="store_true", help="no status messages")
    fetch.set_defaults(handler=handle_fetch)

    show = sub.add_parser("show", help="rows, columns, types and groups of a dataset (names for --partition)")
    add_dataset_arguments(show)
    add_output_arguments(show)
    show.set_defaults(handler=handle_show)
    parser.set_defaults(handler=lambda _args: parser.print_help() or 0)


def handle_list(args: argparse.Namespace) -> int:
    if args.json:
        print_json({"datasets": [{"name": e.name, "summary": e.summary, "params": dict(e.params)}
                                 for e in DATASETS.values()],
                    "csv": "any path ending in .csv, with --label COLUMN"})
        return 0
    rows = [(e.name, ",".join(f"{k}={v}" for k, v in e.params.items()), e.summary) for e in DATASETS.values()]
    rows.append(("PATH.csv", "--label COL [--categorical A,B]", "your own table"))
    print(table(rows, ("dataset", "parameters (NAME:key=value)", "summary")))
    return 0


def handle_fetch(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise ParameterError(explain("--timeout", args.timeout, "> 0 seconds", "pass e.g. --timeout 10"))
    cache = default_cache_dir(args.cache_dir) / args.name
    if args.refresh:
        for name in ADULT_SHA256:
            (cache / name).unlink(missing_ok=True)
    files = fetch_adult(cache_dir=args.cache_dir, timeout=args.timeout, report=reporter(args))
    record = {"dataset": args.name, "cache": str(cache),
              "files": {name: {"path": str(path), "sha256": sha256_file(Path(path)), "verified": True}
                        for name, path in files.items()}}
    if args.json:
        print_json(record)
    else:
        for name, info in record["files"].items():
            print(f"{name}: {info['path']}  sha256 {info['sha256']} (verified)")
    return 0


def handle_show(args: argparse.Namespace) -> int:
    with show_warnings():
        data = load_from_args(args, rng_from_args(args))
    attrs = []
    for attr, cols in zip(data.attributes, data.encoded_columns, strict=True):
        domain = (f"[{attr.bounds[0]:g}, {attr.bounds[1]:g}]" if attr.bounds
                  else f"{len(attr.categories or ())} categories")
        group = next((g for g, members in data.groups.items() if attr.name in members), "")
        attrs.append({"name": attr.name, "kind": attr.kind, "domain": domain, "columns": len(cols), "group": group})
    record = {"name": data.name, "rows": data.n, "dropped_rows": data.dropped_rows, "features": data.d,
              "task": data.task, "label": data.label_name,
              "label_mean": float(np.mean(data.y)), "attributes": attrs, "groups": {k: list(v) for k, v in
                                                                                   data.groups.items()}}
    if args.json:
        print_json(record)
        return 0
    dropped = f" ({data.dropped_rows} dropped for missing values)" if data.dropped_rows else ""
    print(f"{data.name}: {data.n} rows{dropped}, {data.d} encoded features, {data.task} of {data.label_name!r} "
          f"(mean label {record['label_mean']:.3f})")
    print(table([(a["name"], a["kind"], a["domain"], a["columns"], a["group"]) for a in attrs],
                ("attribute", "kind", "domain", "columns", "group")))
    return 0
