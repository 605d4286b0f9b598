"""Fuzzing the gRPC transport's frame reader (``GrpcTransport._on_deliver``, the server side of every delivery):
frames in any order reassemble exactly the messages sent; any request either is applied or aborts the call
with INVALID_ARGUMENT, never another exception."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

grpc = pytest.importorskip("grpc")
from mpdp.errors import MalformedMessageError  # noqa: E402
from mpdp.runtime.grpc_failures import PeerHealth  # noqa: E402
from mpdp.runtime.grpc_transport import GrpcTransport  # noqa: E402

FUZZ = settings(max_examples=150, deadline=2000)
KINDS = (1, 2, 3, 4)  # DATA_MORE, DATA_END, ABORT, FINISHED


class AbortedError(Exception):
    pass


class FakeContext:
    def auth_context(self) -> dict[str, list[bytes]]:
        return {"x509_common_name": [b"alice"]}

    def abort(self, code: Any, details: str) -> None:
        assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED)
        raise AbortedError(details)


def _receiver(max_buffered: int = 1 << 20) -> Any:
    t = object.__new__(GrpcTransport)
    t.max_buffered = max_buffered
    t._buffered = {}
    t._peer_errors = {}
    peers = ["alice"]
    t.peers = peers
    t._cond = threading.Condition()
    t._inbox = {p: deque() for p in peers}
    t._partial = {p: [] for p in peers}
    t._finished_peers = set()
    t._aborted_peers = {}
    t.health = PeerHealth("bob", {"alice": "127.0.0.1:1", "bob": "127.0.0.1:2"}, connect_timeout=30, started=0.0)
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
    assert t._buffered.get("alice", 0) == 0  # nothing stays counted once every message is whole


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


def test_a_peer_that_buffers_more_than_the_limit_is_refused_by_name() -> None:
    t = _receiver(max_buffered=100)
    # frames 1.. arrive ahead of frame 0, which never comes: they are held until the limit refuses them
    for number in range(1, 4):
        t._on_deliver(bytes([1]) + number.to_bytes(8, "little") + b"x" * 30, FakeContext())
    with pytest.raises(AbortedError, match="buffered"):
        t._on_deliver(bytes([1]) + (4).to_bytes(8, "little") + b"x" * 30, FakeContext())
    error = t._peer_errors["alice"]
    assert isinstance(error, MalformedMessageError) and "alice" in str(error)
    assert len(t._early["alice"]) == 3


def test_pieces_of_one_long_message_count_against_the_limit_until_it_ends() -> None:
    t = _receiver(max_buffered=64)
    t._on_deliver(bytes([1]) + (0).to_bytes(8, "little") + b"a" * 40, FakeContext())
    t._on_deliver(bytes([2]) + (1).to_bytes(8, "little") + b"b" * 20, FakeContext())  # 60 bytes: delivered
    assert list(t._inbox["alice"]) == [b"a" * 40 + b"b" * 20] and t._buffered["alice"] == 0
    t._on_deliver(bytes([1]) + (2).to_bytes(8, "little") + b"c" * 40, FakeContext())
    with pytest.raises(AbortedError):
        t._on_deliver(bytes([2]) + (3).to_bytes(8, "little") + b"d" * 40, FakeContext())  # 80 > 64
