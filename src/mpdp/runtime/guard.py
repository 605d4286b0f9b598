"""The launcher's guard: a tiny process that kills a launcher's children when the launcher dies.

:class:`mpdp.runtime.supervisor.Supervisor` starts this file as a script (``python -I guard.py``; standard
library only, so it starts in a few milliseconds and imports nothing of mpdp) in a session of its own, and
holds the write end of a pipe to its standard input. It writes ``watch PID`` for every child it starts and
``release PID`` once it has reaped one; ``done`` ends the guard quietly. When the pipe reaches end-of-file
without ``done`` the launcher has ended without cleaning up (``kill -9``, an interpreter crash, an OOM kill),
and the guard kills every watched process and everything they started:

1. it finds every descendant of the watched processes (Linux: ``/proc/*/stat``; elsewhere ``ps``), stops
   them all with SIGSTOP (a stopped process cannot start another), and repeats until no new descendant
   appears; the tree cannot change under it from then on;
2. it sends SIGKILL to the watched processes' process groups and to every process found, then exits.

Linux and macOS: both have pipes, process groups and ``ps``. A descendant that left the tree before the launcher
died (a daemon that double-forked and was re-parented to init) is found only through its process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path


def _parents() -> dict[int, list[int]]:
    """parent pid -> child pids, for every process visible now."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if proc.is_dir():
        for stat in proc.glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        return children
    try:  # macOS and other BSDs
        listing = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True,  # noqa: S607
                                 check=False, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return children
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            children.setdefault(int(parts[1]), []).append(int(parts[0]))
    return children


def descendants(roots: list[int]) -> list[int]:
    """Every live descendant of ``roots`` (not the roots themselves)."""
    children = _parents()
    found: list[int] = []
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_trees(watched: list[int]) -> None:
    """Freeze the trees under ``watched`` until they stop growing, then kill them and their process groups."""
    seen: list[int] = []
    for _ in range(50):
        tree = [pid for pid in [*watched, *descendants(watched)] if pid != os.getpid()]
        new = [pid for pid in tree if pid not in seen]
        if not new:
            break
        seen.extend(new)
        _signal(new, signal.SIGSTOP)
    for pid in watched:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    _signal(seen, signal.SIGKILL)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the launcher, which cleans up
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    watched: list[int] = []
    for raw in sys.stdin.buffer:
        word, _, arg = raw.decode("ascii", "replace").strip().partition(" ")
        if word == "done":
            return
        if word in ("watch", "release") and arg.isdigit():
            pid = int(arg)
            if word == "watch":
                watched.append(pid)
            elif pid in watched:
                watched.remove(pid)
    kill_trees(watched)


if __name__ == "__main__":
    main()
