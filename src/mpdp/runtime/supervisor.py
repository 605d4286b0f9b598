"""One supervisor for the processes a launcher starts (``mpdp launch``, over gRPC or Flower): ports, children that
die with their launcher, deadlines, and the error line each child leaves.

* :func:`free_ports` picks ports free on a host at this moment (both launchers use it);
  :func:`wait_for_port` waits until a port accepts connections.
* :class:`Supervisor` starts each child in a session of its own (so a terminal's signals reach the launcher,
  which cleans up, and not the children directly), with its output in a log file (a chatty child never blocks
  on a pipe). It stops every child, and everything the children started, when it is closed; and, through a
  *guard* process (:mod:`mpdp.runtime.guard`) that holds a pipe from the launcher, also when the launcher
  itself dies without closing it (``kill -9``): the pipe's end-of-file tells the guard, which freezes and
  kills the whole tree. On Linux and macOS alike; a child that daemonized away from the tree before the launcher
  died is found only through its process group.
* :meth:`Supervisor.wait` waits for the children to end: once one has failed, the others get ``grace`` seconds
  to end on their own (a party that learns of the failure ends within its own timeouts) and are then killed;
  past the ``deadline`` every child still running is killed and the wait fails with
  :class:`~mpdp.errors.PartyUnavailableError` naming them.
* :func:`error_line` reads the one line ``mpdp: error: Kind: message`` a failed mpdp command leaves, and
  :func:`typed_error` rebuilds it as that mpdp exception.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mpdp import errors
from mpdp.errors import MpdpError, PartyUnavailableError, ProtocolError

__all__ = ["Child", "Supervisor", "error_line", "free_ports", "typed_error", "wait_for_port"]

_GUARD = Path(__file__).with_name("guard.py")


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports free on ``host`` at this moment (all held at once while picking, so they
    differ; another process may still take one before it is used)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
            ports.append(int(s.getsockname()[1]))
    finally:
        for s in sockets:
            s.close()
    return ports


def wait_for_port(host: str, port: int, *, timeout: float, what: str = "the SuperLink") -> None:
    """Return once ``host:port`` accepts connections; :class:`PartyUnavailableError` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise PartyUnavailableError(
                    f"{what} at {host}:{port} is not reachable after {timeout:g} s ({exc}). Fix: check that it "
                    "started (its log), or the address and firewall") from exc
            time.sleep(0.2)


def error_line(text: str) -> tuple[str, str] | None:
    """``(kind, message)`` of the last ``mpdp: error: Kind: message`` line in ``text``, if any."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("mpdp: error: "):
            kind, _, message = line.removeprefix("mpdp: error: ").partition(": ")
            return kind, message
    return None


def typed_error(kind: str, message: str) -> MpdpError:
    """The mpdp exception named ``kind`` (an :mod:`mpdp.errors` class; else a ProtocolError) with ``message``."""
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, MpdpError)):
        return ProtocolError(f"{kind}: {message}")
    return cls(message)


@dataclass
class Child:
    """One process a :class:`Supervisor` started: its name, process, log, and when it ended (monotonic)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    ended: float | None = None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def output(self) -> str:
        """What the child wrote to its log (standard error, or both streams)."""
        try:
            return self.log.read_text("utf-8", "replace")
        except OSError:
            return ""

    def describe(self) -> str:
        """How it ended: ``exit status N`` or ``signal NAME``."""
        code = self.returncode
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"signal {signal.Signals(-code).name}"
            return f"signal {-code}"
        return f"exit status {code}"


@dataclass
class Supervisor:
    """Starts, watches and stops a launcher's child processes (see the module docstring).

    ``env``: the children's environment. Use as a context manager, or call :meth:`close`.
    """

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    children: dict[str, Child] = field(default_factory=dict)
    _guard: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self._guard = subprocess.Popen([sys.executable, "-I", "-S", str(_GUARD)], stdin=subprocess.PIPE,  # noqa: S603
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def _tell(self, line: str) -> None:
        pipe: IO[bytes] | None = None if self._guard is None else self._guard.stdin
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.write(line.encode("ascii") + b"\n")
                pipe.flush()

    def start(self, name: str, argv: Sequence[str], *, log: Path, merge_output: bool = False,
              env: Mapping[str, str] | None = None) -> Child:
        """Start ``argv`` as child ``name`` in a session of its own, its standard error (and output, with
        ``merge_output``) in ``log``."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as handle:
            process = subprocess.Popen(list(argv), stdout=handle if merge_output else subprocess.DEVNULL,  # noqa: S603
                                       stderr=subprocess.STDOUT if merge_output else handle,
                                       env=dict(self.env if env is None else env), start_new_session=True)
        self._tell(f"watch {process.pid}")
        child = self.children[name] = Child(name, process, log)
        return child

    def poll(self) -> list[Child]:
        """The children that have ended since the last poll (reaped, their end time recorded)."""
        ended = []
        for child in self.children.values():
            if child.ended is None and child.process.poll() is not None:
                child.ended = time.monotonic()
                self._tell(f"release {child.process.pid}")
                ended.append(child)
        return ended

    def running(self) -> list[Child]:
        self.poll()
        return [c for c in self.children.values() if c.ended is None]

    def wait(self, *, deadline: float, grace: float, names: Sequence[str] | None = None,
             tick: Callable[[int], None] | None = None) -> None:
        """Wait until the children (or those ``names``) end. Once one has ended with a failure, the others have
        ``grace`` seconds to end before they are killed; past ``deadline`` (monotonic) those still running are
        killed and :class:`PartyUnavailableError` names them. ``tick(ended)`` is called about once a second and
        whenever a child ends, with how many have ended (a progress bar)."""
        watched = [self.children[n] for n in (names or list(self.children))]
        failed_at: float | None = None
        told, last = -1, 0.0
        while True:
            self.poll()
            running = [c for c in watched if c.ended is None]
            ended = len(watched) - len(running)
            if tick is not None and (ended != told or time.monotonic() - last >= 1.0):
                tick(ended)
                told, last = ended, time.monotonic()
            if not running:
                return
            failures = [c.ended for c in watched if c.ended is not None and c.returncode != 0]
            if failures and failed_at is None:
                failed_at = min(t for t in failures if t is not None)
            now = time.monotonic()
            if failed_at is not None and now > failed_at + grace:
                self.kill(running)  # they outlived a failure by `grace`: frozen or stuck
                return
            if now > deadline:
                self.kill(running)
                raise PartyUnavailableError(
                    f"{', '.join(c.name for c in running)} still running at the launcher's deadline. Fix: raise "
                    "the timeout if the run is legitimately slow, or check those processes' logs")
            time.sleep(0.02)

    def kill(self, children: Sequence[Child]) -> None:
        """SIGKILL ``children`` (stopped ones too) with their process groups, and reap them."""
        for child in children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                child.process.kill()
            child.process.wait()
        self.poll()

    def close(self, *, grace: float = 5.0) -> None:
        """Stop every child and everything it started (SIGTERM, then SIGKILL after ``grace`` s), then dismiss
        the guard."""
        from mpdp.runtime.guard import descendants

        live = [c for c in self.children.values() if c.process.poll() is None]
        tree = descendants([c.process.pid for c in self.children.values()])
        for pid in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        for child in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.process.pid, signal.SIGTERM)
        end = time.monotonic() + grace
        for child in live:
            try:
                child.process.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill([child])
        for pid in tree:  # what did not end on SIGTERM (a stopped process does not)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self.poll()
        if self._guard is not None:
            self._tell("done")
            with contextlib.suppress(OSError, ValueError):
                if self._guard.stdin is not None:
                    self._guard.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._guard.wait(timeout=5.0)
            self._guard = None

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
