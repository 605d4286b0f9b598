"""Fixtures of the runtime's tests: runners that fork must leave no process or socket behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def _children() -> set[int]:
    """Processes (zombies included) whose parent is this process."""
    me, found = os.getpid(), set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if any(line.split() == ["PPid:", str(me)] for line in text.splitlines()):
            found.add(int(status.parent.name))
    return found


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def nothing_left_behind() -> Iterator[None]:
    """Fails a test after which a child process is left (running or unreaped) or a descriptor is left open."""
    before, fds = _children(), _fds()
    yield
    assert _children() <= before, "a party's process was left running or unreaped"
    assert _fds() <= fds, "a socket was left open"
