"""Fuzzing the forked parties' frame reader (:class:`Inbox`, over a socket pair): every byte stream yields exactly
the frames it carries or raises MalformedMessageError; nothing else, no hang, and no frame body larger than
``max_bytes`` is ever allocated."""

from __future__ import annotations

import socket
import threading

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
