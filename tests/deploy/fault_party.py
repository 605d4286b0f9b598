"""A deployed party that fails on purpose at a chosen point: ``python -m tests.deploy.fault_party FAULT POINT
CONFIG NAME``, otherwise exactly ``mpdp party --config CONFIG --name NAME``.

FAULT: ``kill`` (SIGKILL to itself: no abort message, no cleanup) or ``stop`` (SIGSTOP: frozen, its sockets open).
POINT:

* ``start``: when the handshake begins (its transport listens; it has sent nothing);
* ``ready``: once its handshake is complete and every frame it sent has been accepted, before its first
  protocol message (its peers then complete theirs: they hold its hello);
* ``recv:K``: once its K-th protocol message (after the handshake) has been received.

The points are defined by what the party has done, not by time, so the fault lands at the same place of the run
on a busy machine as on an idle one.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from mpdp.cli import main as mpdp_main
from mpdp.deploy.session import PartySession
from mpdp.runtime.comm import Comm


def _fault(kind: str) -> None:
    os.kill(os.getpid(), signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
    time.sleep(3600)  # a stopped process resumes only to be killed


def _install(kind: str, point: str) -> None:
    if point == "start":
        original_start = PartySession.start

        def start(self: PartySession, shared: Any) -> float:
            _fault(kind)
            return original_start(self, shared)

        PartySession.start = start  # type: ignore[method-assign]
    elif point == "ready":
        original_start = PartySession.start

        def start(self: PartySession, shared: Any) -> float:
            seconds = original_start(self, shared)
            transport = self.transport
            deadline = time.monotonic() + 120.0  # only bounds a failure: frames are normally accepted at once
            while time.monotonic() < deadline:
                with transport._send_lock:
                    if not transport._pending:
                        break
                time.sleep(0.01)
            _fault(kind)
            return seconds

        PartySession.start = start  # type: ignore[method-assign]
    elif point.startswith("recv:"):
        after, received = int(point.removeprefix("recv:")), [0]
        original = Comm.recv

        def counted(self: Comm, src: str, **kwargs: Any) -> Any:
            value = original(self, src, **kwargs)
            received[0] += 1
            if received[0] == after:
                _fault(kind)
            return value

        Comm.recv = counted  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown point {point!r}")


if __name__ == "__main__":
    fault, where, config, name = sys.argv[1:5]
    _install(fault, where)
    sys.exit(mpdp_main(["party", "--config", config, "--name", name]))
