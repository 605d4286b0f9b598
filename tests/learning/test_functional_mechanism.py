"""The centralised FM reference, the estimators, Claim 1 across K and backends, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning.fm_noise import FMPlan
from mpdp.learning.fm_objective import ColumnPartition, exact_objective
from mpdp.learning.fm_parties import BACKENDS, run_vertical_fm
from mpdp.learning.functional_mechanism import (
    FMLinearRegression,
    FMLogisticRegression,
    SolveSettings,
    centralized_fm,
)
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _logistic_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = RandomSource.seeded(seed)
    X = 2 * rng.random((n, d)) - 1
    w = np.linspace(-2, 2, d)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w)))).astype(float)
    return X, y


def test_centralised_without_noise_limit_is_taylor_minimiser() -> None:
    X, y = _logistic_data(400, 4, 1)
    exact = exact_objective("logistic", X, y)
    target = -0.5 * np.linalg.solve(exact.quad, exact.linear)
    res = centralized_fm("logistic", X, y, epsilon=1e9, settings=SolveSettings(trim_factor=0.0),
                         rng=RandomSource.seeded(2))
    np.testing.assert_allclose(res.weights, target, rtol=1e-4, atol=1e-6)
    assert res.epsilon_spent == 1e9


def test_private_model_is_finite_and_useful() -> None:
    X, y = _logistic_data(3000, 5, 3)
    model = FMLogisticRegression(10.0, rng=RandomSource.seeded(4)).fit(X, y)
    assert np.all(np.isfinite(model.coef_)) and model.score(X, y) > 0.7
    for eps in (1e-3, 1e-2):  # noise-dominated: still a finite model, never NaN or unbounded
        m = FMLogisticRegression(eps, rng=RandomSource.seeded(5)).fit(X, y)
        assert np.all(np.isfinite(m.coef_)) and np.isfinite(m.intercept_)
    lin = FMLinearRegression(10.0, rng=RandomSource.seeded(6)).fit(X, 0.3 * (X @ np.ones(5)) / 5)
    assert lin.score(X, 0.3 * (X @ np.ones(5)) / 5) < 0.05 and lin.epsilon_spent_ == 10.0


def test_estimator_matches_centralised_reference_with_same_noise() -> None:
    X, y = _logistic_data(500, 4, 7)
    noise = RandomSource.seeded(8)
    model = FMLogisticRegression(1.0, fit_intercept=False, noise_rng=noise, rng=RandomSource.seeded(9)).fit(X, y)
    ref = centralized_fm("logistic", X, y, epsilon=1.0, noise_rng=RandomSource.seeded(8))
    np.testing.assert_allclose(model.coef_, ref.weights, rtol=1e-9, atol=1e-12)


def test_bad_input_is_refused() -> None:
    X, y = _logistic_data(50, 3, 10)
    with pytest.raises(DomainError, match=r"\[-1, 1\]"):
        FMLogisticRegression(1.0).fit(X * 2, y)
    with pytest.raises(DomainError, match=r"\{0, 1\}"):
        FMLogisticRegression(1.0).fit(X, y * 2 - 1)
    with pytest.raises(DomainError, match=r"\[-1, 1\]"):
        FMLinearRegression(1.0).fit(X, y * 3)
    with pytest.raises(ParameterError, match="epsilon"):
        FMLogisticRegression(0.0).fit(X, y)
    with pytest.raises(ParameterError, match="epsilon"):
        FMLogisticRegression(-1.0).fit(X, y)
    with pytest.raises(DomainError, match="row L1"):
        FMLogisticRegression(1.0, row_l1=[1.0]).fit(X, y)
    clipped = FMLogisticRegression(1.0, row_l1=[1.0], clip=True, rng=RandomSource.seeded(1)).fit(X * 2, y)
    assert np.all(np.isfinite(clipped.coef_))
    with pytest.raises(ShapeMismatchError):
        FMLogisticRegression(1.0).fit(X, y[:-1])
    with pytest.raises(ParameterError, match="backend"):
        FMLogisticRegression(1.0, backend="bgn").fit(X, y)


def test_mismatched_party_records_are_refused() -> None:
    X, y = _logistic_data(40, 4, 11)
    plan = FMPlan("logistic", ColumnPartition(((0, 1), (2, 3)), 0), epsilon=1.0)
    with pytest.raises(ShapeMismatchError, match=r"record count|record identifiers"):
        run_vertical_fm(plan, [X[:, :2], X[:-1, 2:]], y, rng=RandomSource.seeded(1))
    ids = [np.arange(40), np.arange(40)[::-1]]
    with pytest.raises(ShapeMismatchError, match="record identifiers"):
        run_vertical_fm(plan, [X[:, :2], X[:, 2:]], y, ids=ids, rng=RandomSource.seeded(1))


def _claim1_cases() -> list[tuple[str, int]]:
    return [(backend, K) for backend in BACKENDS for K in (2, 3, 5)]


@pytest.mark.parametrize(("backend", "K"), _claim1_cases())
def test_claim1_vertical_equals_centralised(backend: str, K: int) -> None:
    """Same noise draws: the K-party model equals the centralised FM model (within the backend's precision)."""
    pytest.importorskip("mpdp.protocols.inner_product")
    X, y = _logistic_data(300, 6, 12)
    noise_seed = 13
    ref = centralized_fm("logistic", X, y, epsilon=1.0, noise_rng=RandomSource.seeded(noise_seed),
                         settings=SolveSettings(trim_factor=0.0))
    cols = [list(c) for c in ColumnPartition.even(6, K).columns]
    model = FMLogisticRegression(1.0, partition=cols, label_party=K - 1, backend=backend, fit_intercept=False,
                                 noise_rng=RandomSource.seeded(noise_seed), rng=RandomSource.seeded(14),
                                 settings=SolveSettings(trim_factor=0.0)).fit(X, y)
    np.testing.assert_allclose(model.result_.objective.quad, ref.objective.quad, rtol=0, atol=1e-3)
    np.testing.assert_allclose(model.result_.objective.linear, ref.objective.linear, rtol=0, atol=1e-3)
    np.testing.assert_allclose(model.coef_, ref.weights, rtol=1e-3, atol=1e-5)
    assert model.per_party_epsilon_[K - 1] > model.per_party_epsilon_[0]  # the label party pays for sharing y
