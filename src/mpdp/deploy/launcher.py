"""``mpdp launch``: one OS process per party on this machine, over gRPC with mutual TLS.

:func:`launch` takes the :class:`~mpdp.learning.spec.run.RunConfig` ``mpdp run`` builds and

1. asks the algorithm's deployment (:mod:`mpdp.deploy.algorithms`) for the parties, the public parameters
   and each party's own data, and writes into a temporary folder one folder per party holding only what
   that organisation would hold: its CSV, its certificate and key with the CA certificate (the demo CA's key
   is not kept), its ledger and its own configuration file, plus the shared ``shared.json``;
2. starts ``mpdp party --config <party>/config.json --name <party>`` for every party on free 127.0.0.1
   ports and waits for all of them (a party that fails makes the others end; the first genuine failure is
   raised here as the same error type, naming the party);
3. assembles the report from the parties' results with the deployment's ``report`` (what ``mpdp run`` calls on
   the same parties run in memory, :mod:`mpdp.learning.spec.memory`), so the metric, the privacy spent and the
   traffic come from the parties' real outputs. What the report computes outside the protocol (the
   non-private reference, the evaluation on the test set) runs here, in the launcher, which plays the analyst
   who holds the test data.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpdp import errors
from mpdp.datasets.holdings import dump_json, write_party_data
from mpdp.deploy.algorithms import deployment_for
from mpdp.errors import ProtocolError
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.deployment import DeployPlan, shared_parameters
from mpdp.learning.spec.memory import assemble_report, decode_runs
from mpdp.learning.spec.run import RunConfig, RunReport
from mpdp.progress import SILENT, Progress
from mpdp.runtime.certs import generate_party_folders
from mpdp.runtime.codec import decode

__all__ = ["LaunchResult", "PartyProcess", "free_ports", "launch", "party_environment", "prepare_folders"]


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 at this moment."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(int(s.getsockname()[1]))
    finally:
        for s in sockets:
            s.close()
    return ports


@dataclass
class PartyProcess:
    name: str
    config: Path
    output: Path
    process: subprocess.Popen[bytes] | None = None
    stderr: str = ""
    ended: float = 0.0


@dataclass
class LaunchResult:
    report: RunReport
    plan: DeployPlan
    parties: dict[str, dict[str, Any]]  # each party's own report (traffic, ledger, timings)
    wall_seconds: float
    config: RunConfig
    #: from starting the processes to the moment every party may send its first message (imports included)
    startup_seconds: float
    folder: Path | None = None
    per_run: list[dict[str, Any]] = field(default_factory=list)


def prepare_folders(root: Path, algorithm: str, plan: DeployPlan, *, epsilon: float, delta: float,
                    seed: int | None, timeout: float, connect_timeout: float,
                    overrides: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, PartyProcess]:
    """Write every party's folder (data, certificates, configuration, ledger) and ``shared.json``.

    Each data party's demo ledger starts empty with the run's budget, or with the party's own charge where the
    algorithm defines it larger (DPVI's guarantee towards a party, without subsampling amplification)."""
    ports = free_ports(len(plan.parties))
    addresses = {name: f"127.0.0.1:{port}" for name, port in zip(plan.parties, ports, strict=True)}
    shared = shared_parameters(plan)
    dump_json(root / "shared.json", shared)
    generate_party_folders(root, plan.parties)
    out: dict[str, PartyProcess] = {}
    for name in plan.parties:
        folder = root / name
        config: dict[str, Any] = {"algorithm": algorithm, "parties": addresses, "shared": "../shared.json",
                                  "certs": ".", "timeout": timeout, "connect_timeout": connect_timeout}
        if seed is not None:
            config["seed"] = seed
        own = plan.data.get(name)
        if own is not None:  # a party holding data keeps its own ledger of what is released about it
            write_party_data(folder / "data.csv", own)
            config["data"] = "data.csv"
            cost = deployment_for(algorithm).cost(shared, name)
            config["ledger"] = {"path": "ledger.json",
                                "epsilon": max(epsilon, 0.0 if cost is None else cost.epsilon),
                                "delta": max(delta, 0.0 if cost is None else cost.delta)}
        if name in plan.evaluation:
            write_party_data(folder / "evaluation.csv", plan.evaluation[name])
            config["evaluation"] = "evaluation.csv"
        config.update((overrides or {}).get(name, {}))
        out[name] = PartyProcess(name, dump_json(folder / "config.json", config), folder / "result.bin")
    return out


#: the thread-pool sizes of numpy's BLAS and OpenMP, which a shared machine splits among its party processes
_POOLS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def party_environment(processes: int) -> dict[str, str]:
    """The environment of ``processes`` party processes sharing this machine.

    Each process's BLAS pool gets an equal share of the cores (at least one thread) unless the user set the
    pool sizes: OpenBLAS would otherwise start one spinning thread per core in every process, and the
    processes' pools then compete for the same cores (an Adult-sized ``X^T X`` took 0.3 s instead of 5 ms
    with six processes on two cores). On machines of their own, parties keep their whole machine's pool."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.setdefault("GRPC_VERBOSITY", "ERROR")
    share = str(max(1, (os.cpu_count() or 1) // max(1, processes)))
    for name in _POOLS:
        env.setdefault(name, share)
    return env


def _python_command() -> list[str]:
    return [sys.executable, "-c", "import sys; from mpdp.cli import main; sys.exit(main())"]


def _error_line(stderr: str) -> tuple[str, str] | None:
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith("mpdp: error: "):
            kind, _, message = line.removeprefix("mpdp: error: ").partition(": ")
            return kind, message
    return None


def _failure(processes: Mapping[str, PartyProcess]) -> BaseException:
    """The first genuine failure among the parties, as its own error type, naming the party: a party's own
    error before a peer's report that it became unreachable, before a peer's abort it caused."""
    failed = []
    for p in processes.values():
        code = None if p.process is None else p.process.returncode
        if code in (0, None):
            continue
        parsed = _error_line(p.stderr)
        if parsed is None:
            kind = "PartyUnavailableError"
            how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            message = f"{p.name} ended with {how} without reporting an error. {p.stderr.strip()[-400:]}"
        else:
            kind, message = parsed
        consequence = {"ProtocolAbortError": 2, "PartyUnavailableError": 1}.get(kind, 0)
        failed.append((consequence, p.ended, p.name, kind, message))
    failed.sort()
    _, _, name, kind, message = failed[0]
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.MpdpError)):
        cls = ProtocolError
    exc = cls(f"party {name}: {message}")
    others = [f"{n}: {k}" for _, _, n, k, _ in failed[1:]]
    if others:
        exc.add_note("the other parties ended with " + "; ".join(others))
    return exc


def _run_processes(processes: Mapping[str, PartyProcess], deadline: float,
                   env: Mapping[str, str], progress: Progress = SILENT) -> tuple[float, float]:
    """Start every party, wait for all (``progress``: a bar over the parties that ended); ``(wall seconds, epoch
    time of the start)``."""
    start, started = time.perf_counter(), time.time()
    for p in processes.values():
        with (p.config.parent / "stderr.txt").open("wb") as log:  # a file: a chatty party never blocks on a pipe
            command = [*_python_command(), "party", "--config", str(p.config), "--name", p.name,
                       "--output", str(p.output)]  # this interpreter and paths this launcher wrote
            p.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=dict(env))  # noqa: S603
    bar = progress.bar("parties finished (each starts, connects to the others, runs its part)",
                       total=len(processes), unit="party")
    drawn = time.perf_counter()
    try:
        running = {p.name: p for p in processes.values() if p.process is not None}
        while running:
            for name, p in list(running.items()):
                if p.process is not None and p.process.poll() is not None:
                    p.ended = time.perf_counter()
                    p.stderr = (p.config.parent / "stderr.txt").read_text("utf-8", "replace")
                    del running[name]
                    bar.update()
            if time.perf_counter() - drawn >= 1.0:  # the elapsed time moves while every party still runs
                bar.refresh()
                drawn = time.perf_counter()
            if running and time.monotonic() > deadline:
                late = ", ".join(sorted(running))
                raise errors.PartyUnavailableError(
                    f"parties {late} were still running after the launcher's deadline. Fix: raise --timeout if "
                    "the run is legitimately slow")
            time.sleep(0.02)
    finally:
        bar.close()
        for p in processes.values():  # only the processes this launcher started, by their own handles
            if p.process is not None and p.process.poll() is None:
                p.process.send_signal(signal.SIGKILL)
                p.process.wait()
    return time.perf_counter() - start, started


def launch(algorithm: str, config: RunConfig, *, seed: int | None,
           timeout: float = 120.0, connect_timeout: float = 30.0, keep: Path | None = None,
           overrides: Mapping[str, Mapping[str, Any]] | None = None, progress: Progress = SILENT) -> LaunchResult:
    """Run ``algorithm`` with one process per party (module docstring).

    ``keep``: write the party folders there and leave them (default: a temporary folder, removed).
    ``overrides``: per-party configuration entries to change (tests inject faults this way).
    ``progress``: a phase line per step and a bar over the parties while they run.
    """
    deployment = deployment_for(algorithm)
    config = deployment.prepare(get_algorithm(algorithm).configure(config))
    plan = deployment.plan(algorithm, config)
    root = Path(tempfile.mkdtemp(prefix="mpdp-launch-")) if keep is None else keep
    root.mkdir(parents=True, exist_ok=True)
    try:
        progress.phase(f"writing the folders of {len(plan.parties)} parties (data, certificates, ledgers) to {root}")
        processes = prepare_folders(root, algorithm, plan, epsilon=config.epsilon, delta=config.delta, seed=seed,
                                    timeout=timeout, connect_timeout=connect_timeout, overrides=overrides)
        env = party_environment(len(processes))
        deadline = time.monotonic() + connect_timeout + 4 * timeout + 30.0
        progress.phase(f"starting {len(processes)} party processes ({', '.join(processes)}) over gRPC with mutual "
                       f"TLS; each waits up to {connect_timeout:g} s for the others")
        wall, started = _run_processes(processes, deadline, env, progress)
        if any(p.process is not None and p.process.returncode != 0 for p in processes.values()):
            raise _failure(processes)
        outputs: dict[str, list[dict[str, Any]]] = {}
        reports: dict[str, dict[str, Any]] = {}
        for p in processes.values():
            body = decode(p.output.read_bytes())
            outputs[p.name] = list(body["runs"])
            reports[p.name] = json.loads(body["report"])
        progress.phase("assembling the report from the parties' results")
        shared = shared_parameters(plan)
        outcomes = {name: decode_runs(deployment, name, runs, shared) for name, runs in outputs.items()}
        report = assemble_report(deployment, config, plan, outcomes, {"train": wall})
        startup = max(r["ready_at"] for r in reports.values()) - started
        return LaunchResult(report, plan, reports, wall, config, startup, root if keep is not None else None)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
