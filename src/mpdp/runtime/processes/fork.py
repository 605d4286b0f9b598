"""Forking the parties: the platform check, the socketpairs, the fork itself and the reaping.

The runner builds one ``socket.socketpair`` per pair of parties of which at least one is forked, and one per
forked party to carry its report back (:func:`socketpairs`); :func:`fork_parties` forks a child per party,
which closes every socket but its own and runs :func:`~mpdp.runtime.processes.child.run_child`; the parent
closes the children's ends. Roles reach the children by ``fork``: a child inherits the parent's memory, so
nothing about a role is serialised. :func:`reap` kills and reaps whatever child is left, whatever happened.

Security: after the fork each party's state lives in its own address space and it can reach its peers only
through its own sockets. On Linux the kernel kills the children if the runner itself dies
(``PR_SET_PDEATHSIG``).

Limitations: fork copies only the calling thread, so fork from a process that holds no locks in other
threads (no running threaded protocol or gRPC server in the same process).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence

from mpdp.errors import ParameterError, explain
from mpdp.runtime.processes.child import run_child
from mpdp.runtime.runners import RunOne

__all__ = ["check_platform", "fork_parties", "reap", "socketpairs"]

_BUFFER = 4 << 20  # requested socket buffer size (bytes)


def check_platform(count: int) -> None:
    """Refuse, naming the alternatives, where parties cannot be forked: no ``os.fork``, or too few file
    descriptors for ``count`` parties' socketpairs."""
    if not hasattr(os, "fork"):
        raise ParameterError(
            explain("processes", True, "a platform with os.fork (Linux, macOS)",
                    "run the parties as threads (processes=False, the in-memory transport) or one process per "
                    "party over the network transport (mpdp.runtime.grpc_transport, `mpdp party`)")
        )
    import resource  # POSIX only, like fork

    # Each pair of parties holds one socketpair, each party one to the parent: two descriptors per socketpair.
    needed = count * (count - 1) + 2 * count
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and needed + 64 > soft:
        raise ParameterError(
            explain("number of parties", count, f"at most about {int((soft - 64) ** 0.5)} parties with "
                    f"{soft} file descriptors ({needed} needed)",
                    "raise the limit (ulimit -n), or run large cohorts as threads (processes=False)")
        )


def _enlarge(sock: socket.socket) -> None:
    """Ask for socket buffers of a few MB (the kernel caps them at net.core.[rw]mem_max): a large message
    then crosses in a few hand-overs between the two processes instead of dozens of 200 kB ones."""
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, _BUFFER)
        except OSError:  # pragma: no cover - a platform that refuses: keep its default
            pass


def _die_with_parent(parent: int) -> None:
    """Linux: have the kernel kill this child if the runner dies, so no party outlives a crashed runner."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return
    if os.getppid() != parent:  # the runner died before prctl took effect
        os._exit(1)


def socketpairs(names: tuple[str, ...], forked: Sequence[str]
                ) -> tuple[dict[tuple[str, str], socket.socket], dict[str, tuple[socket.socket, socket.socket]],
                           list[socket.socket]]:
    """The sockets of a run whose parties ``forked`` get their own process: one socketpair per pair of
    parties of which at least one is forked (``(owner, peer)`` -> the owner's end), one per forked party to
    the runner (party -> (the runner's end, the child's end)), and the list of them all (to close)."""
    sockets: list[socket.socket] = []
    pairs: dict[tuple[str, str], socket.socket] = {}
    controls: dict[str, tuple[socket.socket, socket.socket]] = {}
    try:
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if a in forked or b in forked:
                    pairs[(a, b)], pairs[(b, a)] = socket.socketpair()
                    sockets += [pairs[(a, b)], pairs[(b, a)]]
                    for sock in (pairs[(a, b)], pairs[(b, a)]):
                        _enlarge(sock)
        for n in forked:
            controls[n] = socket.socketpair()
            sockets += controls[n]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return pairs, controls, sockets


def fork_parties(names: tuple[str, ...], forked: Sequence[str], run_one: RunOne,
                 pairs: dict[tuple[str, str], socket.socket], controls: dict[str, tuple[socket.socket, socket.socket]],
                 sockets: list[socket.socket], timeout: float, max_bytes: int) -> dict[str, int]:
    """Fork a child for each party of ``forked`` (over :func:`socketpairs`' sockets) and close the children's
    ends in this process; returns each child's pid. The child keeps only its own sockets and never returns."""
    sys.stdout.flush()  # a child must not write the parent's buffered output a second time
    sys.stderr.flush()
    pids: dict[str, int] = {}
    try:
        for n in forked:
            pid = os.fork()
            if pid == 0:  # the child: never returns from this branch
                code = 1
                try:
                    _die_with_parent(os.getppid())
                    own = {p: pairs[(n, p)] for p in names if p != n}
                    mine = {id(s) for s in own.values()} | {id(controls[n][1])}
                    for sock in sockets:
                        if id(sock) not in mine:
                            sock.close()
                    run_child(n, names, run_one, own, controls[n][1], timeout, max_bytes)
                    code = 0
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(code)
            pids[n] = pid
    except BaseException:
        reap(pids, [])
        raise
    kept = {id(pairs[(a, b)]) for a, b in pairs if a not in forked} | {id(controls[n][0]) for n in forked}
    for sock in sockets:
        if id(sock) not in kept:  # a child's end
            sock.close()
    return pids


def reap(pids: dict[str, int], sockets: Sequence[socket.socket]) -> None:
    """Kill and reap the children still listed (those that reported are reaped and gone), close the sockets."""
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    pids.clear()
    for sock in sockets:
        sock.close()
