"""Start a SuperLink and one SuperNode per party on 127.0.0.1, run an mpdp Flower app, return the run's report.

:func:`launch` prepares the data exactly as the algorithm's deployment does (same split, same row order, same
party names), writes each client's rows to its own file, starts ``flower-superlink`` (HTTPS with a demo CA
unless ``tls=False``), one ``flower-supernode`` per data party and per aggregator (each with its own
``--node-config``: role, name, data file, ledger file), submits the app with ``flwr run`` and waits for it. The
hub returns the deployed parties' results (:func:`mpdp.flower.hub.result_of`) and the report is assembled from
them by the deployment's ``report`` (:func:`mpdp.learning.spec.memory.assemble_report`), as on every engine;
:class:`FlowerEngine` is this launcher as an :class:`~mpdp.deploy.engine.Engine`.

Flower's waits are polls: the launcher sets ``FLWR_SUPEREXEC_TASK_POLL_INTERVAL`` (the SuperExec's wait between
looks for a ClientApp or ServerApp to start; Flower's default 1 s) to :data:`TASK_POLL_INTERVAL` for the
processes it starts, unless the caller's environment sets it.

The processes run under a :class:`~mpdp.runtime.supervisor.Supervisor`: every one of them, and the SuperExec
and app processes Flower starts under them, is stopped on return, and killed with the launcher if the launcher
is killed. The SuperLink keeps its state in memory (``--database :flwr-in-memory:``): a SQLite file answers
concurrent SuperNode pulls with "database is locked" under load, and a SuperNode answered with an HTTP 500 stops
pulling. The run ends, with the hub's result or a typed error, within its deadline: ``timeout``, by default the
time its rounds may take (:func:`run_deadline`); a SuperLink that ends early fails it at once.

Equality with ``mpdp run``: with the same :class:`~mpdp.learning.spec.run.RunConfig` whose ``rng`` is
``RandomSource.seeded(seed).spawn("algorithm")`` (what ``mpdp run --seed seed`` builds) and ``seed=seed``, the
aggregators draw the same noise as the in-process run, so the model agrees up to fixed-point rounding of the
clients' gradients (see :mod:`mpdp.flower`). The shares' masks and the sealing keys are fresh each round; they
cancel or only protect, so they do not change the model.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.engine import LaunchOptions
from mpdp.errors import PartyUnavailableError
from mpdp.flower.plans import app_module, check_algorithm, message_rounds, plan_run
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec import AlgorithmSpec
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.learning.spec.memory import assemble_report, decode_runs
from mpdp.learning.spec.run import RunConfig, RunReport
from mpdp.runtime.supervisor import Supervisor, free_ports, typed_error, wait_for_port

__all__ = ["FLWR_IN_MEMORY", "TASK_POLL_INTERVAL", "FlowerEngine", "FlowerRun", "flower_run", "launch", "prepared",
           "report_of", "run_deadline", "wait_for_port", "write_app"]

#: the SuperLink's ``--database`` value for state kept in memory (flwr 1.42: ``flwr.supercore.constant``)
FLWR_IN_MEMORY = ":flwr-in-memory:"
#: seconds between the SuperExec's looks for an app process to start (``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``): a
#: message waits half of it on average; each look costs CPU in every node's SuperExec, and at 0.05 s the looks of
#: a few idle nodes took a tenth of a core more than at 1 s (bench/RESULTS.md, flower); at 0.2 s they cost no
#: measurable CPU
TASK_POLL_INTERVAL = 0.2
_DEFAULTS = LaunchOptions()


@dataclass
class FlowerRun:
    """A finished Flower launch: the report (assembled by the deployment), the hub's rounds (survivors, dropouts,
    seconds each), each party's traffic through the hub (``bytes_sent``, ``bytes_received``, ``messages`` it
    sent; the hub is ``server``), the hub's seconds from its first message to its last, the launcher's wall
    seconds, and the configuration the parties ran with."""

    report: RunReport
    rounds: list[dict[str, Any]]
    per_party: dict[str, dict[str, int]]
    hub_seconds: float
    wall_seconds: float
    config: RunConfig

_BIN = Path(sys.executable).parent


def write_app(directory: str | Path, algorithm: str, module: str | None = None) -> Path:
    """A Flower app folder (``pyproject.toml``) whose components are mpdp's apps for ``algorithm`` (or the
    ``server_app`` and ``client_app`` of ``module``)."""
    if module is None:
        module = app_module(algorithm)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    package = out / "mpdp_flower_app"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text('"""Points Flower at mpdp\'s apps (mpdp must be installed)."""\n')
    (out / "pyproject.toml").write_text(f"""[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "mpdp-{algorithm}"
version = "0.1.0"
description = "mpdp's {algorithm} as a Flower app"
license = "Apache-2.0"
dependencies = ["mpdp[flower]"]

[tool.hatch.build.targets.wheel]
packages = ["mpdp_flower_app"]

[tool.flwr.app]
publisher = "mpdp"

[tool.flwr.app.components]
serverapp = "{module}:server_app"
clientapp = "{module}:client_app"

[tool.flwr.app.config]
job = ""
""")
    return out


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    from mpdp.runtime.certs import generate_demo_certificates

    creds = generate_demo_certificates(directory, ["localhost"], days=1, ca_name="mpdp flower demo CA",
                                       addresses=["127.0.0.1"])
    c = creds["localhost"]
    return Path(c.ca), Path(c.cert), Path(c.key)


def run_deadline(job: Mapping[str, Any], *, round_timeout: float, connect_timeout: float) -> float:
    """Seconds a Flower run may take: the nodes' connection, a start-up allowance for Flower's own processes, and
    every message round of the job (the hello, then two per training round) at its ``round_timeout``."""
    return connect_timeout + _STARTUP + round_timeout * message_rounds(job)


#: seconds allowed for the SuperLink's ServerApp process and ``flwr run`` to start, beyond the rounds themselves
_STARTUP = 120.0


def launch(algorithm: str, config: RunConfig, *, seed: int | None = None, tls: bool = True, max_dropouts: int = 0,
           aggregators: int = 2, round_timeout: float = _DEFAULTS.timeout,
           connect_timeout: float = _DEFAULTS.connect_timeout, timeout: float | None = None,
           crash: Mapping[str, int] | None = None, workdir: str | Path | None = None) -> FlowerRun:
    """Run ``algorithm`` on Flower with one SuperNode process per party; returns its report and the hub's figures.

    Parameters
    ----------
    config:
        What ``mpdp run`` would pass the algorithm (data, parties, budget, ``--option`` values, ``rng``).
    seed:
        Given to the aggregators' SuperNodes (experiments only): their noise then equals ``mpdp run --seed``'s.
    tls:
        HTTPS between SuperNodes, ``flwr run`` and the SuperLink, with a throw-away demo CA.
    max_dropouts:
        Clients that may miss a round (deadline ``round_timeout`` s) without aborting it.
    timeout:
        Seconds the whole run may take (default :func:`run_deadline`); past it every process is stopped and
        the run fails with :class:`~mpdp.errors.PartyUnavailableError`.
    crash:
        Fault injection for tests: client name -> round at which its ClientApp process dies mid-round.
    workdir:
        Where the data files, ledgers, logs and Flower state go (default: a temporary folder, removed after).
    """
    check_algorithm(algorithm)
    start = time.perf_counter()
    config = prepared(algorithm, config)
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="mpdp-flower-")) if workdir is None else Path(workdir)
    plan = plan_run(algorithm, config, root, seed=seed, max_dropouts=max_dropouts, aggregators=aggregators,
                    round_timeout=round_timeout, connect_timeout=connect_timeout, crash=crash)
    limit = run_deadline(plan.job, round_timeout=round_timeout, connect_timeout=connect_timeout) \
        if timeout is None else timeout
    try:
        outcome = run_app(write_app(root / "app", algorithm), plan.job, plan.nodes, root, tls=tls,
                          connect_timeout=connect_timeout, limit=limit)
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return flower_run(algorithm, config, outcome, time.perf_counter() - start)


def run_app(app: Path, job: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], root: Path, *, tls: bool,
            connect_timeout: float, limit: float) -> dict[str, Any]:
    """Run the Flower app folder ``app`` on its own :class:`Federation` of ``nodes``; the hub's result."""
    with Federation(nodes, root, tls=tls, connect_timeout=connect_timeout, limit=limit) as federation:
        return federation.submit(app, job)


class Federation:
    """A SuperLink and one SuperNode per entry of ``nodes`` (its node config) on 127.0.0.1, under a
    :class:`~mpdp.runtime.supervisor.Supervisor` (a context manager: every process is stopped on exit, and dies
    with this process). :meth:`submit` runs apps on it one after the other; past ``limit`` seconds from the
    start a run fails with :class:`~mpdp.errors.PartyUnavailableError`."""

    def __init__(self, nodes: Mapping[str, Mapping[str, Any]], root: Path, *, tls: bool, connect_timeout: float,
                 limit: float) -> None:
        self.nodes, self.root, self.tls, self.connect_timeout = dict(nodes), root, tls, connect_timeout
        self.deadline = time.monotonic() + limit
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        env = {"FLWR_SUPEREXEC_TASK_POLL_INTERVAL": str(TASK_POLL_INTERVAL), **os.environ,
               "FLWR_HOME": str(root / "flwr-home"), "PYTHONUNBUFFERED": "1",
               "PATH": f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.supervisor = Supervisor(env)
        self.runs = 0

    def __enter__(self) -> Federation:
        self.supervisor.__enter__()
        try:
            self._start()
        except BaseException:
            self.supervisor.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.supervisor.__exit__(*exc)

    def _start(self) -> None:
        port, *node_ports = free_ports(1 + len(self.nodes))
        host = "localhost" if self.tls else "127.0.0.1"
        link = [str(_BIN / "flower-superlink"), "--port", str(port), "--host", "127.0.0.1",
                "--disable-runtime-dependency-installation", "--database", FLWR_IN_MEMORY]
        node_tls = ["--insecure"]
        ca = cert = key = Path()
        if self.tls:
            ca, cert, key = _tls_files(self.root / "certs")
            link += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key), "--ssl-ca-certfile", str(ca)]
            node_tls = ["--root-certificates", str(ca)]
        else:
            link.append("--insecure")
        self.supervisor.start("superlink", link, log=self.logs / "superlink.log", merge_output=True)
        wait_for_port("127.0.0.1", port, timeout=min(60.0, max(1.0, self.deadline - time.monotonic())))
        for (name, node), node_port in zip(self.nodes.items(), node_ports, strict=True):
            text = " ".join(f"{k}={json.dumps(v)}" for k, v in node.items())
            self.supervisor.start(name, [str(_BIN / "flower-supernode"), *node_tls, "--superlink", f"{host}:{port}",
                                         "--port", str(node_port), "--node-config", text, "--max-wait-time",
                                         str(self.connect_timeout)], log=self.logs / f"{name}.log",
                                  merge_output=True)
        flwr_home = self.root / "flwr-home"
        flwr_home.mkdir(exist_ok=True)
        conn = [f'address = "{host}:{port}"']
        conn.append(f'root-certificates = "{ca}"' if self.tls else "insecure = true")
        (flwr_home / "config.toml").write_text("[superlink]\ndefault = \"mpdp\"\n\n[superlink.mpdp]\n"
                                               + "\n".join(conn) + "\n")

    def submit(self, app: Path, job: Mapping[str, Any]) -> dict[str, Any]:
        """Run the app folder ``app`` with ``job`` (its JSON handed to the ServerApp as ``run_config["job"]``);
        the hub's result, read from ``job["output"]``, or its typed error."""
        self.runs += 1
        path = self.root / f"job-{self.runs}.json"
        path.write_text(json.dumps(job))
        name = f"flwr-run-{self.runs}"
        command = [str(_BIN / "flwr"), "run", str(app), "mpdp", "--run-config", f'job="{path}"']
        submit = self.supervisor.start(name, command, log=self.logs / f"{name}.log", merge_output=True)
        self.supervisor.wait(deadline=min(self.deadline, time.monotonic() + 120.0), grace=0.0, names=[name])
        if submit.returncode != 0:
            raise PartyUnavailableError(f"flwr run could not submit the app ({submit.describe()}): "
                                        f"{submit.output()[-1500:]}")
        return _await_outcome(Path(job["output"]), self.root, self.supervisor, deadline=self.deadline)


def prepared(algorithm: str, config: RunConfig) -> RunConfig:
    """``config`` as ``algorithm``'s parties run it: its spec's settings, then its deployment's changes (what a
    gRPC launch of the same run makes of it)."""
    return deployment_for(algorithm).prepare(get_algorithm(algorithm).configure(config))


def flower_run(algorithm: str, config: RunConfig, outcome: Mapping[str, Any], wall: float) -> FlowerRun:
    """The finished launch of the hub's result ``outcome`` (``config`` as :func:`prepared` makes it)."""
    per_party = {name: {"bytes_sent": sum(int(r["traffic"]["bytes_sent"]) for r in runs),
                        "bytes_received": sum(int(r["traffic"]["bytes_received"]) for r in runs),
                        "messages": sum(int(r["traffic"]["messages_sent"]) for r in runs)}
                 for name, runs in outcome["runs"].items()}
    return FlowerRun(report_of(algorithm, config, outcome, wall), list(outcome["rounds"]), per_party,
                     float(outcome["seconds"]), wall, config)


def report_of(algorithm: str, config: RunConfig, outcome: Mapping[str, Any], seconds: float) -> RunReport:
    """The report of the hub's result ``outcome`` (the deployed parties' runs), assembled by ``algorithm``'s
    deployment from the same plan a deployment of ``config`` makes; ``seconds``: the run's ``train`` phase.
    A mechanism the Flower app runs in place of the deployment's (MPC Out P's distributed Laplace) replaces the
    report's ``privacy`` details with its own."""
    deployment = deployment_for(algorithm)
    plan = deployment.plan(algorithm, config)
    shared = shared_parameters(plan)
    outcomes = {name: decode_runs(deployment, name, runs, shared) for name, runs in outcome["runs"].items()}
    report = assemble_report(deployment, config, plan, outcomes, {"train": seconds})
    if "privacy" in outcome:
        report.extra["privacy"] = dict(outcome["privacy"])
    return report


class FlowerEngine:
    """``mpdp launch --engine flower``: :func:`launch` as an :class:`~mpdp.deploy.engine.Engine`; the report's
    ``deployment`` adds the hub's rounds (survivors, dropouts, seconds) and each client's bytes. ``timeout`` is a
    message round's deadline."""

    name = "flower"

    def launch(self, spec: AlgorithmSpec, config: RunConfig, options: LaunchOptions) -> RunReport:
        aggregators = int(getattr(config.settings, "aggregators", 2))
        options.progress.phase(f"{spec.name}: starting a SuperLink and {config.parties + aggregators} SuperNodes "
                               "(Flower)")
        run = launch(spec.name, config, seed=options.seed, round_timeout=options.timeout,
                     connect_timeout=options.connect_timeout, workdir=options.keep, tls=options.tls,
                     max_dropouts=options.max_dropouts, aggregators=aggregators)
        report = run.report
        report.extra["deployment"] = {
            "processes": config.parties + aggregators + 1,
            "transport": "flower-https" if options.tls else "flower-http", "engine": self.name,
            "wall_seconds": run.wall_seconds, "protocol_seconds": run.hub_seconds,
            "startup_seconds": None, "startup_cpu_seconds": None, "per_party": run.per_party, "rounds": run.rounds}
        report.extra["options"] = dict(run.config.options)
        return report


def _await_outcome(path: Path, root: Path, supervisor: Supervisor, *, deadline: float) -> dict[str, Any]:
    """The hub's result, written (atomically) by the ServerApp when the run ends, typed error or model; a
    SuperLink that ends first, or the deadline, ends the wait with PartyUnavailableError."""
    link = supervisor.children["superlink"]
    while not path.exists():
        supervisor.poll()
        if link.ended is not None and not path.exists():
            raise PartyUnavailableError(f"the SuperLink ended ({link.describe()}) before the run gave a result: "
                                        f"{link.output()[-800:]} (logs in {root / 'logs'})")
        if time.monotonic() > deadline:
            raise PartyUnavailableError(f"the Flower run gave no result before its deadline; logs in {root / 'logs'} "
                                        "(pass workdir= to keep them). Fix: raise the timeout if the run is "
                                        "legitimately slow")
        time.sleep(0.5)
    record = json.loads(path.read_text())
    if "error" in record:
        raise typed_error(str(record["error"]["type"]), str(record["error"]["message"]))
    result: dict[str, Any] = record["ok"]
    return result
