"""The deployment fault matrix over real processes: a party killed, stopped, never started, or holding a foreign
certificate, at start-up, at the handshake and mid-run. Each honest party ends with a typed error naming the
faulty one, and the honest data parties' ledgers are charged exactly when a protocol message has left them, and
agree with each other.

The algorithm is paper 000's functional mechanism on 60 rows (``party0`` holds the label, ``party1`` the other
columns, ``server`` no data). What left whom follows from its message order: each data party sends its record
count to the server as soon as its handshake completes, and the server sends the plan only once it has every
count. The faults are placed by what the faulty party has done (``tests/deploy/fault_party.py``), not by time;
the only short timeouts are those whose expiry is the expected outcome (a party that never answers).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grpc")

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.launcher import _python_command, party_environment, prepare_folders
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.learning.registry import get_algorithm
from mpdp.runtime.certs import generate_party_folders
from mpdp.runtime.guard import descendants
from tests.processes import cmdline, gone, kill_launcher

pytestmark = pytest.mark.net

ALGORITHM = "fm-logistic"
ROOT = Path(__file__).resolve().parents[2]
DATA_PARTIES = ("party0", "party1")
#: (victim, fault, point, honest data parties that must be charged)
MATRIX = {
    "never started": ("party1", "never", "", ()),
    "killed at start-up": ("party1", "kill", "start", ()),
    "stopped at start-up": ("server", "stop", "start", ()),
    "foreign certificate": ("party1", "foreign", "", ()),
    "killed after the handshake": ("party1", "kill", "ready", ("party0",)),  # party0 sent its count
    "killed mid-run": ("server", "kill", "recv:2", ("party0", "party1")),  # after it received both counts
    "stopped mid-run": ("server", "stop", "recv:2", ("party0", "party1")),
    "data party killed mid-run": ("party1", "kill", "recv:1", ("party0",)),  # after the plan: every count sent
}
#: the fault's expiry is the expected outcome: these timeouts are short; the others only bound a failure
SHORT = {"never started": {"connect_timeout": 6.0}, "stopped at start-up": {"connect_timeout": 6.0},
         "killed at start-up": {"connect_timeout": 6.0},  # the others may never have seen it listening
         "stopped mid-run": {"timeout": 6.0}}


def _plan() -> Any:
    args = build_parser().parse_args(["run", ALGORITHM, "--dataset", "synthetic-mixed:n=60", "--seed", "5"])
    config = build_config(get_algorithm(ALGORITHM), args)
    return deployment_for(ALGORITHM).plan(ALGORITHM, config)


@pytest.fixture(scope="module")
def plan() -> Any:
    return _plan()


def _ledger_state(folder: Path, name: str) -> list[tuple[str | None, str]]:
    path = folder / name / "ledger.json"
    if not path.exists():
        return []
    return [(e.run, e.state) for e in PrivacyLedger.open(path).entries if e.counts]


def _launch_by_hand(folder: Path, plan: Any, case: str, run: str) -> dict[str, tuple[int, str]]:
    victim, fault, point, _ = MATRIX[case] if case in MATRIX else ("", "none", "", ())
    limits = {"timeout": 120.0, "connect_timeout": 120.0, **SHORT.get(case, {})}
    overrides: dict[str, dict[str, Any]] = {}
    if fault == "foreign":
        generate_party_folders(folder / "foreign", [victim], ca_name="an unrelated CA")
        overrides[victim] = {"certs": str(folder / "foreign" / victim)}
    folders = prepare_folders(folder, ALGORITHM, plan, epsilon=1.0, delta=0.0, seed=5, overrides=overrides,
                              run=run, **limits)
    env = party_environment(len(folders))
    procs: dict[str, subprocess.Popen[str]] = {}
    for name, p in folders.items():
        if name == victim and fault == "never":
            continue
        if name == victim and fault in ("kill", "stop"):
            command = [sys.executable, "-m", "tests.deploy.fault_party", fault, point, str(p.config), name]
        else:
            command = [*_python_command(), "party", "--config", str(p.config), "--name", name]
        procs[name] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
    ended: dict[str, tuple[int, str]] = {}
    try:
        for name, proc in procs.items():
            if name != victim:
                _, err = proc.communicate(timeout=300)  # bounds a failure only
                ended[name] = (proc.returncode, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.communicate()
    return ended


@pytest.mark.parametrize("case", list(MATRIX))
def test_honest_ledgers_are_charged_only_once_data_left_them_and_agree(tmp_path: Path, plan: Any, case: str) -> None:
    victim, fault, _, charged = MATRIX[case]
    run = "fault-" + case.replace(" ", "-")
    ended = _launch_by_hand(tmp_path, plan, case, run)
    expected = {"foreign": ("AuthenticationError", "ProtocolAbortError")}.get(
        fault, ("PartyUnavailableError", "ProtocolAbortError"))
    for name, (code, err) in ended.items():
        line = err.strip().splitlines()[-1]
        assert code == 2 and line.startswith("mpdp: error: ") and victim in line, (name, err[-800:])
        assert line.removeprefix("mpdp: error: ").split(":")[0] in expected, (name, line)
    # the fault is named for what it was by the party that met it first (the others may relay that party's abort)
    first = {"never": "never came up", "foreign": "could not authenticate",
             "stop": "accepts connections but does not answer"}.get(fault)
    if first is not None:
        assert any(first in err for _, err in ended.values()), {n: e[-400:] for n, (_, e) in ended.items()}
    honest = [p for p in DATA_PARTIES if p != victim]
    states = {p: _ledger_state(tmp_path, p) for p in honest}
    for p in honest:
        assert states[p] == ([(run, "spent")] if p in charged else []), (p, states)
    assert len({tuple(s) for p, s in states.items() if p in charged}) <= 1  # the charged ones agree


def test_a_rerun_into_the_same_folder_leaves_the_ledgers_agreeing(tmp_path: Path, plan: Any) -> None:
    # a launch that fails at start-up charges nobody, so its id may run again: that run charges everyone once;
    # the same id again is refused by every data party (it would release again), and a new id finds every budget
    # spent; both refusals come before anything is sent, and leave the ledgers as they were
    _launch_by_hand(tmp_path, plan, "killed at start-up", "first")
    assert all(_ledger_state(tmp_path, p) == [] for p in DATA_PARTIES if p != "party1")
    ended = _launch_by_hand(tmp_path, plan, "rerun", "first")
    assert all(code == 0 for code, _ in ended.values()), ended
    spent = {p: [("first", "spent")] for p in DATA_PARTIES}
    assert {p: _ledger_state(tmp_path, p) for p in DATA_PARTIES} == spent
    for run, refusal in (("first", "charged already"), ("second", "BudgetExceededError")):
        ended = _launch_by_hand(tmp_path, plan, "rerun", run)
        assert all(code == 2 for code, _ in ended.values())
        assert all(refusal in ended[p][1] for p in DATA_PARTIES), ended
        assert {p: _ledger_state(tmp_path, p) for p in DATA_PARTIES} == spent


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the launcher's processes")
def test_kill_9_of_mpdp_launch_leaves_no_party_running(tmp_path: Path) -> None:
    # a long run (3000 rounds), killed once every party process has started; the waits only bound failures
    argv = ["launch", "mpc-gradp", "--dataset", "synthetic-mixed:n=200", "--seed", "5", "--option", "T=3000",
            "--option", "cohort=1", "--parties", "2", "--keep", str(tmp_path / "run"),
            "--connect-timeout", "600", "--timeout", "600"]  # its own waits never expire before the kill
    launcher = subprocess.Popen([*_python_command(), *argv], cwd=ROOT, env=party_environment(1),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parties: list[int] = []
    try:
        deadline = time.monotonic() + 600  # only bounds a failure
        while time.monotonic() < deadline:
            expected = len(list((tmp_path / "run").glob("*/config.json")))
            parties = [p for p in descendants([launcher.pid]) if " party --config " in cmdline(p)]
            if expected and len(parties) == expected:
                break
            assert launcher.poll() is None, "the launch ended before the test could kill it"
            time.sleep(0.1)
        assert parties, "the parties did not start"
        tree = descendants([launcher.pid])
        kill_launcher(launcher, tree)
        assert all(gone(p) for p in tree), [(p, cmdline(p)[:80]) for p in tree if not gone(p)]
    finally:
        for pid in parties:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
