"""``mpdp reproduce <id>``: rerun a paper's table or figure and print the paper's numbers beside ours.

Ids are the paper file's prefix and the table or figure (``000-table3``, ``001-fig2``); ``--list`` shows the
registered ones. ``--quick`` asks the reproduction for small sizes (seconds, for CI and notebooks);
``--repetitions`` overrides the paper's count; ``--folds N`` runs the first N folds of its cross-validation.
``--json`` prints the
:class:`~mpdp.learning.registry.ReproTable` with rows ``{setting, metric, paper, ours {mean, std,
repetitions}}``, and ``plot``: where ``--plot`` wrote the figure (drawn as the reproduction's
:class:`~mpdp.learning.registry.ReproFigure` says, :mod:`mpdp.cli.plotting`), or null.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mpdp.cli.common import add_output_arguments, interactive, print_json, rng_from_args, show_warnings, table
from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import ReproOptions, ReproTable, get_reproduction, reproductions

__all__ = ["add_parser", "format_table", "handle"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="rerun a paper's table or figure, printing the paper's numbers beside ours",
        description="Rerun a paper's table or figure; ids are the paper prefix and the table, e.g. 000-table3.")
    parser.add_argument("table", nargs="?", metavar="ID", help="reproduction id (see --list)")
    parser.add_argument("--list", action="store_true", help="list the registered reproductions and exit")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run in seconds")
    parser.add_argument("--repetitions", "--runs", type=int, default=None, help="repetitions (default: the paper's)")
    parser.add_argument("--folds", type=int, default=None,
                        help="run only the first N folds of the paper's cross-validation (e.g. 2 of 10)")
    add_output_arguments(parser)
    parser.add_argument("--plot", metavar="OUT.png", help="plot ours against the paper's numbers")
    parser.set_defaults(handler=handle)


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}"


def format_table(result: ReproTable) -> str:
    settings = sorted({k for r in result.rows for k in r.setting}, key=lambda k: next(
        i for i, r in enumerate(result.rows) if k in r.setting))
    rows = [(*[str(r.setting.get(k, "")) for k in settings], r.metric, _cell(r.paper),
             f"{_cell(r.ours_mean)} ± {_cell(r.ours_std)}", str(r.repetitions)) for r in result.rows]
    lines = [f"{result.id}: {result.title}", "",
             table(rows, (*settings, "metric", "paper", "ours (mean ± std)", "reps"))]
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"({result.seconds:.1f} s)")
    return "\n".join(lines)


def _list(as_json: bool) -> int:
    known = reproductions()
    if as_json:
        print_json({"reproductions": [{"id": r.id, "title": r.title} for r in known.values()]})
    elif not known:
        print("no reproductions are registered yet")
    else:
        print(table([(r.id, r.title) for r in known.values()], ("id", "title")))
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.json)
    if not args.table:
        raise ParameterError(explain("reproduction id", None, "an id such as 000-table3",
                                     "run `mpdp reproduce --list` to see them"))
    for name in ("repetitions", "folds"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ParameterError(explain(f"--{name}", value, ">= 1", f"pass --{name} 1 or more"))
    repro = get_reproduction(args.table)
    if args.plot:
        from mpdp.cli.plotting import check_plot_target

        check_plot_target(args.plot)
    options = ReproOptions(rng=rng_from_args(args), repetitions=args.repetitions, quick=args.quick,
                           progress=interactive(args), folds=args.folds)
    start = time.perf_counter()
    with show_warnings():
        result = repro.run(options)
    if not isinstance(result, ReproTable):
        raise ParameterError(explain(f"{repro.id} result", type(result).__name__, "a ReproTable",
                                     "fix the reproduction's run function"))
    if not result.seconds:
        result.seconds = time.perf_counter() - start
    plot = None
    if args.plot:
        from mpdp.cli.plotting import plot_table

        plot = str(plot_table(result, args.plot, repro.figure))
    if args.json:
        record = result.as_json()
        record.update(quick=args.quick, seed=args.seed, plot=plot)
        print_json(record)
    else:
        print(format_table(result))
        if plot is not None and interactive(args):
            print(f"mpdp: plot written to {plot}", file=sys.stderr)
    return 0
