"""Length-prefixed frames over a non-blocking socket: what forked parties and their runner exchange.

A frame is the length of its body as u64 little-endian, then the body: the bytes
:class:`~mpdp.runtime.comm.Comm` produced (or a report to the runner), nothing else. :class:`Inbox` reads
frames incrementally and refuses a frame longer than its ``max_bytes`` before buffering it, as the codec
refuses long messages. :class:`Link` is one socket to one peer: its inbox, and an outbox for what the
kernel buffer has not taken yet, so that a send never blocks.
"""

from __future__ import annotations

import socket
import struct
from collections import deque

from mpdp.errors import MalformedMessageError, explain

__all__ = ["FRAME", "SMALL", "Inbox", "Link"]

FRAME = struct.Struct("<Q")  # a frame's header: the length of its body
SMALL = 1 << 16  # frames below this size are sent as one buffer (header and body copied together)


class Inbox:
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
                    chunk = sock.recv(SMALL)
                    got = len(chunk)
                    if got:
                        size = got - FRAME.size
                        if not self.buf and 0 < size <= self.max_bytes and FRAME.unpack_from(chunk)[0] == size:
                            self.frames.append(chunk[FRAME.size:])  # exactly one whole frame: one copy
                        else:
                            self.buf += chunk
                            self._split()
                        if got < SMALL and self._body is None:
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
        while len(self.buf) - start >= FRAME.size:
            (size,) = FRAME.unpack_from(self.buf, start)
            if size > self.max_bytes:  # refused before it is buffered, as the codec refuses long messages
                raise MalformedMessageError(explain(f"frame length from {self.sender}", size,
                                                    f"at most max_bytes = {self.max_bytes}",
                                                    "raise CodecLimits.max_bytes if such messages are expected"))
            body = start + FRAME.size
            if body + size > len(self.buf):
                if size >= SMALL:  # receive the rest straight into the frame's own buffer
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
    if len(data) < SMALL:
        return [memoryview(FRAME.pack(len(data)) + data)]
    return [memoryview(FRAME.pack(len(data))), memoryview(data)]


class Link:
    """One socket to one peer: the frames read from it and the bytes the kernel buffer has not taken yet.

    Sends never block: a frame the kernel buffer cannot take waits in ``outbox`` until :meth:`flush` (its owner
    flushes it when the socket becomes writable, reading meanwhile). Shared by a child's endpoint and by
    :mod:`mpdp.runtime.mixed`'s parent, which holds the sockets of its greenlet parties to the forked ones.
    """

    __slots__ = ("gone", "inbox", "outbox", "peer", "sock")

    def __init__(self, peer: str, sock: socket.socket, max_bytes: int) -> None:
        self.peer = peer
        self.sock = sock
        self.inbox = Inbox(peer, max_bytes)
        self.outbox: deque[memoryview] = deque()
        self.gone = False  # the socket refuses writes or has been closed: the peer has exited
        sock.setblocking(False)

    def send(self, data: bytes) -> bool:
        """Frame ``data`` for the peer; whether bytes still wait for the socket to become writable."""
        if self.gone:  # like a message queued for a finished in-memory party: never read
            return False
        queue = self.outbox
        if not queue:  # the usual case: the kernel takes the whole frame at once, header and body in one call
            head = FRAME.pack(len(data))
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
