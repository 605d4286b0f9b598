"""The DPVI step on masked wires: equal to float64 within the circuit step's bound, clipping every record to C,
10 online rounds by the transport, its clipping factor's table within its stated error, and when it applies."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import ParameterError
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.parties import DataParty, VerticalSetup
from mpdp.protocols.mixture_gradient import gradient_error_bound, release
from mpdp.protocols.mixture_gradient.masked_step import (
    ROUNDS,
    gradient_sum,
    masked_applies,
    masked_gradient_sum,
    rsqrt_table,
)
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.mpc.dealer import DealerProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.crypto.masked.test_tables import _evaluate, _inputs, _masks
from tests.protocols.mixture_gradient.test_step import FEATURES, _columns, _data, _float_sum, _setup


def _masked(setup: VerticalSetup) -> VerticalSetup:
    return replace(setup, functions="masked")


def _sums(setup: VerticalSetup, values: np.ndarray, theta: np.ndarray, batches: list[np.ndarray],
          *, online: bool = False) -> list[tuple[np.ndarray, Any, bool, int]]:
    """Each batch's noise-free released sum through :func:`gradient_sum` (model order), its public plan, whether
    the masked program ran, and (with ``online``: after a warm-up step and the offline phase) the step's clocks."""
    columns = _columns(setup, values)

    def role(name: str) -> Any:
        party = DataParty(name, setup, columns[name])

        def run(comm: Any) -> list[tuple[np.ndarray, Any, bool, tuple[int, int]]]:
            session, provider = party.open_session(comm)
            out = []
            with session:
                for batch in batches:
                    key = ("step", int(batch.size))
                    public = setup.step_plan(theta, int(batch.size))
                    ran = session.functions == "masked" and masked_applies(session, public, setup.precision)
                    mine = party.local_input(theta, batch, public)
                    before = comm.traffic.rounds
                    if online:
                        with provider.planned(key):
                            gradient_sum(session, public, mine, setup.precision)
                        provider.prefetch(provider.plans[key])
                        if isinstance(provider.inner, DealerProvider):
                            provider.inner.receive_prefetched()
                        session.public(np.zeros(1)).reveal()  # synchronised clocks
                        before = comm.traffic.rounds
                    with provider.planned(key):
                        released = release(gradient_sum(session, public, mine, setup.precision), None)
                    out.append((setup.scatter(released), public, ran, (before, comm.traffic.rounds)))
            return out
        return run

    roles: dict[str, Any] = {name: role(name) for name in setup.parties}
    roles["dealer"] = TrustedDealer(parties=setup.parties)
    run = run_protocol(roles, rng=RandomSource.seeded(9))
    steps = list(zip(*(run.results[name] for name in setup.parties), strict=True))
    # the step's rounds: the latest clock after it minus the latest before (a clock advances on receipt only)
    return [(mine[0], mine[1], mine[2], max(s[3][1] for s in step) - max(s[3][0] for s in step))
            for step in steps for mine in step[:1]]


@settings(max_examples=4)
@given(seed=st.integers(0, 10_000), components=st.sampled_from([2, 3]), batch=st.integers(1, 10),
       scale=st.sampled_from([0.3, 1.5]))
@example(seed=166, components=3, batch=1, scale=1.5)  # a clipping domain of 2^24: the circuit step
def test_masked_step_equals_float_within_the_circuit_bound(seed: int, components: int, batch: int,
                                                           scale: float) -> None:
    model = MixtureModel(FEATURES, components=components)
    n = 12
    values = _data(seed, n)
    theta = scale * standard_normal(model.dim, rng=RandomSource.seeded(seed + 1))
    setup = _masked(_setup(model, n, clip=1.0))
    idx = np.sort(RandomSource.seeded(seed + 2).permutation(n)[:batch]).astype(np.int64)
    ((secure, public, ran, _),) = _sums(setup, values, theta, [idx])
    # clipping domains from 2^24 leave the normalisation no room in Z_2^128: the circuit step runs them
    assert ran == (public.clip_params.high_exp < 24)
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(components - 1)] + [b.indices for b in setup.blocks()])
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    assert np.all(np.abs(secure[order] - reference[order]) <= bound)


def test_the_step_takes_its_rounds_by_the_transport() -> None:
    model = MixtureModel(FEATURES, components=3)
    values = _data(4, 12)
    theta = 0.3 * standard_normal(model.dim, rng=RandomSource.seeded(5))
    idx = np.arange(0, 12, 2, dtype=np.int64)
    ((masked, public, ran, rounds),) = _sums(_masked(_setup(model, 12, 1.0)), values, theta, [idx], online=True)
    assert ran and rounds == ROUNDS + 1  # the program's rounds and the release's opening
    circuit_setup = replace(_setup(model, 12, 1.0), functions="circuit")
    ((circuit, _, ran_circuit, circuit_rounds),) = _sums(circuit_setup, values, theta, [idx], online=True)
    assert not ran_circuit and circuit_rounds > 2 * rounds
    setup = _setup(model, 12, 1.0)
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    order = np.concatenate([np.arange(2)] + [b.indices for b in setup.blocks()])
    assert np.all(np.abs(masked[order] - reference[order]) <= bound)
    assert np.all(np.abs(circuit[order] - reference[order]) <= bound)


def test_clipping_bounds_every_per_example_norm() -> None:
    # large Beta parameters make per-record gradients huge; each single-record release must stay within C
    model = MixtureModel(FEATURES, components=2)
    values = _data(5, 6)
    theta = standard_normal(model.dim, rng=RandomSource.seeded(6))
    for f in (0, 2):
        theta[model.slice(f)] = 3.0  # a = b = e^3: every record's gradient is over 14 C
    clip = 0.5
    setup = _masked(_setup(model, 6, clip))
    results = _sums(setup, values, theta, [np.array([i], dtype=np.int64) for i in range(6)])
    assert all(ran for _, _, ran, _ in results)
    norms = [np.linalg.norm(secure) for secure, _, _, _ in results]
    _, raw, _ = _float_sum(setup, values, theta, np.arange(6), clip)
    assert np.min(raw) > 10 * clip  # every record is clipped ...
    assert max(norms) <= clip  # ... and no computed contribution exceeds C
    assert min(norms) >= results[0][1].clip * (1 - 1e-4)  # ... but to C' closely


def test_three_parties_or_a_circuit_session_run_the_circuit_step() -> None:
    model = MixtureModel(FEATURES, components=2)
    values = _data(8, 12)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(9))
    idx = np.arange(1, 12, 2, dtype=np.int64)
    three = _masked(_setup(model, 12, 1.0, groups=(("a",), ("c", "b"), ("d",))))
    ((secure, public, ran, _),) = _sums(three, values, theta, [idx])
    assert not ran
    reference, _, min_sum = _float_sum(three, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(1)] + [b.indices for b in three.blocks()])
    assert np.all(np.abs(secure[order] - reference[order])
                  <= gradient_error_bound(public, three.precision, min_sum=min_sum))


def test_masked_gradient_sum_refuses_what_it_cannot_run() -> None:
    model = MixtureModel(FEATURES, components=2)
    setup = _setup(model, 4, 1.0, groups=(("a",), ("c", "b"), ("d",)))
    theta = np.zeros(model.dim)
    public = setup.step_plan(theta, 2)
    columns = _columns(setup, _data(1, 4))

    def role(name: str) -> Any:
        party = DataParty(name, setup, columns[name])

        def run(comm: Any) -> None:
            session, _ = party.open_session(comm)
            with session, pytest.raises(ParameterError, match="masked step"):
                masked_gradient_sum(session, public, party.local_input(theta, np.arange(2), public), setup.precision)
        return run

    roles: dict[str, Any] = {name: role(name) for name in setup.parties}
    roles["dealer"] = TrustedDealer(parties=setup.parties)
    run_protocol(roles, rng=RandomSource.seeded(1))


@pytest.mark.parametrize(("degree", "bound"), [(8, 1e-7), (10, 3e-9)])
@settings(max_examples=3, deadline=None)
@given(salt=st.integers(0, 2**31))
def test_the_clipping_factor_table_within_its_stated_error(degree: int, bound: float, salt: int) -> None:
    # as the parties combine it, at the masks and inputs where delta wraps and at the domain's ends
    spec = rsqrt_table(degree)
    assert spec.max_bits() < 126
    for lam in _masks(spec, salt):
        raw = _inputs(spec, lam, salt)
        got, bits = _evaluate(spec, lam, raw)
        z = np.array([r / 2.0**spec.in_frac for r in raw])
        assert np.max(np.abs(got * np.sqrt(z) - 1.0)) < bound
        assert bits <= spec.max_bits()
