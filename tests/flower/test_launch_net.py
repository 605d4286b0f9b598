"""MPC Grad P with real processes: a SuperLink and one SuperNode per party on 127.0.0.1 over HTTPS; and a launch
killed with SIGKILL takes its SuperLink and SuperNodes with it.

One launch (about a minute on a loaded 2-core host: Flower starts a ClientApp process per message and its
SuperNodes poll every 3 s) with a client killed mid-round within the dropout threshold: the round completes
over the survivors, with the noise of ``mpdp run``'s seeded aggregators, so the model is the in-process one's
recomputed over the survivors (within fixed-point rounding).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from mpdp.errors import PartyUnavailableError
from mpdp.flower.launcher import launch, wait_for_port
from mpdp.learning.distributed_erm.problem import PartyGroup, equal_parts
from mpdp.runtime.guard import descendants
from tests.flower.helpers import SEED, in_memory_iterates, prepared, small_config
from tests.processes import cmdline, gone, kill_launcher

pytestmark = pytest.mark.net


def test_real_supernodes_with_a_client_killed_mid_round(tmp_path: Path) -> None:
    config = small_config(parties=3, T=1)
    # the dead client is dropped when the round's deadline passes; the live ones (each message a ClientApp
    # process of its own) must answer within it on a loaded machine too, hence a deadline of a minute
    run = launch("mpc-gradp", config, seed=SEED, tls=True, max_dropouts=1, crash={"party1": 1}, round_timeout=60.0,
                 connect_timeout=90.0, timeout=300.0, workdir=tmp_path)
    assert run.report.algorithm == "mpc-gradp"
    assert run.rounds[0]["survivors"] == 2 and run.rounds[0]["dropped"] == ["party1"]
    # recompute the survivors' step from the in-process run's noise (theta_0 = 0, eta = 1)
    data = prepared(config)
    indices = equal_parts(config.train, 3, rng=config.rng.spawn("rows"))
    grads = [PartyGroup(0, data.X[i][None], data.y[i][None]).local_gradients(data.problem, np.zeros(6))[0]
             for i in indices]
    noise = -3 * in_memory_iterates(config)[0] - np.sum(grads, axis=0)
    expected = -(grads[0] + grads[2] + noise) / 2
    np.testing.assert_allclose(run.report.released.theta, expected, atol=1e-6, rtol=0)
    assert run.per_party["party0"]["bytes_sent"] > 0 and run.report.communication["bytes"] > 0


def test_an_unreachable_superlink_is_reported_not_waited_for() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PartyUnavailableError, match="not reachable"):
        wait_for_port("127.0.0.1", port, timeout=0.5)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the launcher's processes")
def test_kill_9_of_a_flower_launch_takes_the_superlink_and_every_supernode_with_it(tmp_path: Path) -> None:
    # killed once the SuperLink and the four SuperNodes run (2 clients, 2 aggregators); the waits only bound failures
    argv = ["launch", "mpc-gradp", "--engine", "flower", "--dataset", "synthetic-mixed:n=200", "--seed", "5",
            "--option", "T=3000", "--option", "cohort=1", "--parties", "2", "--keep", str(tmp_path / "run"),
            "--connect-timeout", "600", "--timeout", "600"]  # long, so it neither ends nor times out before the kill
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root / "src"))
    launcher = subprocess.Popen([sys.executable, "-m", "mpdp", *argv], cwd=root, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 600  # only bounds a failure
        while time.monotonic() < deadline:
            tree = descendants([launcher.pid])
            names = [cmdline(p) for p in tree]
            if sum("flower-supernode" in n for n in names) == 4 and any("flower-superlink" in n for n in names):
                break
            assert launcher.poll() is None, "the launch ended before the test could kill it"
            time.sleep(0.2)
        else:
            pytest.fail("the SuperLink and SuperNodes did not start")
        tree = descendants([launcher.pid])
        kill_launcher(launcher, tree)
        assert all(gone(p) for p in tree), [(p, cmdline(p)[:80]) for p in tree if not gone(p)]
    finally:
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
