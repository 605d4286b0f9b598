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
from mpdp.runtime.grpc_transport import GrpcTransport  # noqa: E402

FUZZ = settings(max_examples=150, deadline=2000)
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
