"""Deployment overhead as interleaved pairs: ``python -m bench.probes.deploy_pairs ALGO [--pairs N] [-- run args]``.

Each pair is one cold in-memory run (a fresh ``mpdp run`` process, its report's ``seconds``) and one launch
(:func:`mpdp.deploy.launcher.launch`, the slowest party's protocol time), on Adult with seed 7, so that the
host's drift hits both sides alike. Prints every pair and the ratio of the medians. Figures: ``bench/RESULTS.md``
(deploy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from bench.suites.deploy import _cold_memory_run
from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.launcher import launch
from mpdp.learning.registry import get_algorithm


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probes.deploy_pairs", description=__doc__.split("\n")[0])
    parser.add_argument("algorithm", help="a deployable algorithm, e.g. fm-logistic")
    parser.add_argument("--pairs", type=int, default=9, help="interleaved pairs (default 9)")
    words = list(sys.argv[1:] if argv is None else argv)
    cut = words.index("--") if "--" in words else len(words)  # after "--": more `mpdp run` arguments
    args = parser.parse_args(words[:cut])
    extra = words[cut + 1:]
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    run_argv = ["run", args.algorithm, "--dataset", "adult", "--seed", "7", "--quiet", *extra]
    algo = get_algorithm(args.algorithm)
    config = deployment_for(args.algorithm).prepare(build_config(algo, build_parser().parse_args(run_argv)))
    memory, launched = [], []
    for _ in range(args.pairs):
        memory.append(_cold_memory_run(run_argv))
        outcome = launch(args.algorithm, config, seed=7, timeout=600.0)
        launched.append(max(r["protocol_seconds"] for r in outcome.parties.values()))
    print(f"{args.algorithm}: in memory {[round(v, 3) for v in memory]} s")
    print(f"{args.algorithm}: launched  {[round(v, 3) for v in launched]} s")
    print(f"medians {statistics.median(memory):.3f} s / {statistics.median(launched):.3f} s: "
          f"launched / in memory = {statistics.median(launched) / statistics.median(memory):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
