"""Start a SuperLink and one SuperNode per party on 127.0.0.1, run an mpdp Flower app, return ``mpdp run``'s record.

:func:`launch` prepares the data exactly as ``mpdp run`` does (same split, same row order), writes each client's
rows to its own file, starts ``flower-superlink`` (HTTPS with a demo CA unless ``tls=False``), one
``flower-supernode`` per data party and per aggregator (each with its own ``--node-config``: role, name, data
file, ledger file), submits the app with ``flwr run`` and waits for it. It returns the JSON record of
``mpdp run`` with ``"engine": "flower"``, the model, the per-round survivors and the bytes each client
exchanged. Every process it started is stopped on return, by process-group id.

Equality with ``mpdp run``: with the same :class:`~mpdp.learning.registry.RunConfig` whose ``rng`` is
``RandomSource.seeded(seed).spawn("algorithm")`` (what ``mpdp run --seed seed`` builds) and ``seed=seed``, the
aggregators draw the same noise as the in-process run, so the model agrees up to fixed-point rounding of the
clients' gradients (see :mod:`mpdp.flower`). The shares' masks and the sealing keys are fresh each round; they
cancel or only protect, so they do not change the model.
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpdp import errors
from mpdp.errors import MpdpError, ParameterError, PartyUnavailableError, ProtocolAbortError, explain
from mpdp.flower.nodes import write_rows
from mpdp.learning.distributed_erm.experiments import equal_parts, prepare
from mpdp.learning.registry import RunConfig

__all__ = ["APPS", "RunPlan", "launch", "plan_run", "result_record", "wait_for_port", "write_app"]

#: Algorithm -> module holding its ``server_app`` and ``client_app``.
APPS = {"mpc-gradp": "mpdp.flower.gradp"}
_BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, *, timeout: float) -> None:
    """Return once ``host:port`` accepts connections; :class:`PartyUnavailableError` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise PartyUnavailableError(
                    f"the SuperLink at {host}:{port} is not reachable after {timeout:g} s ({exc}). Fix: start "
                    "flower-superlink there, or check the address and firewall") from exc
            time.sleep(0.2)


def write_app(directory: str | Path, algorithm: str) -> Path:
    """A Flower app folder (``pyproject.toml``) whose components are mpdp's apps for ``algorithm``."""
    if algorithm not in APPS:
        raise ParameterError(explain("algorithm", algorithm, f"one of {sorted(APPS)}", "pick a Flower-ready one"))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    package = out / "mpdp_flower_app"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text('"""Points Flower at mpdp\'s apps (mpdp must be installed)."""\n')
    module = APPS[algorithm]
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


class _Processes:
    """The processes this launch started (each in its own session), stopped by group id."""

    def __init__(self, logs: Path, env: Mapping[str, str]) -> None:
        self.logs, self.env = logs, dict(env)
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(list(args), stdout=log,  # noqa: S603 - Flower's own executables stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)
        log.close()
        self.started.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.started:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5.0
        for proc in self.started:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    from mpdp.runtime.certs import generate_demo_certificates

    creds = generate_demo_certificates(directory, ["localhost"], days=1, ca_name="mpdp flower demo CA",
                                       addresses=["127.0.0.1"])
    c = creds["localhost"]
    return Path(c.ca), Path(c.cert), Path(c.key)


@dataclass(frozen=True)
class RunPlan:
    """A Flower run laid out: the hub's job, every node's config (by party name), the prepared data."""

    job: dict[str, Any]
    nodes: dict[str, dict[str, Any]]
    prepared: Any


def plan_run(algorithm: str, config: RunConfig, root: Path, *, seed: int | None = None, max_dropouts: int = 0,
             aggregators: int = 2, round_timeout: float = 60.0, connect_timeout: float = 120.0,
             crash: Mapping[str, int] | None = None) -> RunPlan:
    """Split and prepare the data as ``mpdp run`` does, write each client's rows and the hub's job under ``root``.

    The clients are ``party0 ..`` in ``mpdp run``'s party order; the aggregators ``agg0 ..``.
    """
    if algorithm not in APPS:
        raise ParameterError(explain("algorithm", algorithm, f"one of {sorted(APPS)}", "pick a Flower-ready one"))
    lam = float(config.options.get("lam", 1e-3))
    prepared = prepare(config.train, config.test, lam=lam)
    if config.row_partition is not None:
        indices = sorted((np.asarray(i, dtype=np.int64) for i in config.row_partition), key=len)
    else:
        indices = equal_parts(config.train, config.parties, rng=config.rng.spawn("rows"))
    root.mkdir(parents=True, exist_ok=True)
    clients = [f"party{j}" for j in range(len(indices))]
    aggs = [f"agg{i}" for i in range(aggregators)]
    nodes: dict[str, dict[str, Any]] = {}
    for name in aggs:
        nodes[name] = {"role": "aggregator", "name": name}
        if seed is not None:
            nodes[name]["seed"] = int(seed)
    for name, idx in zip(clients, indices, strict=True):
        write_rows(root / f"{name}.npz", prepared.X[idx], prepared.y[idx])
        nodes[name] = {"role": "client", "name": name, "data": str(root / f"{name}.npz"),
                       "ledger": str(root / f"{name}.ledger.json")}
        if crash and name in crash:
            nodes[name]["crash_at"] = int(crash[name])
    job = _job(algorithm, config, root, clients, aggs, max_dropouts=max_dropouts, round_timeout=round_timeout,
               connect_timeout=connect_timeout, d=int(prepared.X.shape[1]))
    (root / "job.json").write_text(json.dumps(job))
    return RunPlan(job, nodes, prepared)


def _job(algorithm: str, config: RunConfig, workdir: Path, clients: Sequence[str], aggregators: Sequence[str], *,
         max_dropouts: int, round_timeout: float, connect_timeout: float, d: int) -> dict[str, Any]:
    opts = config.options
    T = int(opts.get("T", 100))
    record = [int(t) for t in np.unique(np.rint(np.geomspace(1, T, min(T, 60))))]
    return {"algorithm": algorithm, "task": config.train.task, "lam": float(opts.get("lam", 1e-3)), "d": d, "T": T,
            "eta": float(opts.get("eta", 1.0)), "epsilon": config.epsilon, "delta": config.delta,
            "accountant": str(opts.get("accountant", "zcdp")), "frac_bits": 24, "aggregators": list(aggregators),
            "clients": list(clients), "max_dropouts": max_dropouts, "stop_after": None, "record": record,
            "round_timeout": round_timeout, "connect_timeout": connect_timeout,
            "output": str(workdir / "result.json")}


def launch(algorithm: str, config: RunConfig, *, seed: int | None = None, tls: bool = True, max_dropouts: int = 0,
           aggregators: int = 2, round_timeout: float = 60.0, connect_timeout: float = 120.0,
           timeout: float = 1800.0, crash: Mapping[str, int] | None = None,
           workdir: str | Path | None = None) -> dict[str, Any]:
    """Run ``algorithm`` on Flower with one SuperNode process per party; returns ``mpdp run``'s JSON record.

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
    crash:
        Fault injection for tests: client name -> round at which its ClientApp process dies mid-round.
    workdir:
        Where the data files, ledgers, logs and Flower state go (default: a temporary folder, removed after).
    """
    if algorithm not in APPS:
        raise ParameterError(explain("algorithm", algorithm, f"one of {sorted(APPS)}", "pick a Flower-ready one"))
    start = time.perf_counter()
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="mpdp-flower-")) if workdir is None else Path(workdir)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    plan = plan_run(algorithm, config, root, seed=seed, max_dropouts=max_dropouts, aggregators=aggregators,
                    round_timeout=round_timeout, connect_timeout=connect_timeout, crash=crash)
    job = plan.job
    app = write_app(root / "app", algorithm)
    env = {**os.environ, "FLWR_HOME": str(root / "flwr-home"), "PYTHONUNBUFFERED": "1",
           "PATH": f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    procs = _Processes(root / "logs", env)
    port = _free_port()
    host = "localhost" if tls else "127.0.0.1"
    try:
        link = [str(_BIN / "flower-superlink"), "--port", str(port), "--host", "127.0.0.1",
                "--disable-runtime-dependency-installation", "--database", str(root / "superlink.db")]
        node_tls = ["--insecure"]
        ca = cert = key = Path()
        if tls:
            ca, cert, key = _tls_files(root / "certs")
            link += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key), "--ssl-ca-certfile", str(ca)]
            node_tls = ["--root-certificates", str(ca)]
        else:
            link.append("--insecure")
        procs.start("superlink", link)
        wait_for_port("127.0.0.1", port, timeout=60.0)
        for name, node in plan.nodes.items():
            text = " ".join(f"{k}={json.dumps(v)}" for k, v in node.items())
            procs.start(name, [str(_BIN / "flower-supernode"), *node_tls, "--superlink", f"{host}:{port}", "--port",
                               str(_free_port()), "--node-config", text, "--max-wait-time", str(connect_timeout)])
        flwr_home = root / "flwr-home"
        flwr_home.mkdir(exist_ok=True)
        conn = [f'address = "{host}:{port}"']
        conn.append(f'root-certificates = "{ca}"' if tls else "insecure = true")
        (flwr_home / "config.toml").write_text("[superlink]\ndefault = \"mpdp\"\n\n[superlink.mpdp]\n"
                                               + "\n".join(conn) + "\n")
        command = [str(_BIN / "flwr"), "run", str(app), "mpdp", "--stream", "--run-config",
                   f'job="{root / "job.json"}"']
        with (root / "logs" / "flwr-run.log").open("wb") as log:
            try:
                submitted = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,  # noqa: S603 - Flower's CLI
                                           env=env, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise PartyUnavailableError(f"the Flower run did not finish within {timeout:g} s; logs in "
                                            f"{root / 'logs'} (pass workdir= to keep them)") from exc
        outcome = _read_outcome(Path(job["output"]), submitted.returncode, root)
    finally:
        procs.stop()
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return result_record(algorithm, config, plan.prepared, job, outcome, time.perf_counter() - start)


def _read_outcome(path: Path, code: int, root: Path) -> dict[str, Any]:
    if not path.exists():
        tail = (root / "logs" / "flwr-run.log").read_text(errors="replace")[-2000:]
        raise ProtocolAbortError(f"the Flower run ended (flwr exit code {code}) without a result; its log ends: {tail}")
    record = json.loads(path.read_text())
    if "error" in record:
        cls = getattr(errors, str(record["error"]["type"]), None)
        if not (isinstance(cls, type) and issubclass(cls, MpdpError)):
            cls = ProtocolAbortError
        raise cls(str(record["error"]["message"]))
    result: dict[str, Any] = record["ok"]
    return result


def result_record(algorithm: str, config: RunConfig, prepared: Any, job: Mapping[str, Any], out: Mapping[str, Any],
            seconds: float) -> dict[str, Any]:
    from mpdp.learning.distributed_erm.experiments import config_name

    ev = prepared.evaluator
    theta = np.asarray(out["theta"], dtype=np.float64)
    score = ev.score(theta)
    cal = out["calibration"]
    per_client = list(out["bytes_per_client"].values())
    xs = [float(t) for t in out["recorded"]]
    iterates = [np.asarray(v) for v in out["iterates"]]
    curves = [{"name": "optimality gap", "x": xs, "y": [ev.optimality_gap(t) for t in iterates], "x_label": "T",
               "y_label": "J(theta) - J(theta*)"},
              {"name": f"test {ev.metric_name}", "x": xs, "y": [ev.test_metric(t) for t in iterates], "x_label": "T",
               "y_label": ev.metric_name}] if xs else []
    return {
        "algorithm": config_name(algorithm, config.train.task), "engine": "flower", "dataset": config.train.name,
        "parties": len(job["clients"]), "epsilon": config.epsilon, "delta": config.delta,
        "epsilon_spent": cal["epsilon_zcdp"] if cal["accountant"] == "zcdp" else cal["epsilon_exact"],
        "delta_spent": config.delta, "per_party_epsilon": None,
        "metric": {"name": ev.metric_name, "value": score.test_metric},
        "non_private": {"name": ev.metric_name, "value": ev.metric_star}, "seconds": seconds,
        "communication": {"bytes": int(sum(per_client)), "messages": 2 * len(out["rounds"]) * len(per_client),
                          "rounds": 2 * len(out["rounds"]) + 1},
        "curves": curves, "optimality_gap": score.optimality_gap,
        "relative_accuracy_loss": score.relative_accuracy_loss, "n_min": out["n_min"], "T": job["T"],
        "party_rows": out["party_rows"], "privacy": cal, "theta": out["theta"], "rounds": out["rounds"],
        "bytes_per_client": float(np.mean(per_client)) if per_client else 0.0, "flower_seconds": out["seconds"],
        "options": dict(config.options), "train_rows": config.train.n, "test_rows": config.test.n,
    }
