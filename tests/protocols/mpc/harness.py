"""Run one MPC program on every computing party (threads, in-memory transport) with a trusted dealer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.randomness import RandomSource
from mpdp.runtime import ProtocolRun, run_protocol

NAMES = ("alice", "bob", "carol", "dave", "erin")


def run_mpc(program: Callable[[MPCSession], Any], *, parties: int = 2, fmt: FixedPointFormat = FAST,
            seed: int | str = 0, comparisons: str = "circuit",
            dealer: TrustedDealer | None = None) -> ProtocolRun[Any]:
    """Every computing party runs ``program(session)``; returns the run (results keyed by party)."""

    def role(comm: Any) -> Any:
        with MPCSession.with_dealer(comm, fmt=fmt, comparisons=comparisons) as session:
            return program(session)

    roles: dict[str, Any] = {name: role for name in NAMES[:parties]}
    roles["dealer"] = TrustedDealer() if dealer is None else dealer
    return run_protocol(roles, rng=RandomSource.seeded(seed))


def first(run: ProtocolRun[Any]) -> Any:
    """Party alice's result, after checking every computing party returned the same."""
    import numpy as np

    values = [v for k, v in run.results.items() if k != "dealer"]
    for v in values[1:]:
        np.testing.assert_equal(v, values[0])
    return values[0]
