"""The launchers' process supervisor: children (and theirs) die with the launcher, even on ``kill -9``; a child
that outlives a failure or the deadline is killed; error lines become typed errors.

The waits here only bound failures: each test waits for a readiness signal (a pid file, a process that exists)
and then for an outcome with a generous deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mpdp.errors import BudgetExceededError, PartyUnavailableError, ProtocolError
from mpdp.runtime.guard import descendants
from mpdp.runtime.supervisor import Supervisor, error_line, free_ports, typed_error

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has ended: it only waits for its parent to reap it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _until(condition: object, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(1024 <= p <= 65535 for p in ports)


def test_error_lines_become_typed_errors() -> None:
    assert error_line("warning\nmpdp: error: BudgetExceededError: spent\n") == ("BudgetExceededError", "spent")
    assert error_line("Traceback ...") is None
    assert isinstance(typed_error("BudgetExceededError", "x"), BudgetExceededError)
    assert isinstance(typed_error("KeyError", "x"), ProtocolError)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the launcher's processes")
def test_a_killed_launcher_takes_its_children_and_theirs_with_it(tmp_path: Path) -> None:
    # the launcher starts two children; one starts a grandchild in a session of its own (as Flower's SuperNodes
    # start their app processes); the launcher writes the pids, then is killed with SIGKILL
    pids = tmp_path / "pids"
    code = f"""
        import os, sys, time
        from pathlib import Path
        from mpdp.runtime.supervisor import Supervisor
        sup = Supervisor()
        a = sup.start("a", {SLEEPER!r}, log=Path({str(tmp_path)!r}) / "a.log")
        spawner = "import subprocess, sys, time; subprocess.Popen({SLEEPER!r}, start_new_session=True); time.sleep(300)"
        b = sup.start("b", [sys.executable, "-c", spawner], log=Path({str(tmp_path)!r}) / "b.log")
        Path({str(pids)!r}).write_text(f"{{a.process.pid}} {{b.process.pid}}")
        time.sleep(300)
    """
    launcher = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=ENV)
    tree: list[int] = []
    try:
        assert _until(lambda: pids.exists() and len(pids.read_text().split()) == 2), "the launcher did not start"
        children = [int(p) for p in pids.read_text().split()]
        assert _until(lambda: len(descendants(children)) >= 1), "the grandchild did not start"
        tree = [*children, *descendants(children)]
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        assert _until(lambda: not any(_alive(p) for p in tree)), [p for p in tree if _alive(p)]
    finally:
        for pid in tree:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_a_child_that_outlives_a_failure_is_killed_after_the_grace(tmp_path: Path) -> None:
    with Supervisor() as sup:
        stuck = sup.start("stuck", SLEEPER, log=tmp_path / "stuck.log")
        stuck.process.send_signal(signal.SIGSTOP)  # frozen: it would never end by itself
        sup.start("failing", [sys.executable, "-c", "import sys; sys.exit(2)"], log=tmp_path / "f.log")
        start = time.monotonic()
        sup.wait(deadline=time.monotonic() + 600, grace=0.5)
        assert stuck.returncode == -signal.SIGKILL and time.monotonic() - start < 60
        assert sup.children["failing"].describe() == "exit status 2"


def test_children_past_the_deadline_are_killed_and_named(tmp_path: Path) -> None:
    with Supervisor() as sup:
        sup.start("slow", SLEEPER, log=tmp_path / "slow.log")
        with pytest.raises(PartyUnavailableError, match="slow still running"):
            sup.wait(deadline=time.monotonic() + 0.5, grace=60)
        assert sup.children["slow"].returncode is not None


def test_closing_stops_every_child_and_dismisses_the_guard(tmp_path: Path) -> None:
    sup = Supervisor()
    child = sup.start("a", SLEEPER, log=tmp_path / "a.log")
    guard = sup._guard
    sup.close(grace=10)
    assert child.returncode is not None and guard is not None and guard.returncode == 0
