"""``mpdp audit [NAME | --all]``: certified lower bounds on epsilon for the real release paths.

Each audit runs a release path many times on two worst-case neighbours and prints the claimed epsilon, the
lower bound (valid with probability ``--confidence``), the samples per dataset and the time. ``--broken``
audits the deliberately broken variants instead (each should be flagged: bound above the claim). The exit
code is 1 when a real path is flagged (or, with ``--broken``, when a broken one is not).
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from mpdp.audit.registry import AUDITS, build
from mpdp.cli.common import add_output_arguments, print_json, progress_of, rng_from_args, table
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("audit", help="empirical lower bounds on epsilon for every release path")
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(AUDITS)}")
    parser.add_argument("--all", action="store_true", help="audit every release path")
    parser.add_argument("--list", action="store_true", help="list the audit names and exit")
    parser.add_argument("--broken", action="store_true", help="audit the deliberately broken variants")
    parser.add_argument("--quick", action="store_true", help="the CI budgets (smaller samples)")
    parser.add_argument("--samples", type=int, default=None, help="runs per dataset (default: each audit's)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    add_output_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.list:
        if args.json:
            print_json({"audits": [{"name": name, "paper": entry.paper, "quick_samples": entry.quick_samples}
                                   for name, entry in AUDITS.items()]})
        else:
            print("\n".join(AUDITS))
        return 0
    if args.all == (args.name is not None):
        raise ParameterError(explain("audit selection", args.name, "one NAME or --all (not both, not neither)",
                                     "run `mpdp audit --all` or `mpdp audit discrete-laplace`"))
    selected = list(AUDITS) if args.all else [args.name]
    rng = rng_from_args(args)
    progress = progress_of(args)
    results = []
    for k, name in enumerate(selected, 1):
        progress.phase(f"audit {k} of {len(selected)}: {name}" + (" (broken variant)" if args.broken else ""))
        case = build(name, broken=args.broken)
        samples = args.samples or (AUDITS[name].quick_samples if args.quick else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            results.append(case.run(samples=samples, confidence=args.confidence, rng=rng.spawn(name),
                                    progress=progress.scoped(name)))
        if not args.json and not args.quiet:
            r = results[-1]
            print(f"{r.name}: lower bound {r.lower_bound:.3f} vs claimed {r.claimed_epsilon:.3f} ({r.seconds:.1f} s)")
    bad = [r.name for r in results if r.flagged != args.broken]
    if args.json:
        print_json({"broken": args.broken, "confidence": args.confidence, "audits": [r.to_json() for r in results],
                    "unexpected": bad, "seconds": sum(r.seconds for r in results)})
    else:
        rows = [(r.name, f"{r.claimed_epsilon:.3f}", f"{r.delta:g}", f"{r.lower_bound:.3f}", r.samples,
                 f"{r.seconds:.1f}", "FLAGGED" if r.flagged else "ok") for r in results]
        print(table(rows, ["audit", "claimed eps", "delta", "lower bound", "samples/side", "seconds", "verdict"]))
    return 1 if bad else 0
