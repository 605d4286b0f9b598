"""``mpdp run <algorithm>``: train one registered algorithm on a dataset split between simulated parties.

The command loads the data (:func:`mpdp.datasets.load_dataset`), splits off a stratified test set, works out
the parties (a column partition for vertical algorithms, a party count for horizontal ones), calls
``spec.run(RunConfig)`` and prints the :class:`~mpdp.learning.spec.run.RunReport` (one JSON object with
``--json``). Randomness: ``--seed`` seeds everything (data generation, split, the algorithm's keys and
noise, each from its own child stream); without it every draw is fresh OS entropy. The draws that decide
which records train and test and which party holds which rows (synthetic data, the test split, the parties'
rows) come from the *split seed*: ``--split-seed``, else ``--seed``, else a number drawn from the run's fresh
source; it is always reported (``split_seed``), so ``--split-seed N`` reruns on the same split with fresh
noise (the non-private baseline, fitted on that split, then repeats too).

With a terminal on stderr the run prints its phases (loading, alignment, training, baseline) and the
algorithm's bars there (:mod:`mpdp.progress`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.cli.common import (
    add_dataset_arguments,
    add_output_arguments,
    interactive,
    load_from_args,
    print_json,
    progress_of,
    rng_from_args,
    show_warnings,
    table,
)
from mpdp.cli.party_data import AlignedData, add_party_data_arguments, load_aligned_dataset
from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import (
    HorizontalPartition,
    VerticalPartition,
    horizontal_by_anchors,
    horizontal_by_fractions,
    horizontal_equal,
    vertical_by_groups,
    vertical_by_sizes,
)
from mpdp.datasets.splits import train_test_split
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec import AlgorithmSpec, Settings
from mpdp.learning.spec.run import DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_PARTIES, PHASES, RunConfig, RunReport, timed
from mpdp.randomness import RandomSource
from mpdp.runtime.network import network_model

__all__ = ["add_parser", "add_run_arguments", "build_config", "build_run", "handle", "human", "list_text",
           "name_parties", "parse_options", "record_of",
           "split_source"]



def _option(text: str) -> tuple[str, Any]:
    key, eq, raw = text.partition("=")
    if not eq or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r} (write e.g. --option T=100)")
    return key.strip(), raw.strip()


def _fractions(text: str) -> tuple[float, ...]:
    try:
        weights = tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by ',', got {text!r}") from None
    if not weights or any(not (math.isfinite(w) and w > 0) for w in weights):
        raise argparse.ArgumentTypeError(f"expected positive weights, got {text!r} (write e.g. 40,30,10)")
    return weights


def parse_options(pairs: list[tuple[str, str]], spec: AlgorithmSpec) -> Settings:
    """``--option key=value`` pairs -> the algorithm's settings, checked by its spec (each key once)."""
    given: dict[str, str] = {}
    for key, raw in pairs:
        if key in given:
            raise ParameterError(explain(f"--option {key}", raw, "each key once", "drop the repeated key"))
        given[key] = raw
    return spec.settings_from(given)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run", help="train a registered algorithm on a dataset split between simulated parties",
        description="Train a registered algorithm with simulated parties and print its results "
                    "(privacy spent, metric, non-private baseline, communication).")
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mpdp run``, shared with ``mpdp launch`` (an option added here reaches both)."""
    parser.add_argument("algorithm", nargs="?", help="algorithm name (see --list)")
    parser.add_argument("--list", action="store_true", help="list the registered algorithms and exit")
    add_dataset_arguments(parser)
    parties = parser.add_argument_group("parties and privacy")
    parties.add_argument("--parties", type=int, default=None,
                         help="number of parties (default: 2 vertical, 3 horizontal, or as many as --partition "
                              "groups / --fractions weights)")
    parties.add_argument("--partition", metavar='"A,B;C,D"',
                         help="vertical: columns per party, ';' between parties (group names such as "
                              "demographic/financial allowed)")
    parties.add_argument("--label-party", type=int, default=0,
                         help="vertical: index of the party holding the label (with --data: the party whose "
                              "file holds --label)")
    rows = parties.add_mutually_exclusive_group()
    rows.add_argument("--fractions", type=_fractions, metavar="W1,W2,...",
                      help="horizontal: relative party sizes, e.g. 40,30,10 (default: equal)")
    rows.add_argument("--anchor", metavar="ATTRIBUTE",
                      help="horizontal: assign rows by distance to a random anchor value of this numeric "
                           "attribute (paper 004)")
    parties.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                         help=f"privacy budget epsilon (default {DEFAULT_EPSILON})")
    parties.add_argument("--delta", type=float, default=DEFAULT_DELTA,
                         help=f"privacy parameter delta (default {DEFAULT_DELTA:g}; pure-DP algorithms spend 0)")
    parties.add_argument("--backend", help="secure-computation backend, where the algorithm offers a choice")
    parties.add_argument("--test-fraction", type=float, default=0.2, help="held-out test share (default 0.2)")
    parties.add_argument("--split-seed", type=int, default=None, metavar="N",
                         help="seed of the data's random draws only (synthetic data, test split, parties' rows): "
                              "the same split as an earlier run that reported it, with fresh noise (default: "
                              "--seed, else a fresh number, reported as split_seed)")
    parties.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                         help="algorithm-specific setting (repeatable), e.g. --option T=100")
    add_party_data_arguments(parser, id_column=False)
    add_output_arguments(parser)
    parser.add_argument("--plot", metavar="OUT.png", help="plot the curves the algorithm reports")
    parser.add_argument("--save", metavar="DIR", help="write the released model (DIR/model.json) and this run's "
                                                      "JSON (DIR/run.json); see mpdp predict, mpdp synthesize")
    parser.add_argument("--network", type=network_model, default=None, metavar="lan|wan|RTT_ms,Mbps",
                        help="also report the wall time modelled for this network (compute + rounds x RTT + "
                             "bytes / bandwidth)")


def _check_privacy(epsilon: float, delta: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError(explain("--epsilon", epsilon, "a finite number > 0", "pass e.g. --epsilon 1.0"))
    if not 0 <= delta < 1:
        raise ParameterError(explain("--delta", delta, "a number in [0, 1)", "pass e.g. --delta 1e-5"))


def _check_task(algo: AlgorithmSpec, data: Dataset) -> None:
    if algo.task in ("classification", "regression") and data.task != algo.task:
        hint = ("a numeric --label (CSV) or adult:target=hours-per-week" if algo.task == "regression"
                else "a two-class --label (CSV) or adult")
        raise ParameterError(explain(f"dataset {data.name}", f"a {data.task} task", f"{algo.task} for {algo.name}",
                                     f"use {hint}"))


def _vertical_partition(data: Dataset, args: argparse.Namespace) -> VerticalPartition:
    if args.partition:
        part = vertical_by_groups(data, args.partition, label_party=args.label_party)
        if args.parties is not None and args.parties != part.parties:
            raise ParameterError(explain("--parties", args.parties, f"{part.parties} (the --partition groups)",
                                         "drop --parties or give one group per party"))
        return part
    parties = args.parties or DEFAULT_PARTIES["vertical"]
    units = set(data.attribute_names or data.feature_names)
    groups = list(data.groups.values())
    if len(groups) == parties and sorted(n for g in groups for n in g) == sorted(units):
        return vertical_by_groups(data, groups, label_party=args.label_party)
    return vertical_by_sizes(data, parties=parties, label_party=args.label_party)


def build_config(algo: AlgorithmSpec, args: argparse.Namespace) -> RunConfig:
    """Load, split and partition the data as ``args`` say, into the :class:`RunConfig` for ``algo``."""
    return build_run(algo, args)[0]


def _check_party_files(algo: AlgorithmSpec, args: argparse.Namespace) -> None:
    if algo.partitioning != "vertical":
        raise ParameterError(explain("--data", [n for n, _ in args.data], f"only for vertical algorithms "
                                     f"({algo.name} is {algo.partitioning})", "use --dataset for row-split data"))
    if args.partition:
        raise ParameterError(explain("--partition", args.partition, "no --partition with --data (each party's "
                                     "file holds its columns)", "drop --partition"))
    if args.parties is not None and args.parties != len(args.data):
        raise ParameterError(explain("--parties", args.parties, f"{len(args.data)} (one per --data file)",
                                     "drop --parties"))


def split_source(args: argparse.Namespace, rng: RandomSource) -> tuple[RandomSource, int]:
    """The source of the data's draws (synthetic data, test split, parties' rows) and the split seed it comes
    from: ``--split-seed``, else ``--seed`` (so a seeded run draws exactly what ``rng`` would), else a number
    drawn from ``rng``'s own child stream ``"split-seed"``."""
    seed = getattr(args, "split_seed", None)
    if seed is None:
        seed = args.seed
    if seed is None:
        seed = rng.spawn("split-seed").randbelow(1 << 32)
    if seed < 0:
        raise ParameterError(explain("--split-seed", seed, "an integer >= 0", "pass e.g. --split-seed 7"))
    return RandomSource.seeded(seed), int(seed)


def build_run(algo: AlgorithmSpec, args: argparse.Namespace) -> tuple[RunConfig, dict[str, Any]]:
    """The run's configuration and what the report adds: the split seed, the algorithm's summary and, with
    --data, the alignment's fields."""
    _check_privacy(args.epsilon, args.delta)
    if algo.backends and args.backend is not None and args.backend not in algo.backends:
        raise ParameterError(explain("--backend", args.backend, f"one of {list(algo.backends)} for {algo.name}",
                                     "pick one of those"))
    if not algo.backends and args.backend is not None:
        raise ParameterError(explain("--backend", args.backend, f"no --backend ({algo.name} has a fixed one)",
                                     "drop --backend"))
    if algo.partitioning != "vertical" and (args.partition or args.label_party):
        raise ParameterError(explain("--partition/--label-party", args.partition or args.label_party,
                                     f"only for vertical algorithms ({algo.name} is {algo.partitioning})",
                                     "drop them; use --parties, --fractions or --anchor for row splits"))
    if algo.partitioning == "vertical" and (args.fractions or args.anchor):
        raise ParameterError(explain("--fractions/--anchor", args.fractions or args.anchor,
                                     f"only for horizontal algorithms ({algo.name} is vertical)",
                                     "drop them; use --partition for column splits"))
    settings = parse_options(args.option, algo)
    progress = progress_of(args)
    rng = rng_from_args(args)
    data_rng, split_seed = split_source(args, rng)
    aligned: AlignedData | None = None
    phases: dict[str, float] = {}
    start = time.perf_counter()
    if args.data:
        _check_party_files(algo, args)
        progress.phase(f"{algo.name}: aligning the records of {', '.join(n for n, _ in args.data)} privately "
                       "(PSI)")
        with timed(phases, "align"):  # reading the files is part of it: each party reads its own
            aligned = load_aligned_dataset(args, rng.spawn("alignment"), data_rng.spawn("data"), progress=progress)
        data = aligned.data
    else:
        progress.phase(f"{algo.name}: loading {args.dataset}")
        data = load_from_args(args, data_rng.spawn("data"))
    _check_task(algo, data)
    train, test = train_test_split(data, args.test_fraction, rng=data_rng.spawn("split"))
    partition: tuple[tuple[str, ...], ...] | None = None
    row_partition: tuple[npt.NDArray[np.int64], ...] | None = None
    label_party = args.label_party
    if algo.partitioning == "vertical":
        part = (vertical_by_groups(train, aligned.groups, label_party=aligned.label_party) if aligned
                else _vertical_partition(train, args))
        parties, partition, label_party = part.parties, part.as_config(), part.label_party
    else:
        rows = _row_partition(train, args, data_rng.spawn("rows"), algo)
        parties, row_partition = len(rows.indices), rows.indices
    algo.check_parties(parties)
    progress.phase(f"{algo.name}: {train.n:,} training and {test.n:,} test rows (split seed {split_seed}), "
                   f"{parties} parties")
    config = RunConfig(train=train, test=test, parties=parties, epsilon=args.epsilon, delta=args.delta,
                       rng=rng.spawn("algorithm"), backend=args.backend, partition=partition,
                       label_party=label_party if algo.partitioning == "vertical" else 0,
                       settings=settings,
                       progress=progress.scoped(algo.name), row_partition=row_partition,
                       row_split="fractions" if args.fractions else "anchor" if args.anchor else "default")
    phases["load"] = time.perf_counter() - start - phases.get("align", 0.0)
    extra: dict[str, Any] = {"split_seed": split_seed, "summary": algo.summary, "phases": phases}
    extra.update(aligned.record if aligned else {})
    return algo.configure(config), extra


def _row_partition(train: Dataset, args: argparse.Namespace, rng: RandomSource,
                   algo: AlgorithmSpec) -> HorizontalPartition:
    """Rows per horizontal party: equal (default), by --fractions, or by --anchor; no party left empty."""
    if args.fractions:
        if args.parties is not None and args.parties != len(args.fractions):
            raise ParameterError(explain("--parties", args.parties, f"{len(args.fractions)} (one per --fractions "
                                         "weight)", "drop --parties or give one weight per party"))
        total = sum(args.fractions)
        rows = horizontal_by_fractions(train, [w / total for w in args.fractions], rng=rng)
    else:
        parties = args.parties or DEFAULT_PARTIES["horizontal"]
        algo.check_parties(parties)
        if not 1 <= parties <= train.n:
            raise ShapeMismatchError(explain("--parties", parties, f"1 to {train.n} (training rows of {train.name})",
                                             "use fewer parties or more data"))
        rows = (horizontal_by_anchors(train, args.anchor, parties, rng=rng) if args.anchor
                else horizontal_equal(train, parties, rng=rng))
    empty = [k for k, size in enumerate(rows.sizes) if size == 0]
    if empty:
        raise ShapeMismatchError(explain("party rows", f"parties {empty[:5]} received no rows",
                                         "at least one row per party", "use fewer parties or another --seed"))
    return rows


def _list(as_json: bool) -> int:
    known = algorithms()
    if as_json:
        print_json({"algorithms": [spec.as_json() for spec in known.values()]})
        return 0
    if not known:
        print("no algorithms are registered yet")
        return 0
    print(list_text(known.values()))
    return 0


def list_text(specs: Iterable[AlgorithmSpec]) -> str:
    """``mpdp run --list``: one row per algorithm, then each options block once, with the algorithms it serves."""
    specs = list(specs)
    rows = [(a.name, a.paper, a.partitioning, a.task, ",".join(a.backends) or "-", ",".join(a.engines()[1:]) or "-",
             a.summary) for a in specs]
    lines = [table(rows, ("algorithm", "paper", "parties", "task", "backends", "also runs on", "summary")), ""]
    blocks: dict[type[Settings], list[str]] = {}  # each settings class with its own options, once
    for a in specs:
        for cls in reversed(a.settings.__mro__):
            if isinstance(cls, type) and issubclass(cls, Settings) and cls is not Settings and cls.own_options():
                blocks.setdefault(cls, []).append(a.name)
    for settings, names in blocks.items():
        lines.append(f"--option for {', '.join(names)}:")
        lines.extend(f"  {o.describe()}" for o in settings.own_options())
    return "\n".join(lines)


def record_of(report: Any, config: RunConfig, args: argparse.Namespace,
              extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object ``mpdp run`` prints for ``report`` (``mpdp launch`` adds its deployment to it); ``extra``:
    what :func:`build_run` adds (the split seed, the summary, the alignment's fields with ``--data``).

    With ``--data`` the parties carry the user's names: ``per_party_epsilon``'s ``party<k>`` keys become the
    names of ``rows_per_party`` (the k-th ``--data`` file's party), so one party has one name in the record."""
    if not isinstance(report, RunReport):
        raise ParameterError(explain("algorithm result", type(report).__name__, "a RunReport",
                                     "fix the algorithm's run function"))
    record = report.as_json()
    record.setdefault("backend", config.backend)
    record.setdefault("seed", args.seed)
    record.setdefault("options", dict(config.options))
    record.setdefault("partition", [list(g) for g in config.partition] if config.partition else None)
    record.setdefault("party_rows", [int(i.size) for i in config.row_partition] if config.row_partition else None)
    record.setdefault("train_rows", config.train.n)
    record.setdefault("test_rows", config.test.n)
    record.setdefault("dropped_rows", config.train.dropped_rows)  # source rows dropped for missing values
    record.setdefault("majority_class", _majority(config) if record["metric"]["name"] == "accuracy" else None)
    extra = dict(extra or {})
    phases = {**extra.pop("phases", {}), **record["phases"]}  # the data's phases (build_run), then the run's
    record.update(extra)
    record["phases"] = {name: phases[name] for name in PHASES if name in phases}
    record["seconds"] = sum(record["phases"].values())  # the run's wall time, its phases added up
    return name_parties(record)


def _majority(config: RunConfig) -> float:
    """The test accuracy of always predicting the training split's most frequent label: the bar a classifier's
    released model must clear to have learnt anything (on Adult about 0.75)."""
    labels, counts = np.unique(config.train.y, return_counts=True)
    return float(np.mean(config.test.y == labels[np.argmax(counts)])) if config.test.n else float("nan")


def name_parties(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``per_party_epsilon``'s ``party<k>`` keys renamed to the names of ``rows_per_party`` (the
    k-th ``--data`` file's party), when the run had named party files: one party, one name in the record."""
    names = list(record.get("rows_per_party") or ())
    per_party = record.get("per_party_epsilon")
    if names and isinstance(per_party, dict) and sorted(per_party) == sorted(f"party{k}" for k in range(len(names))):
        record["per_party_epsilon"] = {names[k]: per_party[f"party{k}"] for k in range(len(names))}
    return record


def _per_party(record: Mapping[str, Any]) -> list[str]:
    """The text lines of the per-party guarantees: by party, or by party size (``n_j=<rows>`` keys, paper
    003, where every party of a size gets the same epsilon), and what they mean beside the total."""
    per_party: Mapping[str, float] = record.get("per_party_epsilon") or {}
    if not per_party:
        return []
    if all(k.startswith("n_j=") for k in per_party):
        text = "; ".join(f"{v:g} for each party of {int(k[4:]):,} rows" for k, v in per_party.items())
        lines = [f"  per-party epsilon: {text}"]
    else:
        lines = ["  per-party epsilon: " + ", ".join(f"{k} {v:g}" for k, v in per_party.items())]
    note = record.get("per_party_note")  # what the per-party figure means, where the algorithm says
    if max(per_party.values()) > 1.01 * record["epsilon_spent"]:  # one line: why a party's figure exceeds the total
        lines.append(f"    (the total, epsilon {record['epsilon_spent']:g}, is towards whoever sees only the released "
                     "result; a party's figure is towards that party, which sees more during the run"
                     + (f": {note})" if note else ")"))
    elif note:
        lines.append(f"    ({note})")
    return lines


def human(record: Mapping[str, Any]) -> str:
    def metric(m: Mapping[str, Any] | None) -> str:
        return "-" if m is None else f"{m['name']} = {m['value']:.4f}" if isinstance(m["value"], float) \
            else f"{m['name']} = {m['value']}"

    comm = record["communication"]
    title = f"{record['algorithm']} on {record['dataset']} with {record['parties']} parties"
    summary = record.get("summary")
    lines = [f"{title}: {summary}" if summary else title]
    split = record.get("split_seed")
    data = f"  data:    {record['train_rows']:,} training rows, {record['test_rows']:,} test rows"
    if split is not None:
        data += (f"; random split, seed {split} (--split-seed {split} repeats it: the non-private baseline is "
                 "fitted on this split and changes with it)")
    lines += [
        data,
        f"  privacy: epsilon {record['epsilon_spent']:g} of {record['epsilon']:g}, "
        f"delta {record['delta_spent']:g} of {record['delta']:g}",
        f"  result:  {metric(record['metric'])}   (non-private baseline: {metric(record['non_private'])}"
        + (f"; majority class {record['majority_class']:.4f})" if record.get("majority_class") is not None else ")"),
        f"  traffic: {comm.get('bytes', 0):,} bytes, {comm.get('messages', 0):,} messages, "
        f"{comm.get('rounds', 0):,} rounds",
        f"  time:    {record['seconds']:.2f} s ("
        + ", ".join(f"{k} {v:.2f}" for k, v in record.get("phases", {}).items()) + ")",
    ]
    if record.get("aligned_rows") is not None:
        sizes = ", ".join(f"{k} {v:,}" for k, v in record["rows_per_party"].items())
        lines.append(f"  aligned: {record['aligned_rows']:,} common records privately matched (rows per party: "
                     f"{sizes})")
    net = record.get("network")
    if net:
        lines.append(f"  network {net['model']}: modelled {net['modelled_seconds']:.2f} s (compute "
                     f"{net['compute_seconds']:.2f} + latency {net['latency_seconds']:.2f} + transfer "
                     f"{net['transfer_seconds']:.2f})")
    lines += _per_party(record)
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.json)
    if not args.algorithm:
        raise ParameterError(explain("algorithm", None, "an algorithm name", "run `mpdp run --list` to see them"))
    progress = progress_of(args)
    progress.phase(f"run {args.algorithm}: loading the algorithm")
    algo = get_algorithm(args.algorithm)
    if args.save:  # refused before any budget is spent
        from mpdp.cli.release_io import check_savable

        check_savable(algo.name)
    if args.plot:
        from mpdp.cli.plotting import check_plot_target

        check_plot_target(args.plot)
    with show_warnings():
        config, extra = build_run(algo, args)
        progress.phase(f"{algo.name}: training (paper {algo.paper}, {config.parties} {algo.partitioning} parties)")
        report = algo.run(config)
    record = record_of(report, config, args, extra)
    if args.network is not None:
        record["network"] = args.network.model(record["phases"].get("train", 0.0), record["communication"])
    if args.save:
        from mpdp.cli.release_io import save_run

        record["saved"] = save_run(args.save, report, config, record, args)
        if interactive(args):
            print(f"mpdp: released model written to {record['saved']['model']}", file=sys.stderr)
    if args.plot:  # before the record is printed: --json says where the plot went (null: no curve to plot)
        record["plot"] = None
        if not report.curves:
            print(f"mpdp: note: {algo.name} reports no curve; nothing plotted", file=sys.stderr)
        else:
            from mpdp.cli.plotting import plot_curves

            progress.phase(f"{algo.name}: plotting to {args.plot}")
            record["plot"] = str(plot_curves(report.curves, args.plot, title=f"{algo.name} on {report.dataset}"))
    if args.json:
        print_json(record)
    else:
        print(human(record))
        if record.get("plot") and interactive(args):
            print(f"mpdp: plot written to {record['plot']}", file=sys.stderr)
    return 0

