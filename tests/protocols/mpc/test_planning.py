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


def _run(planned: bool) -> tuple[list[np.ndarray], int]:
    def role(comm: Any) -> list[np.ndarray]:
        inner = DealerProvider(comm)
        provider = PlannedProvider(inner) if planned else inner
        out = []
        with MPCSession(comm, provider=provider, parties=inner.parties, fmt=HIGH_PRECISION) as s:
            for step in range(4):
                mine = np.linspace(0.5, 2.0, 6) + step if comm.name == "alice" else None
                x = s.input("alice", mine, bound=8.0)
                block: AbstractContextManager[None] = nullcontext()
                if isinstance(provider, PlannedProvider):
                    block = provider.planned("step")
                with block:
                    out.append(((x * x) * x + x.square()).reveal())
        return out

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(3))
    return run.results["alice"], run.results["dealer"]["batches"]


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
        def __init__(self) -> None:  # no dealer needed: nothing is fetched
            pass

    provider = PlannedProvider(Dummy())
    with provider.planned("a"), pytest.raises(ParameterError, match="nest"), provider.planned("b"):
        pass
    with pytest.raises(ParameterError, match="CorrelationProvider"):
        PlannedProvider(object())  # type: ignore[arg-type]
