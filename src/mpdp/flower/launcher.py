"""Start a SuperLink and one SuperNode per party on 127.0.0.1, run an mpdp Flower app, return ``mpdp run``'s record.

:func:`launch` prepares the data exactly as ``mpdp run`` does (same split, same row order), writes each client's
rows to its own file, starts ``flower-superlink`` (HTTPS with a demo CA unless ``tls=False``), one
``flower-supernode`` per data party and per aggregator (each with its own ``--node-config``: role, name, data
file, ledger file), submits the app with ``flwr run`` and waits for it. It returns the JSON record of
``mpdp run`` with ``"engine": "flower"``, the model, the per-round survivors and the bytes each client
exchanged. Every process it started is stopped on return, by process-group id.

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
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mpdp import errors
from mpdp.errors import MpdpError, PartyUnavailableError, ProtocolAbortError
from mpdp.flower.plans import app_module, check_algorithm, plan_run, result_record
from mpdp.learning.spec.run import RunConfig

__all__ = ["launch", "wait_for_port", "write_app"]

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
    check_algorithm(algorithm)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    package = out / "mpdp_flower_app"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text('"""Points Flower at mpdp\'s apps (mpdp must be installed)."""\n')
    module = app_module(algorithm)
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
        proc = subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT,  # noqa: S603 - Flower's own CLIs
                                env=self.env,
                                start_new_session=True)
        log.close()
        self.started.append(proc)
        return proc

    def stop(self) -> None:
        # Flower's SuperLink and SuperNodes start their SuperExec and app processes in sessions of their own:
        # find them by parent id first, so that every process this launch caused is stopped.
        for pid in _descendants([p.pid for p in self.started]):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
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


def _descendants(roots: Sequence[int]) -> list[int]:
    """Every live descendant of ``roots`` (Linux ``/proc``; elsewhere none are found)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    from mpdp.runtime.certs import generate_demo_certificates

    creds = generate_demo_certificates(directory, ["localhost"], days=1, ca_name="mpdp flower demo CA",
                                       addresses=["127.0.0.1"])
    c = creds["localhost"]
    return Path(c.ca), Path(c.cert), Path(c.key)


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
    check_algorithm(algorithm)
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
        command = [str(_BIN / "flwr"), "run", str(app), "mpdp", "--run-config", f'job="{root / "job.json"}"']
        with (root / "logs" / "flwr-run.log").open("wb") as log:
            submitted = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,  # noqa: S603 - Flower's CLI
                                       env=env, timeout=120.0, check=False)
        if submitted.returncode != 0:
            tail = (root / "logs" / "flwr-run.log").read_text(errors="replace")[-1500:]
            raise PartyUnavailableError(f"flwr run could not submit the app (exit code {submitted.returncode}): {tail}")
        outcome = _await_outcome(Path(job["output"]), root, deadline=time.monotonic() + timeout)
    finally:
        procs.stop()
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return result_record(config, plan, outcome, time.perf_counter() - start)


def _await_outcome(path: Path, root: Path, *, deadline: float) -> dict[str, Any]:
    """The hub's result, written (atomically) by the ServerApp when the run ends, typed error or model."""
    while not path.exists():
        if time.monotonic() > deadline:
            raise PartyUnavailableError(f"the Flower run gave no result in time; logs in {root / 'logs'} (pass "
                                        "workdir= to keep them)")
        time.sleep(0.5)
    record = json.loads(path.read_text())
    if "error" in record:
        cls = getattr(errors, str(record["error"]["type"]), None)
        if not (isinstance(cls, type) and issubclass(cls, MpdpError)):
            cls = ProtocolAbortError
        raise cls(str(record["error"]["message"]))
    result: dict[str, Any] = record["ok"]
    return result
