"""The mixture model: gradients against finite differences, norms and their public bounds, the statistics map,
priors, encoding errors, sampling, and paper 002's Adult schema."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning.dpvi.mixture import (
    BetaFeature,
    CategoricalFeature,
    MixtureModel,
    MixturePriors,
    adult_model,
)
from mpdp.learning.dpvi.tables import softmax_last_zero
from mpdp.randomness import RandomSource

FEATURES = (BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z")), BetaFeature("b", (-1.0, 1.0)),
            CategoricalFeature("d", ("lo", "mid", "hi"), edges=(0.0, 1.0, 5.0, 9.0), integer=True))


def _problem(seed: int, components: int = 3, n: int = 9) -> tuple[MixtureModel, np.ndarray, np.ndarray]:
    rng = RandomSource.seeded(seed)
    model = MixtureModel(FEATURES, components=components)
    theta = 0.7 * standard_normal(model.dim, rng=rng.spawn("theta"))
    values = np.column_stack([10 * rng.random(n), rng.integers(0, 3, n), 2 * rng.random(n) - 1, 9 * rng.random(n)])
    values[0] = [0.0, 0.0, -1.0, 0.0]  # the domain's edges
    values[1] = [10.0, 2.0, 1.0, 9.0]
    return model, theta, values


def _column_map(model: MixtureModel) -> list[tuple[int, int]]:
    """(component, column of per_example_grads) of each block coordinate, in block order."""
    out, offset = [], 0
    for feature in model.features:
        out += [(k, offset + j) for k in range(model.components) for j in range(feature.n_params)]
        offset += feature.n_params
    return out


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000))
def test_gradients_match_finite_differences(seed: int) -> None:
    model, theta, values = _problem(seed)
    block = model.block()
    data = block.encode(values)
    grads = block.per_example_grads(theta, data)
    h = 1e-6
    for d, (k, col) in zip(block.indices, _column_map(model), strict=True):
        up, down = theta.copy(), theta.copy()
        up[d] += h
        down[d] -= h
        numeric = (block.log_densities(up, data) - block.log_densities(down, data))[:, k] / (2 * h)
        np.testing.assert_allclose(grads[:, k, col], numeric, rtol=1e-5, atol=1e-5)


@settings(max_examples=10)
@given(seed=st.integers(0, 10_000))
def test_norms_bounds_and_statistics_map(seed: int) -> None:
    model, theta, values = _problem(seed)
    block = model.block()
    data = block.encode(values)
    grads = block.per_example_grads(theta, data)
    norms = block.sq_norms(theta, data)
    np.testing.assert_allclose(norms, np.sum(grads**2, axis=2), rtol=1e-12)
    assert np.all(norms <= block.sq_norm_bound(theta))  # the edges of every domain are in the data
    w = RandomSource.seeded(seed).random((data.n, model.components))
    mapped = block.stat_map(theta).apply(block.stats(data).T @ w, w.sum(axis=0))
    direct = np.array([np.sum(w[:, k] * grads[:, k, c]) for k, c in _column_map(model)])
    np.testing.assert_allclose(mapped, direct, rtol=1e-10, atol=1e-10)
    assert np.max(np.abs(block.stats(data))) <= block.stat_bound


def test_blocks_partition_the_model() -> None:
    model, theta, values = _problem(1)
    left, right = model.block(["a", "c"]), model.block(["b", "d"])
    full = model.block()
    data = full.encode(values)
    split = (left.log_densities(theta, left.encode(values[:, :2]))
             + right.log_densities(theta, right.encode(values[:, 2:])))
    np.testing.assert_allclose(split, full.log_densities(theta, data))
    held = sorted(np.concatenate([left.indices, right.indices]).tolist())
    assert held == list(range(model.components - 1, model.dim))


def test_log_likelihood_is_the_mixture() -> None:
    model, theta, values = _problem(2)
    pi = model.weights(theta)
    dens = np.exp(model.block().log_densities(theta, model.block().encode(values)))
    np.testing.assert_allclose(model.log_likelihood(theta, values), np.log(dens @ pi), rtol=1e-10)


def test_prior_gradient_matches_finite_differences() -> None:
    model = MixtureModel(FEATURES, components=3, priors=MixturePriors(2.0, 0.5, 1.5, 0.7))
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(3))
    K = model.components

    def log_prior(t: np.ndarray) -> float:
        pr = model.priors
        pi = model.weights(t)
        total = pr.weights_concentration * np.sum(np.log(pi))  # Dirichlet(alpha) with its log-ratio Jacobian
        for f, feature in enumerate(model.features):
            block = t[model.slice(f)].reshape(K, -1)
            if isinstance(feature, BetaFeature):
                total += np.sum(pr.beta_shape * block - pr.beta_rate * np.exp(block))
            else:
                total += pr.categorical_concentration * np.sum(np.log(softmax_last_zero(block)))
        return float(total)

    h = 1e-6
    numeric = np.array([(log_prior(theta + h * e) - log_prior(theta - h * e)) / (2 * h) for e in np.eye(model.dim)])
    np.testing.assert_allclose(model.log_prior_grad(theta), numeric, rtol=1e-5, atol=1e-6)


def test_bad_values_are_refused() -> None:
    model, _, values = _problem(4)
    block = model.block()
    high = values.copy()
    high[0, 0] = 10.5
    with pytest.raises(DomainError, match=r"values of a"):
        block.encode(high)
    unseen = values.copy()
    unseen[0, 1] = 3.0
    with pytest.raises(DomainError, match="categories seen at fit time"):
        block.encode(unseen)
    fractional = values.copy()
    fractional[0, 1] = 0.5
    with pytest.raises(DomainError, match="integer codes"):
        block.encode(fractional)
    outside_bins = values.copy()
    outside_bins[0, 3] = -1.0
    with pytest.raises(DomainError, match="declared bins"):
        block.encode(outside_bins)
    nan = values.copy()
    nan[0, 2] = np.nan
    with pytest.raises(DomainError):
        block.encode(nan)
    with pytest.raises(ShapeMismatchError):
        block.encode(values[:, :3])


def test_bad_schemas_are_refused() -> None:
    with pytest.raises(ParameterError, match="bounds"):
        BetaFeature("a", (1.0, 1.0))
    with pytest.raises(ParameterError, match="at least two"):
        CategoricalFeature("c", ("only",))
    with pytest.raises(ParameterError, match="edges"):
        CategoricalFeature("c", ("a", "b"), edges=(0.0, 1.0))
    with pytest.raises(ParameterError, match="unique"):
        MixtureModel((BetaFeature("a", (0, 1)), BetaFeature("a", (0, 1))))
    with pytest.raises(ParameterError, match="components"):
        MixtureModel(FEATURES, components=0)
    with pytest.raises(ParameterError, match="block features"):
        MixtureModel(FEATURES).block(["a", "nope"])
    with pytest.raises(ParameterError, match="theta"):
        MixtureModel(FEATURES).log_likelihood(np.zeros(3), np.zeros((1, 4)))


def test_sampling_follows_the_model() -> None:
    model = MixtureModel((BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z"))), components=2)
    theta = np.zeros(model.dim)
    theta[0] = np.log(3.0)  # pi = (3/4, 1/4)
    theta[model.slice(0)] = np.log([2.0, 5.0, 5.0, 2.0])  # Beta(2, 5) and Beta(5, 2)
    theta[model.slice(1)] = [np.log(8.0), 0.0, 0.0, np.log(8.0)]  # p = (.8, .1, .1) and (.1, .8, .1)
    n = 20_000
    sample = model.sample(theta, n, RandomSource.seeded(5))
    assert sample.shape == (n, 2)
    assert np.all((sample[:, 0] >= 0) & (sample[:, 0] <= 10)) and set(np.unique(sample[:, 1])) <= {0.0, 1.0, 2.0}
    # mixture means: E[x] = 10 (3/4 * 2/7 + 1/4 * 5/7); P(c = x) = 3/4 * .8 + 1/4 * .1. Std errors ~0.02 and ~0.003:
    # 6-sigma tolerances make a false failure rate below 1e-8 with this fixed seed.
    assert abs(sample[:, 0].mean() - 10 * (0.75 * 2 / 7 + 0.25 * 5 / 7)) < 0.15
    assert abs(np.mean(sample[:, 1] == 0) - (0.75 * 0.8 + 0.25 * 0.1)) < 0.02


def test_adult_schema(adult: Dataset) -> None:
    model = adult_model(adult, components=10)
    kinds = {f.name: type(f).__name__ for f in model.features}
    assert {n for n, k in kinds.items() if k == "BetaFeature"} == {"age", "fnlwgt", "hours-per-week"}
    assert kinds["income"] == "CategoricalFeature" and kinds["education-num"] == "CategoricalFeature"
    values = model.values_of(adult)
    ll = model.log_likelihood(np.zeros(model.dim), values[:500])
    assert np.all(np.isfinite(ll))
    synthetic = model.sample(np.zeros(model.dim), 50, RandomSource.seeded(6))
    assert np.all(np.isfinite(model.log_likelihood(np.zeros(model.dim), synthetic)))


def test_theta_derived_values_follow_theta_even_when_it_is_modified_in_place() -> None:
    # The block computes each feature's parameters once per theta (keyed by its bytes, not its identity).
    model, theta, values = _problem(3)
    block = model.block()
    data = block.encode(values)
    before = block.log_densities(theta, data)
    fresh = model.block().log_densities(theta.copy() * 1.5, data)
    theta *= 1.5  # the same array, new values
    np.testing.assert_array_equal(block.log_densities(theta, data), fresh)
    assert not np.array_equal(before, fresh)
    a, _ = block._beta(theta, 0)
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1.0  # shared between the computations of a step: never modified

