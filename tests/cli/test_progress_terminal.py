"""Every long-running command, watched on a terminal, says what it is doing before it does it.

Each command runs in its own process with stderr on a pseudo-terminal (as a person at a terminal would see
it) and stdout on a pipe. The checks are about order, not about the machine's speed, so a loaded machine
cannot fail them:

* the command's first output is a phase line (``mpdp [m:ss] ...``), printed before any long phase starts:
  it comes 0 s after the first output by construction, and its stamp (measured by the child itself from
  the start of ``main``) is under 5 s;
* the phase that takes the time is announced (its phase line comes before its bar and before the result);
* where the command runs a loop, a tqdm bar is drawn;
* stdout holds the result only (one JSON object under ``--json``): no phase line or bar ever reaches it.

The overall deadline is generous (minutes): it only stops a hung command.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "GRPC_VERBOSITY": "ERROR", "PYTHONWARNINGS": "ignore"}
PHASE = re.compile(r"^mpdp \[(\d+):(\d\d)\] (.*)$")
BAR = re.compile(r"\d+%\|.*\| *\d+/\d+")
DEADLINE = 600.0


@dataclass
class Watched:
    code: int
    stdout: str
    lines: list[str]  # what the terminal showed on stderr, split at carriage returns and newlines
    first_output: float  # monotonic time of the first bytes on the terminal
    first_phase: float  # monotonic time of the bytes holding the first phase line

    def phases(self) -> list[str]:
        return [m.group(3) for line in self.lines if (m := PHASE.match(line))]

    def index(self, pattern: str) -> int:
        """The position of the first terminal line matching ``pattern``."""
        return next(i for i, line in enumerate(self.lines) if re.search(pattern, line))


def watch(args: list[str], *, cwd: Path = ROOT) -> Watched:
    """Run ``mpdp ARGS`` with stderr on a 120 x 30 pseudo-terminal and stdout on a pipe."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "mpdp", *args], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks: list[tuple[float, bytes]] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            chunks.append((time.monotonic(), data))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    os.close(master)
    assert chunks, "nothing on the terminal"
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    lines = [line.strip() for line in re.split(r"[\r\n]+", text) if line.strip()]
    seen, first_phase = "", math.inf
    for when, data in chunks:
        seen += data.decode("utf-8", "replace")
        if re.search(r"^mpdp \[\d+:\d\d\] ", seen.replace("\r", "\n"), re.MULTILINE):
            first_phase = when
            break
    return Watched(proc.returncode, stdout.decode(), lines, chunks[0][0], first_phase)


def check_start(run: Watched) -> None:
    """The first thing on the terminal is a phase line, within 5 s of the child's start of main (its stamp)."""
    assert run.code == 0, "\n".join(run.lines[-20:])
    first = PHASE.match(run.lines[0])
    assert first, run.lines[:3]
    assert int(first.group(1)) * 60 + int(first.group(2)) < 5
    assert run.first_phase - run.first_output < 5.0
    assert "mpdp [" not in run.stdout and "%|" not in run.stdout  # progress never reaches stdout


def test_run_announces_each_phase_and_draws_the_training_bar() -> None:
    run = watch(["run", "mpc-gradp", "--dataset", "synthetic-logistic:n=600,d=3", "--option", "T=40", "--seed", "1",
                 "--json"])
    check_start(run)
    training = run.index(r"mpc-gradp: training")
    bar = next(i for i, line in enumerate(run.lines) if BAR.search(line) and "iterations" in line)
    assert run.index(r"loading synthetic-logistic") < training < bar
    assert json.loads(run.stdout)["algorithm"] == "mpc-gradp"


def test_a_paillier_product_shows_its_encryption_and_its_products() -> None:
    run = watch(["run", "fm-logistic", "--backend", "paillier", "--dataset", "synthetic-logistic:n=300,d=3",
                 "--seed", "1"])
    check_start(run)
    encrypting = run.index(r"party\d: encrypting .* rows .* \(Paillier\)")
    assert any(BAR.search(line) and "encrypting" in line for line in run.lines[encrypting:])
    assert run.index(r"computing Enc\(Y\^T X\)") > run.index(r"cross-party product")
    assert "fm-logistic on synthetic-logistic" in run.stdout


def test_reproduce_shows_its_repetitions() -> None:
    run = watch(["reproduce", "000-table2", "--quick", "--repetitions", "1", "--seed", "1"])
    check_start(run)
    assert run.index(r"reproduce 000-table2: Paper 000 Table 2") < run.index(r"repetitions")
    assert any(BAR.search(line) and "repetitions" in line for line in run.lines)
    assert "000-table2" in run.stdout


def test_audit_shows_its_samples() -> None:
    run = watch(["audit", "discrete-laplace", "--quick", "--seed", "1", "--json"])
    check_start(run)
    assert run.phases()[0] == "audit 1 of 1: discrete-laplace"
    assert any(BAR.search(line) and "samples" in line for line in run.lines)
    assert json.loads(run.stdout)["audits"][0]["name"] == "discrete-laplace"


def test_align_shows_the_alignment_steps(tmp_path: Path) -> None:
    ids = [f"p{k:04d}" for k in range(300)]
    (tmp_path / "a.csv").write_text("id,x\n" + "".join(f"{i},{k}\n" for k, i in enumerate(ids[:200])))
    (tmp_path / "b.csv").write_text("id,y\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids[100:])))
    run = watch(["align", "--data", f"a={tmp_path / 'a.csv'}", "--data", f"b={tmp_path / 'b.csv'}",
                 "--id-column", "id", "--out", str(tmp_path / "out"), "--json"])
    check_start(run)
    phases = run.phases()
    assert phases[0].startswith("align: reading")
    assert [p for p in phases if p.startswith("a: alignment:")] == [
        "a: alignment: hashing and keying 200 ids (2 parties)", "a: alignment: keying b's 200 ids (hop 1 of 1)",
        "a: alignment: intersecting the keyed lists"]
    assert json.loads(run.stdout)["aligned_rows"] == 100


def test_bench_says_which_suite_it_runs() -> None:
    run = watch(["bench", "runtime", "--quick", "--json"])
    check_start(run)
    assert run.phases()[0] == "bench runtime: running `python -m bench runtime` in a child process (quick)"
    assert json.loads(run.stdout)["suite"] == "runtime"


@pytest.mark.net
def test_launch_announces_the_parties_before_waiting_for_them() -> None:
    run = watch(["launch", "ofaa", "--dataset", "synthetic-logistic:n=300,d=3", "--seed", "1", "--json"])
    check_start(run)
    starting = run.index(r"starting \d+ party processes")
    assert run.index(r"writing the folders") < starting < run.index(r"assembling the report")
    assert any(BAR.search(line) and "parties finished" in line for line in run.lines[starting:])
    assert json.loads(run.stdout)["deployment"]["processes"] >= 3


@pytest.mark.net
def test_party_says_whom_it_waits_for(tmp_path: Path) -> None:
    from mpdp.runtime.certs import generate_demo_certificates

    names = ("alice", "bob")
    generate_demo_certificates(tmp_path / "certs", names)
    ports = []
    for _ in names:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    config = {"protocol": "secure-sum", "parties": {n: f"127.0.0.1:{p}" for n, p in zip(names, ports, strict=True)},
              "certs": str(tmp_path / "certs"), "inputs": {n: {"synthetic": {"seed": 1, "shape": [5]}} for n in names},
              "params": {}, "timeout": 60, "connect_timeout": 60}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(config))
    bob = subprocess.Popen([sys.executable, "-m", "mpdp", "party", "--config", str(path), "--name", "bob", "--json"],
                           cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        run = watch(["party", "--config", str(path), "--name", "alice", "--json"])
    finally:
        bob.communicate(timeout=DEADLINE)
    check_start(run)
    assert run.phases() == [f"party: reading {path}", "alice: connecting to bob (up to 60 s) and running secure-sum"]
    assert json.loads(run.stdout)["party"] == "alice"


def test_off_a_terminal_nothing_but_the_result_is_printed() -> None:
    done = subprocess.run([sys.executable, "-m", "mpdp", "run", "mpc-gradp", "--dataset",
                           "synthetic-logistic:n=600,d=3", "--option", "T=40", "--seed", "1", "--json"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=DEADLINE, check=False)
    assert done.returncode == 0 and json.loads(done.stdout)["algorithm"] == "mpc-gradp"
    assert "mpdp [" not in done.stderr and "%|" not in done.stderr
