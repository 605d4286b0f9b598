"""Roles shared by the runners' tests (threads, greenlets, processes, mixed): each runner must agree on them."""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.errors import ShapeMismatchError
from mpdp.protocols.mpc import MPCSession
from mpdp.runtime import Comm


def mpc_program(comm: Comm) -> Any:
    """alice and bob with a dealer: many rounds, the dealer's requests and replies interleaved with the openings."""
    with MPCSession.with_dealer(comm, parties=("alice", "bob")) as s:
        x = s.input("alice", np.linspace(-2, 2, 7) if comm.name == "alice" else None, bound=2.0)
        y = s.input_seeded("bob", np.full(7, 0.5) if comm.name == "bob" else None, shape=(7,), bound=1.0)
        z = x * y
        for _ in range(3):
            z = z * y + x
        return z.reveal()


def fails(comm: Comm) -> None:
    """bob fails once alice's message arrives; alice then waits for a message bob never sends."""
    if comm.name == "bob":
        comm.recv("alice", label="x")
        raise ShapeMismatchError("bob's rows do not line up")
    comm.send("bob", 1, label="x")
    comm.recv("bob", label="never")
