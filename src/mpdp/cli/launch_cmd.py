"""``mpdp launch ALGORITHM [the options of mpdp run]``: every party in its own process, over gRPC with mTLS.

The same options, data loading, split and partition as ``mpdp run`` (:func:`mpdp.cli.run_cmd.add_run_arguments`
and :func:`~mpdp.cli.run_cmd.build_run`); the parties then run as separate processes on 127.0.0.1
(:mod:`mpdp.deploy.launcher`) and the same table or JSON object is printed, with a ``"deployment"`` object:
the processes, the transport, the wall time and each party's CPU time, bytes and messages sent and its own
ledger's spend. A party's ``bytes_sent`` and ``messages`` are its share of the algorithm's
traffic (they add up to ``communication``, equal to ``mpdp run``'s); its ``coordination`` counts what a
deployment sends beyond that because no single process holds every party (e.g. the model a central loop hands
to every owner in memory).

``--engine`` picks how the parties are deployed; :data:`ENGINES` maps each choice to its function
``(algo, config, args) -> record``. ``grpc`` is this package's launcher (every algorithm whose spec names a
deployment); ``flower`` starts a SuperLink and one SuperNode per party (the algorithms whose spec names a Flower
app; extra ``flower``), with ``--timeout`` a round's timeout, ``--max-dropouts`` the clients that may miss a round
and ``--insecure`` for plain HTTP instead of HTTPS with a demo CA.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mpdp.cli.common import print_json, progress_of, show_warnings
from mpdp.cli.run_cmd import add_run_arguments, build_run, human, name_parties, record_of
from mpdp.deploy.config import MAX_TIMEOUT
from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec import AlgorithmSpec
from mpdp.learning.spec.run import RunConfig

__all__ = ["ENGINES", "add_parser", "handle", "launch_flower", "launch_grpc"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "launch", help="run a registered algorithm with one OS process per party (gRPC, mutual TLS, 127.0.0.1)",
        description="Like `mpdp run`, but every party runs in its own process on this machine, talking over "
                    "gRPC with mutual TLS; prints the same results plus the deployment's figures.")
    add_run_arguments(parser)
    deploy = parser.add_argument_group("deployment")
    deploy.add_argument("--engine", choices=sorted(ENGINES), default="grpc",
                        help="how the parties are deployed (default grpc)")
    deploy.add_argument("--timeout", type=float, default=120.0,
                        help="seconds any party waits for a message before it gives up (default 120)")
    deploy.add_argument("--connect-timeout", type=float, default=30.0,
                        help="seconds a party waits for the others to come up (default 30)")
    deploy.add_argument("--keep", metavar="DIR", default=None,
                        help="write the parties' folders (data, certificates, configurations, ledgers) to DIR and "
                             "keep them, e.g. to copy one to each organisation")
    deploy.add_argument("--max-dropouts", type=int, default=0,
                        help="flower engine: clients that may miss a round (default 0)")
    deploy.add_argument("--insecure", action="store_true",
                        help="flower engine: plain HTTP instead of HTTPS with a demo CA")
    parser.set_defaults(handler=handle)


def _check_timeouts(args: argparse.Namespace) -> None:
    for label, value in (("--timeout", args.timeout), ("--connect-timeout", args.connect_timeout)):
        if not 0 < value <= MAX_TIMEOUT:
            raise ParameterError(explain(label, value, f"seconds in (0, {MAX_TIMEOUT:g}]", f"pass e.g. {label} 60"))


def launch_grpc(algo: AlgorithmSpec, config: RunConfig, args: argparse.Namespace,
                extra: Mapping[str, Any]) -> dict[str, Any]:
    """Deploy over this package's gRPC/mTLS launcher; the record ``mpdp run`` prints plus ``"deployment"``."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    try:
        from mpdp.deploy.launcher import launch
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ParameterError(explain("grpcio", "not installed", "the net extra", "pip install 'mpdp[net]'")) from exc
    _check_timeouts(args)
    outcome = launch(algo.name, config, seed=args.seed, timeout=args.timeout,
                     connect_timeout=args.connect_timeout, keep=Path(args.keep) if args.keep else None,
                     progress=progress_of(args).scoped(algo.name), save=Path(args.save) if args.save else None)
    record = record_of(outcome.report, outcome.config, args, extra)
    per_party = {name: {"cpu_seconds": r["cpu_seconds"], "wall_seconds": r["wall_seconds"],
                        "setup_seconds": r["setup_seconds"], "startup_cpu_seconds": r["startup_cpu_seconds"],
                        "bytes_sent": r["communication"]["bytes_sent"],
                        "messages": r["communication"]["messages"],
                        "coordination": {"bytes_sent": r["communication"]["coordination_bytes"],
                                         "messages": r["communication"]["coordination_messages"]},
                        "ledger": r["ledger"]}
                 for name, r in outcome.parties.items()}
    compute = max(r["protocol_seconds"] for r in outcome.parties.values())  # the slowest party's protocol
    record["deployment"] = {"processes": len(outcome.parties), "transport": "grpc-mtls", "engine": "grpc",
                            "wall_seconds": outcome.wall_seconds,
                            "startup_seconds": outcome.startup_seconds,
                            "startup_cpu_seconds": max(r["startup_cpu_seconds"] for r in outcome.parties.values()),
                            "digest": next(iter(outcome.parties.values()))["digest"],
                            "folder": None if outcome.folder is None else str(outcome.folder),
                            "released": outcome.released, "per_party": per_party}
    if args.save and outcome.released is not None:  # written by the party that received the release
        record["saved"] = {"model": outcome.released}
    if args.network is not None:
        record["network"] = args.network.model(compute, record["communication"],
                                               {n: p["bytes_sent"] for n, p in per_party.items()})
    return record


def launch_flower(algo: AlgorithmSpec, config: RunConfig, args: argparse.Namespace,
                  extra: Mapping[str, Any]) -> dict[str, Any]:
    """The Flower engine (extra ``flower``): a SuperLink, one SuperNode per data party and two aggregator
    SuperNodes on 127.0.0.1 over HTTPS (:func:`mpdp.flower.launcher.launch`); ``--timeout`` is a round's."""
    try:
        from mpdp.flower.launcher import launch
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ParameterError(explain("flwr", "not installed", "the flower extra", "pip install 'mpdp[flower]'")) \
            from exc
    _check_timeouts(args)
    start = time.perf_counter()
    aggregators = int(getattr(config.settings, "aggregators", 2))
    progress_of(args).phase(f"{algo.name}: starting a SuperLink and {config.parties + aggregators} SuperNodes "
                            "(Flower)")
    record = launch(algo.name, config, seed=args.seed, round_timeout=args.timeout,
                    connect_timeout=args.connect_timeout, workdir=args.keep, tls=not args.insecure,
                    max_dropouts=args.max_dropouts)
    wall = time.perf_counter() - start
    phases = dict(extra.get("phases", {}))
    record.update({k: v for k, v in extra.items() if k != "phases"})
    record["seed"] = args.seed
    record["phases"] = {**phases, "train": wall}
    record["seconds"] = sum(record["phases"].values())
    record["deployment"] = {"processes": config.parties + aggregators + 1, "transport": "flower-https",
                            "engine": "flower", "wall_seconds": wall, "startup_seconds": None,
                            "startup_cpu_seconds": None, "per_party": {}}
    if args.network is not None:
        record["network"] = args.network.model(float(record["flower_seconds"]), record["communication"])
    return record


#: --engine choice -> (algorithm, config, args, what build_run adds) -> the printed record
ENGINES: dict[str, Callable[[AlgorithmSpec, RunConfig, argparse.Namespace, Mapping[str, Any]], dict[str, Any]]] = {
    "grpc": launch_grpc, "flower": launch_flower}


def handle(args: argparse.Namespace) -> int:
    if args.list:
        engines = {name: spec.engines() for name, spec in algorithms().items()}
        grpc = [n for n, e in engines.items() if "grpc" in e]
        flower = [n for n, e in engines.items() if "flower" in e]
        if args.json:
            print_json({"deployable": grpc, "engines": {"grpc": grpc, "flower": flower}})
        else:
            print("--engine grpc (default): " + ", ".join(grpc))
            print("--engine flower: " + ", ".join(flower))
        return 0
    if not args.algorithm:
        raise ParameterError(explain("algorithm", None, "an algorithm name", "run `mpdp launch --list`"))
    if args.plot:
        raise ParameterError(explain("--plot", args.plot, "no --plot with launch", "plot from `mpdp run`"))
    if args.save and args.engine == "flower":
        raise ParameterError(explain("--save", args.save, "--save with --engine grpc (the party that receives the "
                                     "release writes it)", "drop --engine flower, or save from `mpdp run`"))
    if args.save:  # refused before anything runs
        from mpdp.learning.release.build import check_savable

        check_savable(args.algorithm)
    progress_of(args).phase(f"launch {args.algorithm}: loading the algorithm")
    algo = get_algorithm(args.algorithm)
    if args.engine != "flower" and (args.max_dropouts or args.insecure):
        raise ParameterError(explain("--max-dropouts/--insecure", args.max_dropouts or args.insecure,
                                     "only with --engine flower", "drop them, or pass --engine flower"))
    if args.engine not in algo.engines():
        raise ParameterError(explain(f"--engine {args.engine}", algo.name, f"an engine {algo.name} runs on: "
                                     f"{[e for e in algo.engines() if e in ENGINES]}", "run `mpdp launch --list`"))
    with show_warnings():
        config, extra = build_run(algo, args)
        record = name_parties(ENGINES[args.engine](algo, config, args, extra))
    if args.json:
        print_json(record)
    else:
        print(human(record))
        dep = record["deployment"]
        startup = "" if dep["startup_seconds"] is None else \
            f" (start-up to first message {dep['startup_seconds']:.2f} s; the slowest party's own start-up " \
            f"{dep['startup_cpu_seconds']:.2f} CPU s)"
        print(f"  deployment: {dep['processes']} processes over {dep['transport']}, {dep['wall_seconds']:.2f} s "
              f"wall{startup}")
        for name, p in dep["per_party"].items():
            spent = "" if not p["ledger"] else f", ledger epsilon {p['ledger']['epsilon']:g}"
            print(f"    {name}: cpu {p['cpu_seconds']:.2f} s, sent {p['bytes_sent']:,} bytes in "
                  f"{p['messages']:,} messages{spent}")
        if dep.get("released"):
            print(f"  released model written by the receiving party to {dep['released']}")
    return 0
