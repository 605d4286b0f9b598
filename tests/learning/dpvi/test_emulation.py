"""The partitioned step's responsibilities in float64 (the floor ablation): exact without floor or drop,
floored as paper 002's Algorithm 4 says, dropped records contributing nothing, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.renormalization import RenormalizationParams
from mpdp.datasets.synthetic import mixed_tabular, standard_normal
from mpdp.errors import ParameterError
from mpdp.learning.dpvi.emulation import PartitionedResponsibilities
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.training import FloatStep
from mpdp.randomness import RandomSource

EXACT = RenormalizationParams(parties=2, min_log2=-40)
FLOORED = RenormalizationParams(parties=2, min_log2=-36, floor_log2=-36)


def _setting(scale: float) -> tuple[MixtureModel, np.ndarray, np.ndarray, tuple[tuple[str, ...], ...]]:
    data = mixed_tabular(60, numeric=2, categorical=2, categories=3, rng=RandomSource.seeded(3))
    model = MixtureModel.from_dataset(data, components=3)
    theta = scale * standard_normal(model.dim, rng=RandomSource.seeded(4))
    names = model.names
    return model, model.values_of(data), theta, (names[: len(names) // 2], names[len(names) // 2:])


def _step(model: MixtureModel, values: np.ndarray, emulated: PartitionedResponsibilities | None) -> FloatStep:
    return FloatStep(model, values, clip=1.0, noise_multiplier=0.0, rng=RandomSource.seeded(5),
                     responsibilities=emulated)


def test_exact_factors_give_the_non_partitioned_step() -> None:
    # the per-party constants cancel: the same sums as the softmax, to rounding
    model, values, theta, groups = _setting(0.5)
    batch = np.arange(40, dtype=np.int64)
    plain = _step(model, values, None)(theta, batch)
    emulated = _step(model, values, PartitionedResponsibilities(groups, EXACT))(theta, batch)
    np.testing.assert_allclose(emulated, plain, rtol=1e-9, atol=1e-12)


def test_the_floor_raises_small_responsibilities_and_the_drop_removes_records() -> None:
    # sharp components: some parties' factors fall far below the floor 2^-18
    model, values, theta, groups = _setting(6.0)
    batch = np.arange(60, dtype=np.int64)
    exact, _ = PartitionedResponsibilities(groups, EXACT).bind(model, values)(theta, batch)
    floored, kept = PartitionedResponsibilities(groups, FLOORED).bind(model, values)(theta, batch)
    assert kept.all() and np.allclose(floored.sum(axis=1), 1.0)
    pi = model.weights(theta)
    raised = floored > exact * (1 + 1e-6)
    assert raised.any()  # the floor moved some responsibilities up, each to at least pi_k 2^-36 (S_i <= 1)
    assert np.all(floored >= pi[None, :] * 2.0**-36 * (1 - 1e-12)) and np.min(exact) < np.min(pi) * 2.0**-36
    # dropping: records whose S_i is below 2^drop_log2 contribute exactly nothing
    dropper = PartitionedResponsibilities(groups, EXACT, drop_log2=-20.0)
    _, kept = dropper.bind(model, values)(theta, batch)
    assert 0 < kept.sum() < batch.size
    step = _step(model, values, dropper)
    for i in np.flatnonzero(~kept)[:3]:
        assert np.all(step(theta, np.array([i], dtype=np.int64)) == 0.0)
    i = int(np.flatnonzero(kept)[0])
    one = np.array([i], dtype=np.int64)
    np.testing.assert_allclose(step(theta, one), _step(model, values, PartitionedResponsibilities(groups, EXACT))(
        theta, one))


def test_bad_emulations_are_refused() -> None:
    model, values, _, groups = _setting(0.5)
    with pytest.raises(ParameterError, match="groups"):
        PartitionedResponsibilities(groups, RenormalizationParams(parties=3))
    with pytest.raises(ParameterError, match="drop_log2"):
        PartitionedResponsibilities(groups, EXACT, drop_log2=1.0)
    with pytest.raises(ParameterError, match="partition"):
        PartitionedResponsibilities((groups[0], groups[0]), EXACT).bind(model, values)
