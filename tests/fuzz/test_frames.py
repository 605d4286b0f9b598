"""Fuzzing the frame readers: the forked parties' length-prefixed frames (:class:`Inbox`) and the gRPC
transport's numbered frames (``GrpcTransport._on_deliver``). Every byte stream or request sequence yields
exactly the messages it frames, or raises a typed error (MalformedMessageError / the gRPC abort); nothing
else, no hang, and nothing larger than ``max_bytes`` is ever buffered."""

from __future__ import annotations

import socket
import threading
from collections import deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.errors import MalformedMessageError
from mpdp.runtime.processes.frames import FRAME, SMALL, Inbox

FUZZ = settings(max_examples=150, deadline=2000)
MAX_BYTES = 3 * SMALL


def _read_all(stream: bytes, chunks: list[int]) -> list[bytes]:
    a, b = socket.socketpair()
    try:
        b.setblocking(False)
        inbox = Inbox("peer", MAX_BYTES)

        def writer() -> None:
            at = 0
            try:
                for size in [*chunks, len(stream)]:
                    if at >= len(stream):
                        break
                    a.sendall(stream[at:at + max(size, 1)])
                    at += max(size, 1)
                a.shutdown(socket.SHUT_WR)
            except OSError:  # the reader refused the stream and closed its end
                pass

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            for _ in range(100_000):
                inbox.feed(b)
                if inbox._body is not None:
                    assert len(inbox._body) <= MAX_BYTES
                if inbox.eof:
                    break
                threading.Event().wait(0.0005)
            assert inbox.eof, "the reader hung"
        finally:
            b.close()
            thread.join(timeout=10)
        return [bytes(f) for f in inbox.frames]
    finally:
        a.close()


bodies = st.lists(st.one_of(st.binary(max_size=64), st.integers(SMALL - 2, SMALL + 70).map(lambda n: b"x" * n)),
                  max_size=5)
chunking = st.lists(st.integers(1, SMALL + 100), max_size=8)


@FUZZ
@given(bodies, chunking)
def test_well_formed_streams_give_back_their_frames(frames: list[bytes], chunks: list[int]) -> None:
    stream = b"".join(FRAME.pack(len(f)) + f for f in frames)
    assert _read_all(stream, chunks) == frames


@FUZZ
@given(st.binary(max_size=400), bodies, chunking)
def test_arbitrary_streams_give_frames_or_a_typed_error(junk: bytes, frames: list[bytes], chunks: list[int]) -> None:
    stream = junk + b"".join(FRAME.pack(len(f)) + f for f in frames)
    try:
        got = _read_all(stream, chunks)
    except MalformedMessageError:
        return
    assert sum(len(f) + FRAME.size for f in got) <= len(stream)


def test_a_lying_length_is_refused_before_it_is_buffered() -> None:
    with pytest.raises(MalformedMessageError, match="max_bytes"):
        _read_all(FRAME.pack(MAX_BYTES + 1) + b"abc", [])


# -- gRPC frames ---------------------------------------------------------------------------------------------
grpc = pytest.importorskip("grpc")
from mpdp.runtime.grpc_transport import GrpcTransport  # noqa: E402

KINDS = (1, 2, 3, 4)  # DATA_MORE, DATA_END, ABORT, FINISHED


class AbortedError(Exception):
    pass


class FakeContext:
    def auth_context(self) -> dict[str, list[bytes]]:
        return {"x509_common_name": [b"alice"]}

    def abort(self, code: Any, details: str) -> None:
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        raise AbortedError(details)


def _receiver() -> Any:
    t = object.__new__(GrpcTransport)
    peers = ["alice"]
    t.peers = peers
    t._cond = threading.Condition()
    t._inbox = {p: deque() for p in peers}
    t._partial = {p: [] for p in peers}
    t._finished_peers = set()
    t._aborted_peers = {}
    t._seen_alive = set()
    t._unreachable_since = {}
    t._next_in = dict.fromkeys(peers, 0)
    t._early = {p: {} for p in peers}
    return t


def _frames(messages: list[bytes], chunk: int) -> list[bytes]:
    out = []
    for m in messages:
        parts = [m[i:i + chunk] for i in range(0, len(m), chunk)] or [b""]
        for j, p in enumerate(parts):
            out.append(bytes([2 if j == len(parts) - 1 else 1]) + len(out).to_bytes(8, "little") + p)
    return out


@FUZZ
@given(st.lists(st.binary(max_size=40), max_size=6), st.integers(1, 16), st.randoms(use_true_random=False))
def test_grpc_frames_in_any_order_reassemble_the_messages(messages: list[bytes], chunk: int, order: Any) -> None:
    t = _receiver()
    frames = _frames(messages, chunk)
    order.shuffle(frames)
    for f in frames:
        t._on_deliver(f, FakeContext())
    assert list(t._inbox["alice"]) == messages
    assert not t._early["alice"] and not t._partial["alice"]


@FUZZ
@given(st.lists(st.binary(max_size=30), max_size=8))
def test_grpc_arbitrary_requests_are_applied_or_aborted(requests: list[bytes]) -> None:
    t = _receiver()
    for r in requests:
        try:
            t._on_deliver(r, FakeContext())
        except AbortedError:
            continue
    assert all(isinstance(m, bytes) for m in t._inbox["alice"])
    assert len(t._early["alice"]) <= len(requests)
