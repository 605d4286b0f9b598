"""The DPVI loop: minibatching, the non-partitioned step (clipping, noise), and learning without noise."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets.synthetic import mixed_tabular, standard_normal
from mpdp.errors import ParameterError
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.training import BatchPlan, DPVISettings, FloatStep, per_example_gradients, train
from mpdp.learning.dpvi.variational import AdamSettings
from mpdp.randomness import RandomSource


def test_poisson_batches_have_rate_q() -> None:
    plan = BatchPlan(n=1000, batch_size=50, epochs=2, batching="poisson")
    assert plan.steps == 40 and plan.sampling_rate == 0.05
    sizes = [b.size for b in plan.batches(RandomSource.seeded(1))]
    assert len(sizes) == 40
    # mean of 40 Binomial(1000, 0.05) sizes: std 0.97; 6 sigma keeps the false-failure rate below 1e-8
    assert abs(np.mean(sizes) - 50) < 6


def test_poisson_batches_keep_the_minibatches_of_the_float_test() -> None:
    """The inclusion test takes words below ``floor(q 2^64)`` (rate at most q); the float test ``random(n) < q``
    (rate up to 2^-53 above q) on the same stream disagrees on a record with probability below 2^-53, so both
    give the same minibatches on seeded runs."""
    plan = BatchPlan(n=45_222, batch_size=1_000, epochs=1, batching="poisson")
    new = list(plan.batches(RandomSource.seeded(3)))
    source = RandomSource.seeded(3).spawn("epoch/0")
    old = [np.flatnonzero(source.random(plan.n) < plan.sampling_rate) for _ in range(plan.steps_per_epoch)]
    assert len(new) == len(old) == 45
    assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))


def test_disjoint_batches_partition_each_epoch() -> None:
    plan = BatchPlan(n=103, batch_size=10, epochs=3, batching="disjoint")
    batches = list(plan.batches(RandomSource.seeded(2)))
    assert len(batches) == 30
    for e in range(3):
        epoch = np.concatenate(batches[10 * e:10 * (e + 1)])
        assert sorted(epoch.tolist()) == list(range(103))


def test_bad_plans_are_refused() -> None:
    with pytest.raises(ParameterError, match="batch_size"):
        BatchPlan(n=10, batch_size=11, epochs=1, batching="poisson")
    with pytest.raises(ParameterError, match="batching"):
        DPVISettings(batching="shuffled")
    with pytest.raises(ParameterError, match="noise_multiplier"):
        DPVISettings(noise_multiplier=-1.0)


def _model_and_values(n: int = 400) -> tuple[MixtureModel, np.ndarray]:
    data = mixed_tabular(n, numeric=2, categorical=2, categories=3, rng=RandomSource.seeded(3))
    model = MixtureModel.from_dataset(data, components=3)
    return model, model.values_of(data)


def test_per_example_gradients_are_those_of_the_log_likelihood() -> None:
    model, values = _model_and_values(20)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(4))
    grads = per_example_gradients(model, model.block(), theta, model.block().encode(values[:5]))
    h = 1e-6
    for d in range(model.dim):
        e = np.zeros(model.dim)
        e[d] = h
        numeric = (model.log_likelihood(theta + e, values[:5]) - model.log_likelihood(theta - e, values[:5])) / (2 * h)
        np.testing.assert_allclose(grads[:, d], numeric, rtol=1e-5, atol=1e-6)


def test_float_step_clips_and_adds_noise() -> None:
    model, values = _model_and_values(50)
    theta = 3.0 * standard_normal(model.dim, rng=RandomSource.seeded(5))
    single = FloatStep(model, values, clip=0.1, noise_multiplier=0.0, rng=RandomSource.seeded(6))
    for i in range(10):
        assert np.linalg.norm(single(theta, np.array([i]))) <= 0.1 * (1 + 1e-12)
    noisy = FloatStep(model, values, clip=0.1, noise_multiplier=5.0, grid_bits=20, rng=RandomSource.seeded(7))
    releases = [noisy(theta, np.arange(10)) for _ in range(5)]
    diffs = np.concatenate([r - single(theta, np.arange(10)) for r in releases])
    # the noise has std 0.5; 5 * dim draws estimate it within 0.1 (the false-failure rate is below 1e-9);
    # releases lie on the grid 2^-20
    assert abs(np.std(diffs) - 0.5) < 0.1
    assert all(np.all(r * 2**20 == np.rint(r * 2**20)) for r in releases)
    with pytest.raises(ParameterError, match="clip"):
        FloatStep(model, values, clip=None, noise_multiplier=1.0, rng=RandomSource.seeded(8))


def test_training_without_noise_improves_the_fit() -> None:
    model, values = _model_and_values(400)
    settings = DPVISettings(epochs=4, batch_size=40, clip=5.0, noise_multiplier=0.0,
                            adam=AdamSettings(learning_rate=0.05))
    step = FloatStep(model, values, clip=settings.clip, noise_multiplier=0.0, rng=RandomSource.seeded(9))
    seen: list[int] = []
    posterior, trace = train(model, settings, BatchPlan.of(len(values), settings), step, rng=RandomSource.seeded(10),
                             on_epoch=lambda e, _p: seen.append(e))
    # 400 rows in batches of 40 over 4 epochs: 40 steps, each recorded with its batch's size
    assert seen == [1, 2, 3, 4] and len(trace.epochs) == 4 and len(trace.batch_sizes) == 40
    first = -model.log_likelihood(trace.epochs[0].mu, values).mean()
    last = -model.log_likelihood(posterior.mu, values).mean()
    assert last < first


def test_ahead_is_told_each_next_minibatch_size_and_changes_nothing_else() -> None:
    """``train(..., ahead=)`` hears the size of the minibatch after the one about to be stepped (``None`` before the
    last step), before that step; drawing the minibatches one step early leaves them, and the fit, unchanged."""
    model, values = _model_and_values(200)
    settings = DPVISettings(epochs=2, batch_size=30, clip=5.0, noise_multiplier=0.0)
    plan = BatchPlan.of(len(values), settings)

    def fit(ahead: object) -> tuple[np.ndarray, list[int], list[tuple[str, int | None]]]:
        events: list[tuple[str, int | None]] = []
        inner = FloatStep(model, values, clip=settings.clip, noise_multiplier=0.0, rng=RandomSource.seeded(9))

        def step(theta: np.ndarray, batch: np.ndarray) -> np.ndarray:
            events.append(("step", int(batch.size)))
            return inner(theta, batch)

        tell = (lambda size: events.append(("ahead", size))) if ahead else None
        posterior, trace = train(model, settings, plan, step, rng=RandomSource.seeded(10), ahead=tell)
        return posterior.mu, trace.batch_sizes, events

    plain_mu, plain_sizes, _ = fit(False)
    mu, sizes, events = fit(True)
    assert sizes == plain_sizes and len(set(sizes)) > 1  # Poisson sizes vary: the test can tell them apart
    np.testing.assert_array_equal(mu, plain_mu)
    told = [size for kind, size in events if kind == "ahead"]
    assert told == [*sizes[1:], None]
    assert [kind for kind, _ in events] == ["ahead", "step"] * len(sizes)  # each told before its step
