"""The runner's side of a forked party's outcome: its report read and its failure rebuilt, or aborts sent.

A child's report is one frame encoded with the wire codec: ``{"ok": True, "result", "traffic"}`` or
``{"ok": False, "type", "message", "at", "traceback"}``. :func:`settle` records it (or a child that ended
without one, as :class:`~mpdp.errors.PartyUnavailableError`) and reaps the child. A failure comes back as
the same exception type for the mpdp tree and the built-in exceptions (rebuilt by name from a fixed table,
never by importing what the report names), else as a :class:`~mpdp.errors.ProtocolError` naming the type,
with the child's traceback as a note. :func:`tell_abort` tells the children still running to abort: their
waiting receives fail with :class:`~mpdp.errors.ProtocolAbortError`; they get ``GRACE`` seconds to wind down
before the runner kills them.
"""

from __future__ import annotations

import builtins
import os
import signal
import socket
import time
from collections.abc import Iterable
from typing import Any

from mpdp.errors import MpdpError, PartyUnavailableError, ProtocolError
from mpdp.runtime.codec import decode, encode
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.processes.frames import FRAME, Inbox
from mpdp.runtime.runners import Failure

__all__ = ["GRACE", "settle", "tell_abort"]

GRACE = 1.0  # seconds the other parties get to wind down after a failure before they are killed


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by signal {signal.Signals(number).name}"
        except ValueError:  # pragma: no cover - a signal Python has no name for
            return f"killed by signal {number}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _known_exceptions() -> dict[str, type[BaseException]]:
    """Exception types the parent rebuilds by name: the mpdp tree (as loaded) and the built-in ones."""
    table: dict[str, type[BaseException]] = {}
    for value in vars(builtins).values():
        if isinstance(value, type) and issubclass(value, BaseException):
            table[f"builtins.{value.__qualname__}"] = value
    stack: list[type[BaseException]] = [MpdpError]
    while stack:
        cls = stack.pop()
        table[f"{cls.__module__}.{cls.__qualname__}"] = cls
        stack.extend(cls.__subclasses__())
    return table


def _rebuild(name: str, report: dict[str, Any]) -> BaseException:
    """The child's exception as the parent raises it: the same type for mpdp and built-in errors."""
    type_name, message = str(report.get("type")), str(report.get("message"))
    cls = _known_exceptions().get(type_name)
    exc: BaseException | None = None
    if cls is not None:
        try:
            exc = cls(message)
        except Exception:  # a type whose constructor wants more than a message
            exc = None
    if exc is None:
        exc = ProtocolError(f"party {name!r} failed with {type_name}: {message}")
    exc.add_note(f"in party {name!r}'s own process; its traceback:\n{report.get('traceback', '')}".rstrip())
    return exc


def settle(name: str, inbox: Inbox, pids: dict[str, int], results: dict[str, Any],
           traffic: dict[str, PartyTraffic], failures: list[Failure]) -> None:
    """Record the outcome of child ``name``, whose report (or end without one) is in ``inbox``, and reap it."""
    _, status = os.waitpid(pids.pop(name), 0)
    if inbox.frames:
        report = decode(inbox.frames.popleft())
        if report["ok"]:
            results[name] = report["result"]
            traffic[name] = PartyTraffic(**report["traffic"])
        else:
            failures.append((float(report["at"]), name, _rebuild(name, report)))
    else:
        failures.append((time.monotonic(), name, PartyUnavailableError(
            f"party {name!r}'s process ended ({_describe_status(status)}) without reporting a result. "
            "Fix: check what that party's role does (a crash, os._exit, a kill by the OS for memory)"
        )))


def tell_abort(ends: Iterable[socket.socket], reason: str) -> None:
    """Tell the children behind these control sockets to abort (their waiting receives fail)."""
    abort = encode({"abort": reason})
    for sock in ends:
        try:
            sock.sendall(FRAME.pack(len(abort)) + abort)
        except OSError:
            pass
