"""Reading the process table (Linux ``/proc``) for the tests that check a killed launcher takes its children."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


def cmdline(pid: int) -> str:
    """The command line of process ``pid`` ("" when it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has: it only waits to be reaped by its new parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def kill_launcher(launcher: subprocess.Popen[bytes], tree: list[int], *, seconds: float = 60.0) -> None:
    """SIGKILL ``launcher`` and wait up to ``seconds`` (only a bound on a failure) for every process of ``tree``
    (its descendants, listed before the kill) to end; the caller asserts that they did."""
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(gone(p) for p in tree):
        time.sleep(0.1)
