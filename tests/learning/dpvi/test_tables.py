"""The theta-derived tables: equal to per-feature loops of the formulas on every kind of schema and block, one
set per theta (recomputed when theta changes, even in place), read-only, and the prepared rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import DomainError, ShapeMismatchError
from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature, EncodedBlock
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.tables import softmax_last_zero
from mpdp.randomness import RandomSource

FEATURES = (BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z")), BetaFeature("b", (-1.0, 1.0)),
            CategoricalFeature("d", ("lo", "mid", "hi"), edges=(0.0, 1.0, 5.0, 9.0), integer=True))


def _problem(seed: int, n: int = 9) -> tuple[MixtureModel, np.ndarray, np.ndarray]:
    rng = RandomSource.seeded(seed)
    model = MixtureModel(FEATURES, components=3)
    theta = 0.7 * standard_normal(model.dim, rng=rng.spawn("theta"))
    values = np.column_stack([10 * rng.random(n), rng.integers(0, 3, n), 2 * rng.random(n) - 1, 9 * rng.random(n)])
    return model, theta, values


def _reference(model: MixtureModel, block_features: tuple[int, ...], theta: np.ndarray,
               data: EncodedBlock) -> dict[str, Any]:
    """Per-feature loops of the formulas (the implementation before the tables), for comparison."""
    K = model.components
    beta = [f for f in block_features if isinstance(model.features[f], BetaFeature)]
    cat = [f for f in block_features if isinstance(model.features[f], CategoricalFeature)]
    logs, norms, total = np.zeros((data.n, K)), np.zeros((data.n, K)), np.zeros(K)
    coefs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for col, f in enumerate(beta):
        block = theta[model.slice(f)].reshape(K, 2)
        a, b = np.exp(block[:, 0]), np.exp(block[:, 1])
        da, db = special.digamma(a + b) - special.digamma(a), special.digamma(a + b) - special.digamma(b)
        lx, l1x = np.log(data.beta[:, col]), np.log1p(-data.beta[:, col])
        logs += np.outer(lx, a - 1) + np.outer(l1x, b - 1) - special.betaln(a, b)
        norms += (a * (lx[:, None] + da)) ** 2 + (b * (l1x[:, None] + db)) ** 2
        feature = model.features[f]
        assert isinstance(feature, BetaFeature)
        low = np.log(feature.squeeze)
        total += (a * np.maximum(abs(low + da), abs(da))) ** 2 + (b * np.maximum(abs(low + db), abs(db))) ** 2
        coefs[f] = (np.stack([a, b], axis=1).ravel(), np.stack([a * da, b * db], axis=1).ravel())
    for col, f in enumerate(cat):
        p = softmax_last_zero(theta[model.slice(f)].reshape(K, -1))
        code = data.codes[:, col]
        logs += np.log(p[:, code]).T
        onehot = np.eye(p.shape[1])[code][:, :-1]
        norms += np.sum((onehot[:, None, :] - p[None, :, :-1]) ** 2, axis=2)
        total += 1.0 + np.sum(p[:, :-1] ** 2, axis=1)
        coefs[f] = (np.ones(K * (p.shape[1] - 1)), -p[:, :-1].ravel())
    return {"logs": logs, "norms": norms, "bound": float(np.max(total)) if block_features else 0.0,
            "coef_stat": np.concatenate([coefs[f][0] for f in block_features] or [np.zeros(0)]),
            "coef_sum": np.concatenate([coefs[f][1] for f in block_features] or [np.zeros(0)])}


SCHEMAS = {
    "mixed": FEATURES,
    "beta only": (BetaFeature("a", (0.0, 10.0)), BetaFeature("b", (-1.0, 1.0), squeeze=0.01)),
    "categorical only": (CategoricalFeature("c", ("x", "y", "z")), CategoricalFeature("e", ("0", "1")),
                         CategoricalFeature("f", tuple("abcdefghij"))),
}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), schema=st.sampled_from(sorted(SCHEMAS)), components=st.integers(1, 4),
       split=st.integers(0, 3))
def test_tables_match_per_feature_formulas(seed: int, schema: str, components: int, split: int) -> None:
    rng = RandomSource.seeded(seed)
    model = MixtureModel(SCHEMAS[schema], components=components)
    theta = 1.5 * standard_normal(model.dim, rng=rng.spawn("theta"))
    n = 7
    values = []
    for feature in model.features:
        if isinstance(feature, BetaFeature):
            lo, hi = feature.bounds
            values.append(lo + (hi - lo) * rng.spawn(feature.name).random(n))
        else:
            values.append(rng.spawn(feature.name).integers(0, feature.size, n).astype(np.float64))
    raw = np.column_stack(values)
    names = model.names
    order = names[split % len(names):] + names[: split % len(names)]  # blocks in a rotated feature order
    for group in (order[: len(order) // 2], order[len(order) // 2:]):
        block = model.block(group)
        cols = [names.index(g) for g in group]
        data = block.encode(raw[:, cols])
        ref = _reference(model, block.features, theta, data)
        logs, norms = block.local_terms(theta, block.prepare(data))
        np.testing.assert_allclose(logs, ref["logs"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(norms, ref["norms"], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(block.log_densities(theta, data), logs)
        np.testing.assert_array_equal(block.sq_norms(theta, data), norms)
        bound = block.sq_norm_bound(theta)
        assert bound == pytest.approx(ref["bound"], rel=1e-13)
        assert np.all(norms <= bound * (1 + 1e-12))
        stat_map = block.stat_map(theta)
        np.testing.assert_array_equal(stat_map.coef_stat, ref["coef_stat"])
        np.testing.assert_allclose(stat_map.coef_sum, ref["coef_sum"], rtol=1e-14, atol=1e-15)
        grads = block.per_example_grads(theta, data)
        np.testing.assert_allclose(np.sum(grads**2, axis=2), norms, rtol=1e-12, atol=1e-12)


def test_tables_follow_theta_and_are_read_only() -> None:
    model, theta, values = _problem(5)
    left = model.block(["a", "c"])
    data = left.encode(values[:, :2])
    snapshots = []
    for t in (theta, theta + 0.3, theta):  # alternating values: every result recomputed for the current one
        snapshots.append((model.weights(t), left.stat_map(t).coef_sum.copy(), left.sq_norm_bound(t),
                          model.log_prior_grad(t), left.local_terms(t, data)[1]))
    for before, after in zip(snapshots[0], snapshots[2], strict=True):
        np.testing.assert_array_equal(before, after)
    for before, other in zip(snapshots[0], snapshots[1], strict=True):
        assert not np.array_equal(before, other)
    fresh = MixtureModel(FEATURES, components=3)  # an equal model: its own cache, the same numbers
    np.testing.assert_array_equal(fresh.block(["a", "c"]).stat_map(theta).coef_sum, snapshots[0][1])
    with pytest.raises(ValueError, match="read-only"):
        left.stat_map(theta).coef_stat[0] = 0.0
    model.weights(theta)[0] = 2.0  # weights are the caller's copy
    np.testing.assert_array_equal(model.weights(theta), snapshots[0][0])
    with pytest.raises(ShapeMismatchError, match="theta"):
        left.stat_map(theta[:-1])


def test_prepared_rows_are_the_encoded_rows() -> None:
    model, theta, values = _problem(6)
    block = model.block(["d", "a", "c"])
    data = block.encode(values[:, [3, 0, 1]])
    idx = np.array([4, 0, 0, 8])
    np.testing.assert_array_equal(block.prepare(data).rows(idx).log_pairs, block.prepare(data.rows(idx)).log_pairs)
    np.testing.assert_array_equal(block.prepare(data).rows(idx).codes, block.prepare(data.rows(idx)).codes)
    assert block.prepare(data).rows(idx).n == 4
    np.testing.assert_array_equal(block.local_terms(theta, block.prepare(data).rows(idx))[0],
                                  block.log_densities(theta, data.rows(idx)))


def test_malformed_encoded_blocks_are_refused() -> None:
    # a code beyond its feature's levels would read the next feature's row of the flat tables: refused instead
    model, theta, values = _problem(7)
    block = model.block(["c", "d"])
    data = block.encode(values[:, [1, 3]])
    bad = data.codes.copy()
    bad[2, 0] = 3  # feature c has 3 levels
    with pytest.raises(DomainError, match="codes"):
        block.log_densities(theta, EncodedBlock(data.beta, bad))
    bad[2, 0] = -1
    with pytest.raises(DomainError, match="codes"):
        block.prepare(EncodedBlock(data.beta, bad))
    with pytest.raises(ShapeMismatchError, match="encoded block"):
        block.sq_norms(theta, EncodedBlock(data.beta, data.codes[:, :1]))
    with pytest.raises(ShapeMismatchError, match="encoded block"):
        model.block(["a", "c"]).sq_norms(theta, data)
