"""Suite ``deploy``: each deployable algorithm with one OS process per party (gRPC, mTLS, 127.0.0.1) against the
same run in memory, and the LAN / WAN wall-time models.

For every algorithm, on Adult (a synthetic table with ``--quick`` or when Adult is not reachable), with the same
seed and options:

* the baseline is the in-memory run (``Algorithm.run``, what ``mpdp run`` calls; its report's ``seconds``);
* ``launch`` is :func:`mpdp.deploy.launcher.launch` (its parties' slowest protocol time, then the whole
  wall time with every process's Python start-up in the note, and start-up to first message);
* the note gives the LAN and WAN modelled wall times (:mod:`mpdp.runtime.network`) of the launched run, and the
  slowest party's own start-up in CPU seconds (what start-up costs a party on a machine of its own);
* a case whose in-memory run is shorter than a second is run five times each way and the medians compared,
  each in-memory run in a fresh ``mpdp run`` process: cold, as each launched party is.

DPVI runs one epoch; PFDS runs 10 agents (one process each) with 3 of them evaluated.

The metric, privacy spent and traffic are checked equal; a difference is reported in the note. Numbers on a
shared, loaded host say little: quote them with the load.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from bench.harness import BenchResult
from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.launcher import launch
from mpdp.errors import DatasetUnavailableError
from mpdp.learning.registry import get_algorithm
from mpdp.runtime.network import NAMED

#: algorithm -> extra ``mpdp run`` arguments (the issue's targets first)
CASES: dict[str, list[str]] = {
    "fm-logistic": ["--parties", "3"],
    "ofaa": [],
    "mpc-gradp": ["--option", "T=20", "--option", "cohort=1"],
    "mpc-outp": ["--option", "cohort=1"],
    "local-gradp": ["--option", "T=20", "--option", "cohort=1"],
    "dpvi": ["--option", "epochs=1", "--option", "baseline=false"],  # + the partition of the dataset
    "pfds": ["--parties", "10", "--option", "eval_agents=3"],
}
#: runs shorter than this (seconds, in memory) are repeated and their medians compared: one run of 0.1 s varies
#: by tens of percent between launches
_SHORT, _REPEATS = 1.0, 5
_DPVI_PARTITION = {"adult": "demographic;financial", "synthetic": "num0,num1;num2,num3,cat0,cat1,cat2"}


def _dataset(quick: bool) -> list[str]:
    if quick:
        return ["--dataset", "synthetic-mixed:n=3000,numeric=4,categorical=3"]
    try:
        from mpdp.datasets import load_adult

        load_adult()
    except DatasetUnavailableError:
        return ["--dataset", "synthetic-mixed:n=20000,numeric=4,categorical=3"]
    return ["--dataset", "adult"]


def _same(memory: Any, launched: Any) -> str:
    fields = ("metric", "epsilon_spent", "communication")
    diff = [f for f in fields if getattr(memory, f) != getattr(launched, f)]
    return "equal metric, privacy and traffic" if not diff else f"DIFFERS in {diff}"


def _cold_memory_run(argv: list[str]) -> float:
    """The in-memory run's ``seconds`` in a fresh ``mpdp run`` process: cold, as every launched party is (a
    repeat in this process would reuse warm caches that no deployed party has)."""
    command = [sys.executable, "-c", "import sys; from mpdp.cli import main; sys.exit(main())", *argv, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    return float(json.loads(done.stdout)["seconds"])


def run(quick: bool = False) -> list[BenchResult]:
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    data = _dataset(quick)
    results = []
    for name, extra in CASES.items():
        algo = get_algorithm(name)
        if name == "dpvi":
            extra = [*extra, "--partition", _DPVI_PARTITION["adult" if "adult" in data else "synthetic"]]
        args = build_parser().parse_args(["run", name, *data, "--seed", "7", "--quiet", *extra])
        config = deployment_for(name).prepare(build_config(algo, args))
        memory = algo.run(dataclasses.replace(config))
        outcome = launch(name, config, seed=7, timeout=600.0)
        memory_times = [memory.seconds]
        launch_times = [max(r["protocol_seconds"] for r in outcome.parties.values())]
        if not quick and memory.seconds < _SHORT:  # short runs: medians, each memory run cold like each party
            memory_times = [_cold_memory_run(["run", name, *data, "--seed", "7", "--quiet", *extra])
                            for _ in range(_REPEATS)]
            while len(launch_times) < _REPEATS:
                again = launch(name, config, seed=7, timeout=600.0)
                launch_times.append(max(r["protocol_seconds"] for r in again.parties.values()))
        protocol = statistics.median(launch_times)
        sent = {p: r["communication"]["bytes_sent"] for p, r in outcome.parties.items()}
        lan = NAMED["lan"].model(protocol, memory.communication, sent)["modelled_seconds"]
        wan = NAMED["wan"].model(protocol, memory.communication, sent)["modelled_seconds"]
        own = max(r["startup_cpu_seconds"] for r in outcome.parties.values())
        rows = config.train.n
        repeats = f"median of {len(launch_times)} runs each; " if len(launch_times) > 1 else ""
        results.append(BenchResult(
            f"{name} on {config.train.name}: slowest party's protocol time", rows, protocol,
            "in-memory run", statistics.median(memory_times),
            bytes=memory.communication.get("bytes"),
            note=(f"{repeats}{len(outcome.parties)} processes; whole launch {outcome.wall_seconds:.2f} s wall incl. "
                  f"Python start-up, start-up to first message {outcome.startup_seconds:.2f} s (slowest party's "
                  f"own start-up {own:.2f} CPU s); modelled LAN {lan:.2f} s, WAN {wan:.2f} s; "
                  f"{_same(memory, outcome.report)}")))
    return results
