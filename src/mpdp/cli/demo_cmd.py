"""``mpdp demo``: a 3-party secure sum over the in-memory transport, with traffic counts."""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from mpdp.errors import ParameterError, explain
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run a 3-party secure sum and print what crossed the wire")
    parser.add_argument("--parties", type=int, default=3, help="number of parties (default 3)")
    parser.add_argument("--length", type=int, default=1000, help="vector length per party")
    parser.add_argument("--seed", type=int, default=None, help="seed for a reproducible run (tests only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=handle)


#: the demo's bounds: a sum over one party would reveal its input; the vectors stay small enough to print counts
PARTIES = (2, 100)
LENGTH = (1, 10_000_000)


def handle(args: argparse.Namespace) -> int:
    for flag, value, (low, high), usual in (("--parties", args.parties, PARTIES, 3),
                                            ("--length", args.length, LENGTH, 1000)):
        if not low <= value <= high:
            raise ParameterError(explain(flag, value, f"an integer from {low:,} to {high:,}",
                                         f"pass e.g. {flag} {usual}"))
    rng = RandomSource.seeded(args.seed) if args.seed is not None else RandomSource.fresh()
    names = [f"party{i}" for i in range(args.parties)]
    inputs = {name: rng.spawn(f"input/{name}").integers(-1000, 1000, args.length) for name in names}
    run = run_protocol({name: secure_sum_role(inputs[name]) for name in names}, rng=rng)
    expected = sum(inputs.values())
    correct = all(np.array_equal(result, expected) for result in run.results.values())
    report = {
        "protocol": "toy secure sum (additive shares over Z_2^64)",
        "parties": args.parties,
        "length": args.length,
        "correct": correct,
        "seconds": run.seconds,
        "communication": run.communication(),
        "per_party": {name: t.as_dict() for name, t in run.traffic.items()},
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{report['protocol']}: {args.parties} parties, {args.length} values each")
        print(f"  every party got the correct sum: {correct}")
        comm = report["communication"]
        print(f"  {comm['bytes']} bytes in {comm['messages']} messages over {comm['rounds']} rounds, "
              f"{run.seconds * 1000:.1f} ms")
    return 0 if correct else 1
