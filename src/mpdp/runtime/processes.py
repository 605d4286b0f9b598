"""Parties as forked OS processes on this machine, exchanging bytes over socketpairs.

:func:`mpdp.runtime.run_protocol` with ``processes=True`` runs each party's role here: one
``socket.socketpair`` per pair of parties carries that pair's messages as length-prefixed frames (the bytes
:class:`~mpdp.runtime.comm.Comm` produced, nothing else), and one more per party carries its report back to
the parent. Roles reach the children by ``fork``: a child inherits the parent's memory, so nothing about a
role is serialised; results and failures come back encoded with the wire codec (no pickle).

Why: the in-memory transport runs every party as a thread of one process, so the GIL serialises the
parties' Python work and a run's wall time is the *sum* of the parties' CPU. Here each party has its own
interpreter, as on one machine per party, while messages still cost microseconds, not a network round trip.
A receive polls its socket for a moment (``_SPIN``, yielding the CPU between polls) before it sleeps: in a
protocol of many short rounds the reply usually arrives within that moment, and the sleep and wake-up it
saves cost more than the polls.

Security: after the fork each party's state lives in its own address space; a child closes every socket
but its own, so it can reach its peers only through its pair sockets. The parent holds every role before
the fork (it built them) and receives each party's result and traffic counts, as the threaded runner does.

Failures: a child that raises reports the exception's type, message and traceback to the parent, which tells
the other children to abort (their waiting receives fail with ProtocolAbortError), gives them ``_GRACE``
seconds, kills whoever is left and reaps every child. A child that dies without a report is a
PartyUnavailableError; one that hangs is found by the receive timeouts of the parties waiting for it. On
Linux the kernel kills the children if the runner itself dies (``PR_SET_PDEATHSIG``).

Limitations: unlike :class:`~mpdp.runtime.transport.InMemoryTransport` there is no instant deadlock
detection (a protocol whose parties all wait on each other fails after ``timeout``); fork copies only the
calling thread, so call the runner from a process that holds no locks in other threads (no running
threaded protocol or gRPC server in the same process); a party that outlives every receive aimed at it
(computing forever with nobody waiting) keeps the run waiting, as a thread would.
"""

from __future__ import annotations

import builtins
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mpdp.errors import (
    MalformedMessageError,
    MpdpError,
    ParameterError,
    PartyUnavailableError,
    ProtocolAbortError,
    ProtocolError,
    explain,
)
from mpdp.runtime.codec import decode, encode
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.transport import Endpoint, Transport

__all__ = ["run_forked"]

_FRAME = struct.Struct("<Q")
_SMALL = 1 << 16  # frames below this size are sent as one buffer (header and body copied together)
_BUFFER = 4 << 20  # requested socket buffer size (bytes)
# A receive polls its socket for up to this long (yielding the CPU between polls) before it sleeps in select:
# a reply that comes within a round's compute time then costs no sleep and wake-up (the DPVI step's parties as
# processes, one core each: ~15 voluntary context switches per step -> 1, and the online phase ~10% faster).
_SPIN = 1e-4
_GRACE = 1.0  # seconds the other parties get to wind down after a failure before they are killed

RunOne = Callable[[str, Transport], tuple[Any, PartyTraffic]]
Failure = tuple[float, str, BaseException]


class _Inbox:
    """Length-prefixed frames read incrementally from one non-blocking socket.

    Small frames are cut out of a read buffer; a large frame's body is received straight into its own
    buffer (one copy from the kernel, no re-slicing of megabytes).
    """

    def __init__(self, sender: str, max_bytes: int) -> None:
        self.sender = sender
        self.max_bytes = max_bytes
        self.buf = bytearray()
        self.frames: deque[bytes] = deque()
        self.eof = False
        self._body: bytearray | None = None
        self._filled = 0

    def feed(self, sock: socket.socket) -> None:
        while not self.eof:
            try:
                if self._body is not None:
                    with memoryview(self._body) as view:
                        got = sock.recv_into(view[self._filled:])
                    if got:
                        self._filled += got
                        if self._filled == len(self._body):
                            self.frames.append(self._body)  # type: ignore[arg-type]  # bytes-like, decoded as such
                            self._body = None
                        continue
                else:
                    chunk = sock.recv(_SMALL)
                    got = len(chunk)
                    if got:
                        size = got - _FRAME.size
                        if not self.buf and 0 < size <= self.max_bytes and _FRAME.unpack_from(chunk)[0] == size:
                            self.frames.append(chunk[_FRAME.size:])  # exactly one whole frame: one copy
                        else:
                            self.buf += chunk
                            self._split()
                        if got < _SMALL and self._body is None:
                            # Most likely all there was: leave it to the next readiness report (level-
                            # triggered) rather than pay a failing recv and its exception per message.
                            return
                        continue
            except BlockingIOError:
                return
            except OSError:
                pass
            self.eof = True

    def _split(self) -> None:
        start = 0
        while len(self.buf) - start >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.buf, start)
            if size > self.max_bytes:  # refused before it is buffered, as the codec refuses long messages
                raise MalformedMessageError(explain(f"frame length from {self.sender}", size,
                                                    f"at most max_bytes = {self.max_bytes}",
                                                    "raise CodecLimits.max_bytes if such messages are expected"))
            body = start + _FRAME.size
            if body + size > len(self.buf):
                if size >= _SMALL:  # receive the rest straight into the frame's own buffer
                    self._body = bytearray(size)
                    self._filled = len(self.buf) - body
                    self._body[:self._filled] = self.buf[body:]
                    start = len(self.buf)
                break
            self.frames.append(bytes(self.buf[body:body + size]))
            start = body + size
        if start:
            del self.buf[:start]


def _frame(data: bytes) -> list[memoryview]:
    if len(data) < _SMALL:
        return [memoryview(_FRAME.pack(len(data)) + data)]
    return [memoryview(_FRAME.pack(len(data))), memoryview(data)]


class _Link:
    """One socket to one peer: the frames read from it and the bytes the kernel buffer has not taken yet.

    Sends never block: a frame the kernel buffer cannot take waits in ``outbox`` until :meth:`flush` (its owner
    flushes it when the socket becomes writable, reading meanwhile). Shared by a child's endpoint and by
    :mod:`mpdp.runtime.mixed`'s parent, which holds the sockets of its greenlet parties to the forked ones.
    """

    __slots__ = ("gone", "inbox", "outbox", "peer", "sock")

    def __init__(self, peer: str, sock: socket.socket, max_bytes: int) -> None:
        self.peer = peer
        self.sock = sock
        self.inbox = _Inbox(peer, max_bytes)
        self.outbox: deque[memoryview] = deque()
        self.gone = False  # the socket refuses writes or has been closed: the peer has exited
        sock.setblocking(False)

    def send(self, data: bytes) -> bool:
        """Frame ``data`` for the peer; whether bytes still wait for the socket to become writable."""
        if self.gone:  # like a message queued for a finished in-memory party: never read
            return False
        queue = self.outbox
        if not queue:  # the usual case: the kernel takes the whole frame at once, header and body in one call
            head = _FRAME.pack(len(data))
            try:
                sent = self.sock.sendmsg((head, data))
            except BlockingIOError:
                sent = 0
            except OSError:  # the peer has exited: what it did not read, it did not need
                self.gone = True
                return False
            if sent == len(head) + len(data):
                return False
            if sent < len(head):
                queue.extend((memoryview(head)[sent:], memoryview(data)))
            else:
                queue.append(memoryview(data)[sent - len(head):])
        else:
            queue.extend(_frame(data))
        return self.flush()

    def flush(self) -> bool:
        """Hand the kernel what it takes of the outbox; whether bytes are still waiting."""
        queue = self.outbox
        while queue:
            try:
                sent = self.sock.send(queue[0])
            except BlockingIOError:
                break
            except OSError:  # the peer has exited: what it did not read, it did not need
                self.gone = True
                queue.clear()
                break
            if sent == len(queue[0]):
                queue.popleft()
            else:
                queue[0] = queue[0][sent:]
                break
        return bool(queue)

    def read(self) -> None:
        """Read the frames the socket holds (without blocking); at its end the peer has gone."""
        self.inbox.feed(self.sock)
        if self.inbox.eof:
            self.gone = True
            self.outbox.clear()


class _SocketEndpoint(Endpoint):
    """One child's sockets to its peers (and to the parent, which may tell it to abort).

    Sends never block (:class:`_Link`): a frame the kernel buffer cannot take waits in an outbox that every
    later send and receive flushes, while receives keep reading every peer, so two parties sending each other
    large messages at once cannot deadlock.
    """

    def __init__(self, name: str, peers: dict[str, socket.socket], control: socket.socket, timeout: float,
                 max_bytes: int) -> None:
        self.name = name
        self._links = {p: _Link(p, sock, max_bytes) for p, sock in peers.items()}
        self._control = control
        self._timeout = timeout
        self._control_inbox = _Inbox("the runner", 1 << 20)
        self._abort_reason: str | None = None
        self.closed_at: float | None = None  # when the peers could first see this party gone
        self._selector = selectors.DefaultSelector()
        self._writing: set[str] = set()
        for peer, link in self._links.items():
            self._selector.register(link.sock, selectors.EVENT_READ, peer)
        control.setblocking(False)
        self._selector.register(control, selectors.EVENT_READ, None)

    def send(self, dst: str, data: bytes) -> None:
        link = self._links.get(dst)
        if link is None:
            raise ParameterError(
                explain("destination", dst, f"another party of {tuple(self._links)}", "send to a peer by its name")
            )
        if self._abort_reason is not None:
            raise ProtocolAbortError(f"{self.name} cannot send to {dst}: protocol aborted ({self._abort_reason})")
        if link.send(data) or dst in self._writing:
            self._want_write(link)

    def recv(self, src: str, timeout: float) -> bytes:
        link = self._links.get(src)
        if link is None:
            raise ParameterError(
                explain("source", src, f"another party of {tuple(self._links)}", "receive from a peer by its name")
            )
        deadline = time.monotonic() + timeout
        inbox = link.inbox
        while True:
            if inbox.frames:
                return inbox.frames.popleft()
            if self._abort_reason is not None:
                raise ProtocolAbortError(f"{self.name} stopped waiting for {src}: {self._abort_reason}")
            if inbox.eof:
                raise ProtocolAbortError(
                    f"{self.name} waits for a message from {src}, but {src} has finished its part of the protocol "
                    "(or its process has failed)"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PartyUnavailableError(unanswered(self.name, src, timeout))
            if not self._writing and self._spin(link):  # (pending writes: only the selector serves them)
                continue
            self._pump(remaining)

    def _spin(self, link: _Link) -> bool:
        """Poll ``link`` for up to ``_SPIN`` seconds, yielding the CPU between polls; whether a frame came."""
        inbox = link.inbox
        stop = time.perf_counter() + _SPIN
        while not inbox.eof and not link.gone:
            link.read()
            if inbox.frames:
                return True
            if time.perf_counter() >= stop:
                break
            os.sched_yield()
        return False

    def close(self) -> None:
        """Deliver what is still queued (reading meanwhile, so peers sending to us are not blocked), then close."""
        deadline = time.monotonic() + self._timeout
        while any(link.outbox for link in self._links.values()) and self._abort_reason is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stuck = sorted(p for p, link in self._links.items() if link.outbox)
                raise PartyUnavailableError(
                    f"{self.name} could not deliver its last messages to {stuck} within {self._timeout:g} s. "
                    "Fix: check those parties, or raise the timeout"
                )
            self._pump(remaining)
        self.closed_at = time.monotonic()
        for link in self._links.values():
            self._forget(link.sock)
            link.sock.close()
        self._forget(self._control)
        self._selector.close()

    def _want_write(self, link: _Link) -> None:
        """Ask the selector to report ``link``'s socket writable while its outbox holds bytes (only then)."""
        want = bool(link.outbox)
        if want != (link.peer in self._writing):
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._selector.modify(link.sock, events, link.peer)
            (self._writing.add if want else self._writing.discard)(link.peer)

    def _pump(self, wait: float) -> None:
        for key, events in self._selector.select(wait):
            peer = key.data
            if peer is None:
                self._control_inbox.feed(self._control)
                if self._control_inbox.frames:
                    message = decode(self._control_inbox.frames.popleft())
                    reason = message.get("abort") if isinstance(message, dict) else None
                    self._abort_reason = str(reason or "aborted by the runner")
                if self._control_inbox.eof:
                    self._abort_reason = self._abort_reason or "the runner's process has gone"
                    self._forget(self._control)
                continue
            link = self._links[peer]
            if events & selectors.EVENT_READ:
                link.read()
                if link.inbox.eof:  # the peer closed its socket: it has exited
                    self._writing.discard(peer)
                    self._forget(link.sock)
                    continue
            if events & selectors.EVENT_WRITE:
                link.flush()
                self._want_write(link)

    def _forget(self, sock: socket.socket) -> None:
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass


def unanswered(name: str, src: str, timeout: float) -> str:
    """The message of the PartyUnavailableError of a receive from ``src`` that timed out."""
    return (f"{name} received nothing from {src} within {timeout:g} s; {src} has stopped answering. "
            "Fix: check that party, or raise the timeout if it is legitimately slow")


class _ForkedTransport(Transport):
    """The transport a child sees: its one endpoint."""

    def __init__(self, parties: Sequence[str], endpoint: _SocketEndpoint) -> None:
        self.parties = tuple(parties)
        self._endpoint = endpoint

    def endpoint(self, name: str) -> Endpoint:
        if name != self._endpoint.name:
            raise ParameterError(explain("party", name, self._endpoint.name, "a child runs only its own party"))
        return self._endpoint


def _check_platform(count: int) -> None:
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


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


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


def _child(name: str, names: Sequence[str], run_one: RunOne, peers: dict[str, socket.socket],
           control: socket.socket, timeout: float, max_bytes: int) -> None:
    """Run one party in this (forked) process and send its report to the parent."""
    endpoint: _SocketEndpoint | None = None
    try:
        endpoint = _SocketEndpoint(name, peers, control, timeout, max_bytes)
        result, traffic = run_one(name, _ForkedTransport(names, endpoint))
        try:
            data = encode({"ok": True, "result": result,
                           "traffic": {**traffic.as_dict(), "sent_to": dict(traffic.sent_to)}})
        except MpdpError as exc:
            kind = type(result).__name__
            raise ParameterError(
                f"party {name!r} returned a {kind} that cannot travel back to the parent process ({exc}). Fix: "
                f"give {kind} to_wire() (and a from_wire() to rebuild it from the result), return plain data "
                "(numpy arrays, ints, floats, str, lists, dicts), or run the parties as threads (processes=False)"
            ) from exc
    except BaseException as exc:  # reported to the parent, which re-raises it
        # The failure's time is when the peers could first notice it (sockets closed), so that it sorts before
        # the aborts it causes in them.
        at = time.monotonic() if endpoint is None or endpoint.closed_at is None else endpoint.closed_at
        data = encode({"ok": False, "type": _type_name(exc), "message": str(exc), "at": at,
                       "traceback": "".join(traceback.format_exception(exc))})
    control.setblocking(True)
    control.sendall(_FRAME.pack(len(data)) + data)


def run_forked(names: Sequence[str], run_one: RunOne, *, timeout: float, max_bytes: int = 1 << 32
               ) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    """Fork one child per party, each calling ``run_one(name, transport)``; collect results, traffic and failures.

    ``failures`` holds ``(time, party, exception)`` as the threaded runner records them; the caller picks
    the one to raise. Every child is reaped and every socket closed before this returns, whatever happens.
    """
    names = tuple(names)
    _check_platform(len(names))
    pids: dict[str, int] = {}
    sockets: list[socket.socket] = []
    try:
        pairs, controls, sockets = socketpairs(names, names)
        pids.update(fork_parties(names, names, run_one, pairs, controls, sockets, timeout, max_bytes))
        return _collect(names, {n: controls[n][0] for n in names}, pids)
    finally:
        reap(pids, sockets)


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
                    _child(n, names, run_one, own, controls[n][1], timeout, max_bytes)
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


def settle(name: str, inbox: _Inbox, pids: dict[str, int], results: dict[str, Any],
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
            sock.sendall(_FRAME.pack(len(abort)) + abort)
        except OSError:
            pass


def _collect(names: tuple[str, ...], ends: dict[str, socket.socket], pids: dict[str, int]
             ) -> tuple[dict[str, Any], dict[str, PartyTraffic], list[Failure]]:
    results: dict[str, Any] = {}
    traffic: dict[str, PartyTraffic] = {}
    failures: list[Failure] = []
    inboxes = {n: _Inbox(n, 1 << 62) for n in names}  # reports from our own children: no cap
    selector = selectors.DefaultSelector()
    for n, sock in ends.items():
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, n)
    pending = set(names)
    give_up: float | None = None
    try:
        while pending:
            wait = None if give_up is None else max(0.0, give_up - time.monotonic())
            for key, _ in selector.select(wait):
                n = key.data
                inbox = inboxes[n]
                inbox.feed(ends[n])
                if not inbox.frames and not inbox.eof:
                    continue
                pending.discard(n)
                selector.unregister(ends[n])
                settle(n, inbox, pids, results, traffic, failures)
            if failures and give_up is None:
                # Like InMemoryTransport.abort: every party still waiting stops with ProtocolAbortError.
                _, who, exc = failures[0]
                tell_abort((ends[n] for n in pending), f"{who} failed with {type(exc).__name__}: {exc}")
                give_up = time.monotonic() + _GRACE
            if give_up is not None and time.monotonic() >= give_up:
                break  # the caller's finally kills and reaps whoever has not finished
    finally:
        selector.close()
    return results, traffic, failures
