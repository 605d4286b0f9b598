"""``mpdp launch``: one OS process per party on this machine, over gRPC with mutual TLS.

:func:`launch` takes the :class:`~mpdp.learning.spec.run.RunConfig` ``mpdp run`` builds and

1. asks the algorithm's deployment (:mod:`mpdp.deploy.deployments`) for the parties, the public parameters
   and each party's own data, and writes into a temporary folder one folder per party holding only what
   that organisation would hold: its CSV, its certificate and key with the CA certificate (the demo CA's key
   is not kept), its ledger and its own configuration file, plus the shared ``shared.json``;
2. starts ``mpdp party --config <party>/config.json --name <party>`` for every party on free 127.0.0.1
   ports under a :class:`~mpdp.runtime.supervisor.Supervisor` and waits for all of them (a party that fails
   makes the others end, and one that outlives a failure by its timeout is killed; the first genuine failure
   is raised here as the same error type, naming the party). The parties die with the launcher, even when it is
   killed (``kill -9``), and every configuration names the launch's fresh run id, by which each party's ledger
   keys its charge;
3. assembles the report from the parties' results with the deployment's ``report`` (what ``mpdp run`` calls on
   the same parties run in memory, :mod:`mpdp.learning.spec.memory`), so the metric, the privacy spent and the
   traffic come from the parties' real outputs. What the report computes outside the protocol (the
   non-private reference, the evaluation on the test set) runs here, in the launcher, which plays the analyst
   who holds the test data.

Every party also writes what it holds after the run into its ``output`` folder (:mod:`mpdp.deploy.party`): its
report, and at the party that receives the release the model file ``mpdp predict`` reads
(:attr:`LaunchResult.released`; with ``save`` that party writes it to the given folder instead, as ``mpdp run
--save`` does).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpdp.datasets.holdings import dump_json, write_party_data
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.engine import LaunchOptions
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec import AlgorithmSpec
from mpdp.learning.spec.deployment import DeployPlan, shared_parameters
from mpdp.learning.spec.memory import assemble_report, decode_runs
from mpdp.learning.spec.run import RunConfig, RunReport
from mpdp.progress import SILENT, Progress
from mpdp.runtime.certs import generate_party_folders
from mpdp.runtime.codec import decode
from mpdp.runtime.supervisor import Child, Supervisor, error_line, free_ports, typed_error

__all__ = ["GrpcEngine", "LaunchResult", "PartyProcess", "free_ports", "launch", "party_environment",
           "prepare_folders"]


@dataclass
class PartyProcess:
    """A party's configuration and result file, and once started its supervised process."""

    name: str
    config: Path
    output: Path
    child: Child | None = None

    @property
    def stderr(self) -> str:
        return "" if self.child is None else self.child.output()


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
    #: the released model's file as the receiving party wrote it (None: nothing released to save, or its
    #: folder was temporary and removed)
    released: str | None = None


def prepare_folders(root: Path, algorithm: str, plan: DeployPlan, *, epsilon: float, delta: float,
                    seed: int | None, timeout: float, connect_timeout: float,
                    overrides: Mapping[str, Mapping[str, Any]] | None = None,
                    run: str | None = None) -> dict[str, PartyProcess]:
    """Write every party's folder (data, certificates, configuration, ledger) and ``shared.json``.

    Each data party's demo ledger starts empty with the run's budget, or with the party's own charge where the
    algorithm defines it larger (DPVI's guarantee towards a party, without subsampling amplification); a folder
    written again (``--keep`` twice) keeps its ledgers, integrity keys and anchors. Every configuration names the
    same run id (``run``, default a fresh one): the parties' ledgers key this run's charge by it."""
    run = f"launch-{uuid.uuid4().hex}" if run is None else run
    ports = free_ports(len(plan.parties))
    addresses = {name: f"127.0.0.1:{port}" for name, port in zip(plan.parties, ports, strict=True)}
    shared = shared_parameters(plan)
    dump_json(root / "shared.json", shared)
    generate_party_folders(root, plan.parties)
    out: dict[str, PartyProcess] = {}
    for name in plan.parties:
        folder = root / name
        config: dict[str, Any] = {"algorithm": algorithm, "parties": addresses, "shared": "../shared.json",
                                  "certs": ".", "timeout": timeout, "connect_timeout": connect_timeout, "run": run}
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


def _failure(processes: Mapping[str, PartyProcess]) -> BaseException:
    """The first genuine failure among the parties, as its own error type, naming the party: a party's own
    error before a peer's report that it became unreachable, before a peer's abort it caused."""
    failed = []
    for p in processes.values():
        child = p.child
        if child is None or child.returncode in (0, None):
            continue
        parsed = error_line(p.stderr)
        if parsed is None:
            kind = "PartyUnavailableError"
            message = f"{p.name} ended with {child.describe()} without reporting an error. {p.stderr.strip()[-400:]}"
        else:
            kind, message = parsed
        consequence = {"ProtocolAbortError": 2, "PartyUnavailableError": 1}.get(kind, 0)
        failed.append((consequence, child.ended or 0.0, p.name, kind, message))
    failed.sort()
    _, _, name, kind, message = failed[0]
    exc = typed_error(kind, f"party {name}: {message}")
    others = [f"{n}: {k}" for _, _, n, k, _ in failed[1:]]
    if others:
        exc.add_note("the other parties ended with " + "; ".join(others))
    return exc


def _run_processes(processes: Mapping[str, PartyProcess], supervisor: Supervisor, *, deadline: float,
                   grace: float, progress: Progress = SILENT) -> tuple[float, float]:
    """Start every party under ``supervisor``, wait for all (``progress``: a bar over the parties that ended, its
    elapsed time moving while they run); ``(wall seconds, epoch time of the start)``."""
    start, started = time.perf_counter(), time.time()
    for p in processes.values():
        command = [*_python_command(), "party", "--config", str(p.config), "--name", p.name,
                   "--result-file", str(p.output)]  # this interpreter and paths this launcher wrote
        p.child = supervisor.start(p.name, command, log=p.config.parent / "stderr.txt")
    with progress.bar("parties finished (each starts, connects to the others, runs its part)",
                      total=len(processes), unit="party") as bar:
        shown = [0]

        def tick(ended: int) -> None:
            bar.update(ended - shown[0])
            shown[0] = ended
            bar.refresh()

        supervisor.wait(deadline=deadline, grace=grace, names=list(processes), tick=tick)
    return time.perf_counter() - start, started


def launch(algorithm: str, config: RunConfig, *, seed: int | None,
           timeout: float = 120.0, connect_timeout: float = 30.0, keep: Path | None = None,
           overrides: Mapping[str, Mapping[str, Any]] | None = None, deadline: float | None = None,
           progress: Progress = SILENT, save: Path | None = None) -> LaunchResult:
    """Run ``algorithm`` with one process per party (module docstring).

    ``keep``: write the party folders there and leave them (default: a temporary folder, removed).
    ``overrides``: per-party configuration entries to change (tests inject faults this way).
    ``deadline``: seconds the whole run may take (default ``connect_timeout + 4 * timeout + 30``). Once a party
    has failed, the others end within their own timeouts or are killed ``timeout + 5`` s later; every party
    process ends with the launcher, even when the launcher is killed (:class:`~mpdp.runtime.supervisor.Supervisor`).
    ``progress``: a phase line per step. ``save``: the folder the party that receives the release writes the model
    into (``model.json``, its integrity key beside the folder, as ``mpdp run --save``); refused before anything
    runs for an algorithm that releases no model.
    """
    deployment = deployment_for(algorithm)
    config = deployment.prepare(get_algorithm(algorithm).configure(config))
    plan = deployment.plan(algorithm, config)
    if save is not None:
        from mpdp.learning.release.build import check_savable

        check_savable(algorithm)
        receiver = deployment.receiver(shared_parameters(plan))
        if receiver is not None:
            changed = {k: dict(v) for k, v in (overrides or {}).items()}
            changed.setdefault(receiver, {})["output"] = str(save.expanduser().resolve())
            overrides = changed
    root = Path(tempfile.mkdtemp(prefix="mpdp-launch-")) if keep is None else keep
    root.mkdir(parents=True, exist_ok=True)
    try:
        progress.phase(f"writing the folders of {len(plan.parties)} parties (data, certificates, ledgers) to {root}")
        processes = prepare_folders(root, algorithm, plan, epsilon=config.epsilon, delta=config.delta, seed=seed,
                                    timeout=timeout, connect_timeout=connect_timeout, overrides=overrides)
        limit = connect_timeout + 4 * timeout + 30.0 if deadline is None else deadline
        progress.phase(f"starting {len(processes)} party processes ({', '.join(processes)}) over gRPC with mutual "
                       f"TLS; each waits up to {connect_timeout:g} s for the others")
        with Supervisor(party_environment(len(processes))) as supervisor:
            wall, started = _run_processes(processes, supervisor, deadline=time.monotonic() + limit,
                                           grace=timeout + 5.0, progress=progress)
        if any(p.child is not None and p.child.returncode != 0 for p in processes.values()):
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
        released = next((r["saved"]["model"] for r in reports.values() if "model" in r.get("saved", {})), None)
        return LaunchResult(report, plan, reports, wall, config, startup, root if keep is not None else None,
                            released=released if keep is not None or save is not None else None)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


class GrpcEngine:
    """``mpdp launch --engine grpc``: :func:`launch` as an :class:`~mpdp.deploy.engine.Engine`; the report's
    ``deployment`` adds each party's CPU, wall and start-up seconds, its traffic and its ledger, the parties'
    configuration digest and the kept folder."""

    name = "grpc"

    def launch(self, spec: AlgorithmSpec, config: RunConfig, options: LaunchOptions) -> RunReport:
        outcome = launch(spec.name, config, seed=options.seed, timeout=options.timeout,
                         connect_timeout=options.connect_timeout, keep=options.keep,
                         progress=options.progress.scoped(spec.name), save=options.save)
        parties = outcome.parties
        per_party = {name: {"cpu_seconds": r["cpu_seconds"], "wall_seconds": r["wall_seconds"],
                            "setup_seconds": r["setup_seconds"], "startup_cpu_seconds": r["startup_cpu_seconds"],
                            "bytes_sent": r["communication"]["bytes_sent"],
                            "messages": r["communication"]["messages"],
                            "coordination": {"bytes_sent": r["communication"]["coordination_bytes"],
                                             "messages": r["communication"]["coordination_messages"]},
                            "ledger": r["ledger"]}
                     for name, r in parties.items()}
        report = outcome.report
        report.extra["deployment"] = {
            "processes": len(parties), "transport": "grpc-mtls", "engine": self.name,
            "wall_seconds": outcome.wall_seconds,
            "protocol_seconds": max(r["protocol_seconds"] for r in parties.values()),  # the slowest party's
            "startup_seconds": outcome.startup_seconds,
            "startup_cpu_seconds": max(r["startup_cpu_seconds"] for r in parties.values()),
            "per_party": per_party, "digest": next(iter(parties.values()))["digest"],
            "folder": None if outcome.folder is None else str(outcome.folder), "released": outcome.released}
        if options.save is not None and outcome.released is not None:  # written by the receiving party
            report.extra["saved"] = {"model": outcome.released}
        report.extra["options"] = dict(outcome.config.options)
        return report
