"""``mpdp launch ALGORITHM [the options of mpdp run]``: every party in its own process, over gRPC with mTLS.

The same options, data loading, split and partition as ``mpdp run`` (:func:`mpdp.cli.run_cmd.add_run_arguments`
and :func:`~mpdp.cli.run_cmd.build_run`); the parties then run as separate processes on 127.0.0.1
(:mod:`mpdp.deploy.launcher`) and the same table or JSON object is printed, with a ``"deployment"`` object:
the processes, the transport, the wall time and each party's CPU time, bytes and messages sent and its own
ledger's spend. A party's ``bytes_sent`` and ``messages`` are its share of the algorithm's
traffic (they add up to ``communication``, equal to ``mpdp run``'s); its ``coordination`` counts what a
deployment sends beyond that because no single process holds every party (e.g. the model a central loop hands
to every owner in memory).

``--engine`` picks how the parties are deployed, one of :data:`mpdp.deploy.engine.ENGINES`, each an
:class:`~mpdp.deploy.engine.Engine` whose report the deployment assembles, so every engine prints the same record:
``grpc`` is :mod:`mpdp.deploy.launcher` (every algorithm whose spec names a deployment); ``flower`` starts a
SuperLink and one SuperNode per party (the algorithms whose spec names a Flower app; extra ``flower``), with
``--timeout`` a round's timeout, ``--max-dropouts`` the clients that may miss a round and ``--insecure`` for
plain HTTP instead of HTTPS with a demo CA.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mpdp.cli.common import print_json, progress_of, show_warnings
from mpdp.cli.run_cmd import add_run_arguments, build_run, human, name_parties, record_of
from mpdp.deploy.config import MAX_TIMEOUT
from mpdp.deploy.engine import ENGINES, Engine, LaunchOptions, engine_for
from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec import AlgorithmSpec
from mpdp.learning.spec.run import RunConfig

__all__ = ["add_parser", "handle", "launch_record", "options_of"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "launch", help="run a registered algorithm with one OS process per party (gRPC, mutual TLS, 127.0.0.1)",
        description="Like `mpdp run`, but every party runs in its own process on this machine, talking over "
                    "gRPC with mutual TLS; prints the same results plus the deployment's figures.")
    add_run_arguments(parser)
    deploy = parser.add_argument_group("deployment")
    deploy.add_argument("--engine", choices=sorted(ENGINES), default="grpc",
                        help="how the parties are deployed (default grpc)")
    defaults = LaunchOptions()
    deploy.add_argument("--timeout", type=float, default=defaults.timeout,
                        help="seconds any party waits for a message before it gives up; flower: a round's deadline "
                             f"(default {defaults.timeout:g})")
    deploy.add_argument("--connect-timeout", type=float, default=defaults.connect_timeout,
                        help=f"seconds a party waits for the others to come up (default {defaults.connect_timeout:g})")
    deploy.add_argument("--keep", metavar="DIR", default=None,
                        help="write the parties' folders (data, certificates, configurations, ledgers) to DIR and "
                             "keep them, e.g. to copy one to each organisation")
    deploy.add_argument("--max-dropouts", type=int, default=defaults.max_dropouts,
                        help=f"flower engine: clients that may miss a round (default {defaults.max_dropouts})")
    deploy.add_argument("--insecure", action="store_true",
                        help="flower engine: plain HTTP instead of HTTPS with a demo CA")
    parser.set_defaults(handler=handle)


def _check_timeouts(args: argparse.Namespace) -> None:
    for label, value in (("--timeout", args.timeout), ("--connect-timeout", args.connect_timeout)):
        if not 0 < value <= MAX_TIMEOUT:
            raise ParameterError(explain(label, value, f"seconds in (0, {MAX_TIMEOUT:g}]", f"pass e.g. {label} 60"))


def options_of(args: argparse.Namespace) -> LaunchOptions:
    """The launch's :class:`~mpdp.deploy.engine.LaunchOptions` from the command line."""
    _check_timeouts(args)
    return LaunchOptions(seed=args.seed, timeout=args.timeout, connect_timeout=args.connect_timeout,
                         keep=Path(args.keep) if args.keep else None, max_dropouts=args.max_dropouts,
                         tls=not args.insecure, progress=progress_of(args),
                         save=Path(args.save) if args.save else None)


def launch_record(engine: Engine, algo: AlgorithmSpec, config: RunConfig, args: argparse.Namespace,
                  extra: Mapping[str, Any]) -> dict[str, Any]:
    """The record ``mpdp run`` prints for the engine's report (its ``deployment`` and ``options`` included), and
    with ``--network`` the LAN/WAN model of the parties' protocol time and traffic."""
    report = engine.launch(algo, config, options_of(args))
    record = record_of(report, config, args, extra)
    if args.network is not None:
        deployment = record["deployment"]
        record["network"] = args.network.model(float(deployment["protocol_seconds"]), record["communication"],
                                               {n: p["bytes_sent"] for n, p in deployment["per_party"].items()})
    return record


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
        record = name_parties(launch_record(engine_for(args.engine), algo, config, args, extra))
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
            spent = "" if not p.get("ledger") else f", ledger epsilon {p['ledger']['epsilon']:g}"
            cpu = "" if p.get("cpu_seconds") is None else f"cpu {p['cpu_seconds']:.2f} s, "
            print(f"    {name}: {cpu}sent {p['bytes_sent']:,} bytes in {p['messages']:,} messages{spent}")
        if dep.get("released"):
            print(f"  released model written by the receiving party to {dep['released']}")
    return 0
