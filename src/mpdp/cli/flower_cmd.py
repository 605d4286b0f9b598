"""``mpdp flower ALGORITHM``: run a horizontal algorithm on Flower with one SuperNode process per party.

The data, split, budget and ``--option`` flags are ``mpdp run``'s; the record printed is ``mpdp run``'s plus
``"engine": "flower"``, the model, each round's survivors and the bytes per client
(:func:`mpdp.flower.launcher.launch`, extra ``flower``).
"""

from __future__ import annotations

import argparse
from typing import Any

from mpdp.cli.common import add_dataset_arguments, add_output_arguments, print_json, progress_of
from mpdp.cli.run_cmd import build_config
from mpdp.learning.registry import get_algorithm

__all__ = ["add_parser", "handle"]


def _option(text: str) -> tuple[str, Any]:
    from mpdp.cli.run_cmd import _option as parse

    return parse(text)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "flower", help="run mpc-gradp, mpc-outp, ofpa or ofaa on Flower (SuperLink + one SuperNode per party)",
        description="Start a SuperLink and one SuperNode process per party on 127.0.0.1, run the algorithm's "
                    "Flower app and print mpdp run's record with \"engine\": \"flower\" (extra 'flower').")
    parser.add_argument("algorithm", help="mpc-gradp, mpc-outp, ofpa or ofaa")
    add_dataset_arguments(parser)
    group = parser.add_argument_group("parties and privacy (as mpdp run)")
    group.add_argument("--parties", type=int, default=None, help="data parties, one SuperNode each (default 3)")
    group.add_argument("--epsilon", type=float, default=1.0, help="privacy budget epsilon (default 1.0)")
    group.add_argument("--delta", type=float, default=1e-5, help="privacy parameter delta (default 1e-5)")
    group.add_argument("--test-fraction", type=float, default=0.2, help="held-out test share (default 0.2)")
    group.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                       help="algorithm-specific setting (repeatable), e.g. --option T=20")
    flower = parser.add_argument_group("Flower")
    flower.add_argument("--max-dropouts", type=int, default=0, help="clients that may miss a round (default 0)")
    flower.add_argument("--aggregators", type=int, default=2, help="aggregator SuperNodes (default 2)")
    flower.add_argument("--round-timeout", type=float, default=120.0,
                        help="seconds the hub waits for a round's replies; later ones are dropouts (default 120)")
    flower.add_argument("--insecure", action="store_true", help="plain HTTP instead of HTTPS with a demo CA")
    flower.add_argument("--workdir", help="keep data files, ledgers, logs and Flower state here")
    add_output_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from mpdp.flower.launcher import launch

    progress = progress_of(args)
    progress.phase(f"flower {args.algorithm}: loading the algorithm")
    algo = get_algorithm(args.algorithm)
    for name, default in (("partition", None), ("label_party", 0), ("fractions", None), ("anchor", None),
                          ("backend", None), ("data", None)):
        if not hasattr(args, name):  # mpdp run's flags that do not apply to a horizontal Flower run
            setattr(args, name, default)
    config = build_config(algo, args)
    progress.phase(f"{algo.name}: starting a SuperLink and {config.parties + args.aggregators} SuperNodes "
                   "(Flower), then running the rounds")
    record = launch(algo.name, config, seed=args.seed, tls=not args.insecure, max_dropouts=args.max_dropouts,
                    aggregators=args.aggregators, round_timeout=args.round_timeout, workdir=args.workdir)
    record["seed"] = args.seed
    if args.json:
        print_json(record)
    else:
        print(f"{record['algorithm']} on Flower: {record['metric']['name']} {record['metric']['value']:.4f} "
              f"(non-private {record['non_private']['value']:.4f}), epsilon spent {record['epsilon_spent']:.4g}, "
              f"{len(record['rounds'])} rounds, {record['bytes_per_client']:.0f} bytes per client, "
              f"{record['seconds']:.1f} s")
    return 0
