"""PlannedProvider: the same results, with a repeated block's correlations fetched in one dealer request."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import pytest

from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.errors import ParameterError
from mpdp.protocols.mpc import DealerProvider, MPCSession, TrustedDealer
from mpdp.protocols.mpc.planning import PlannedProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def _run(planned: bool, ahead: int = 0) -> tuple[list[np.ndarray], int]:
    """Four blocks; with ``ahead``, the first ``ahead`` of them request the next block's plan ahead."""
    return _run_counted(planned, ahead)[:2]


def _run_counted(planned: bool, ahead: int = 0) -> tuple[list[np.ndarray], int, int]:
    def role(comm: Any) -> tuple[list[np.ndarray], int]:
        inner = DealerProvider(comm)
        provider = PlannedProvider(inner) if planned else inner
        out = []
        with MPCSession(comm, provider=provider, parties=inner.parties, fmt=HIGH_PRECISION) as s:
            for step in range(4):
                mine = np.linspace(0.5, 2.0, 6) + step if comm.name == "alice" else None
                x = s.input("alice", mine, bound=8.0)
                block: AbstractContextManager[None] = nullcontext()
                if isinstance(provider, PlannedProvider):
                    block = provider.planned("step", ahead="step" if step < ahead else None)
                with block:
                    out.append(((x * x) * x + x.square()).reveal())
        return out, comm.traffic.rounds

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(3))
    out, rounds = run.results["alice"]
    return out, run.results["dealer"]["batches"], rounds


def test_planned_blocks_fetch_once_and_compute_the_same() -> None:
    plain, plain_batches = _run(planned=False)
    planned, planned_batches = _run(planned=True)
    for a, b in zip(plain, planned, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    # the first block fetches operation by operation, the three repeats one request each
    first_block = plain_batches // 4
    assert planned_batches <= first_block + 3 < plain_batches


def test_nested_blocks_are_refused() -> None:
    class Dummy(DealerProvider):
        def __init__(self) -> None:  # no dealer needed: nothing is fetched, nothing queued
            self._ready = []

    provider = PlannedProvider(Dummy())
    with provider.planned("a"), pytest.raises(ParameterError, match="nest"), provider.planned("b"):
        pass
    with pytest.raises(ParameterError, match="CorrelationProvider"):
        PlannedProvider(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("ahead", [3, 4])
def test_blocks_fetched_ahead_compute_the_same_in_fewer_rounds(ahead: int) -> None:
    """Requesting the next block's plan ahead changes when correlations are fetched, not which: the results
    are identical; the repeats need no round trip of their own. With ``ahead=4`` the last block requests a
    block that never runs: its corrections are taken at close and the run still ends."""
    planned, planned_batches, planned_rounds = _run_counted(planned=True)
    early, early_batches, early_rounds = _run_counted(planned=True, ahead=ahead)
    for a, b in zip(planned, early, strict=True):
        np.testing.assert_array_equal(a, b)
    assert early_batches == planned_batches + (ahead == 4)
    assert early_rounds < planned_rounds


def _drifting(sizes: list[int], ahead: bool) -> tuple[list[np.ndarray], list[int], list[int]]:
    """Blocks of ``sizes`` elements under one key: each block's result, the size its plan records, and the
    correlations left queued after it."""
    def role(comm: Any) -> tuple[list[np.ndarray], list[int], list[int]]:
        inner = DealerProvider(comm)
        provider = PlannedProvider(inner)
        out, plans, queued = [], [], []
        with MPCSession(comm, provider=provider, parties=inner.parties, fmt=HIGH_PRECISION) as s:
            for i, n in enumerate(sizes):
                x = s.input("alice", np.linspace(0.5, 2.0, n) if comm.name == "alice" else None, bound=8.0)
                with provider.planned("step", ahead="step" if ahead and i + 1 < len(sizes) else None):
                    out.append((x * x).reveal())
                plans.append(provider.plans["step"][0].shape[0])
                queued.append(len(inner._ready))
        return out, plans, queued

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(4))
    assert run.results["bob"][2] == run.results["alice"][2]  # the parties' queues stay equal
    result: tuple[list[np.ndarray], list[int], list[int]] = run.results["alice"]
    return result


def test_a_block_whose_shapes_change_is_replanned_from_its_latest_run() -> None:
    """Blocks of 6, 6, 9, 9, 9 elements under one key: the first 9-element block finds the 6-element plan
    (its correlations go unused, and are dropped as the block ends) and fetches its own; from the next one
    on, the 9-element plan is prefetched in one request. Results equal the unplanned run's."""
    sizes = [6, 6, 9, 9, 9]
    out, plans, queued = _drifting(sizes, ahead=False)
    assert plans == sizes  # the plan follows the latest run
    assert queued == [0] * len(sizes)  # nothing stale stays queued
    for n, value in zip(sizes, out, strict=True):
        np.testing.assert_allclose(value, np.linspace(0.5, 2.0, n) ** 2, atol=1e-9)


def test_stale_correlations_do_not_pile_up_when_shapes_drift() -> None:
    """Shapes drifting from block to block, each block requesting the next one's plan ahead (one masked
    product per block here). What stays queued after a block is at most the next block's plan: the plan
    prefetched ahead when it still matches (the block's shapes equal the previous one's), nothing when the
    shapes changed (it was fetched for the old ones), nothing after the last block. Not the leftovers of every
    earlier shape, which every later lookup would pass over."""
    sizes = [6, 9, 6, 12, 12, 9, 6, 6]
    out, plans, queued = _drifting(sizes, ahead=True)
    assert plans == sizes
    assert queued == [1, 0, 0, 0, 1, 0, 0, 0]
    for n, value in zip(sizes, out, strict=True):
        np.testing.assert_allclose(value, np.linspace(0.5, 2.0, n) ** 2, atol=1e-9)


def test_a_planned_provider_over_another_provider_asks_it_by_its_typed_methods() -> None:
    """The planner calls its inner provider's typed methods, whatever the provider (here triples and the rest
    from one dealer, composed)."""
    from mpdp.protocols.mpc.provider import WithTriplesFrom

    def role(comm: Any) -> list[np.ndarray]:
        dealer = DealerProvider(comm)
        provider = PlannedProvider(WithTriplesFrom(dealer, rest=dealer))
        out = []
        with MPCSession(comm, provider=provider, parties=dealer.parties, fmt=HIGH_PRECISION) as s:
            for step in range(3):
                x = s.input("alice", np.linspace(0.5, 2.0, 6) + step if comm.name == "alice" else None, bound=8.0)
                with provider.planned("step"):
                    out.append(((x * x) * x + x.square()).reveal())
        return out

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(5))
    for step, got in enumerate(run.results["alice"]):
        x = np.linspace(0.5, 2.0, 6) + step
        np.testing.assert_allclose(got, x**3 + x**2, rtol=1e-6)
