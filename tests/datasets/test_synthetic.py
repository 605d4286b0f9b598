from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from mpdp.datasets import logistic_with_optimum, mixed_tabular, sparse_linear_regression
from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource


@pytest.mark.parametrize("s", [0.1, 0.5, 1.0])
def test_sparse_linear_matches_paper_000_shape(s: float) -> None:
    task = sparse_linear_regression(2000, 200, s, rng=RandomSource.seeded(str(s)))
    X, y = task.data.X, task.data.y
    assert X.shape == (2000, 200) and task.data.task == "regression"
    assert np.abs(X).max() <= 1 and np.abs(y).max() <= 1
    # Fraction of non-zero entries ~ s (binomial over 400,000 entries: 5 sigma is < 0.004).
    assert abs((X != 0).mean() - s) < 0.004
    assert np.count_nonzero(task.w_true) == max(1, round(s * 200))
    # Least squares recovers w_true up to the noise: residual variance ~ noise_std^2.
    w_hat = np.linalg.solve(X.T @ X, X.T @ y)
    assert np.mean((X @ w_hat - y) ** 2) == pytest.approx(task.noise_std**2, rel=0.15)
    assert np.std(X @ task.w_true) == pytest.approx(0.3, rel=0.1)
    assert np.mean(np.abs(y) == 1.0) < 0.01  # clipping stays rare


def test_logistic_optimum_is_recovered() -> None:
    """With n = 20,000 and d = 4 the MLE is within ~4/sqrt(n) * O(1) of w_true in each coordinate."""
    task = logistic_with_optimum(20_000, 4, weight_norm=2.0, rng=RandomSource.seeded(11))
    X, y = task.data.X, task.data.y
    assert set(np.unique(y)) == {0.0, 1.0}
    pm = 2 * y - 1

    def loss(w: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0.0, -pm * (X @ w))))

    w_hat = minimize(loss, np.zeros(4), method="BFGS").x
    assert np.linalg.norm(task.w_true) == pytest.approx(2.0)
    assert np.abs(w_hat - task.w_true).max() < 0.15
    separable = logistic_with_optimum(500, 3, separable=True, rng=RandomSource.seeded(1))
    assert np.all((separable.data.X @ separable.w_true > 0) == (separable.data.y == 1))


def test_mixed_tabular_has_both_views_and_learnable_labels() -> None:
    data = mixed_tabular(3000, numeric=3, categorical=2, categories=5, rng=RandomSource.seeded(3))
    assert [a.kind for a in data.attributes] == ["numeric"] * 3 + ["categorical"] * 2
    assert data.d == 3 + 10 and data.values is not None
    assert np.all(data.values[:, :3] == np.round(data.values[:, :3]))
    assert 0.4 < data.y.mean() < 0.6
    # A linear model on the encoding beats the majority class clearly (labels depend on the features).
    A = np.hstack([data.X, np.ones((data.n, 1))])
    w = np.linalg.solve(A.T @ A + 1e-6 * np.eye(A.shape[1]), A.T @ data.y)
    acc = np.mean((A @ w > 0.5) == data.y)
    assert acc > 0.7
    reg = mixed_tabular(500, task="regression", rng=RandomSource.seeded(4))
    assert reg.task == "regression" and np.abs(reg.y).max() <= 1
    with pytest.raises(ParameterError, match="at least one attribute"):
        mixed_tabular(10, numeric=0, categorical=0)


def test_generators_are_reproducible_and_validated() -> None:
    a = sparse_linear_regression(50, 10, 0.5, rng=RandomSource.seeded(1)).data.X
    b = sparse_linear_regression(50, 10, 0.5, rng=RandomSource.seeded(1)).data.X
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ParameterError, match="sparsity"):
        sparse_linear_regression(10, 10, 0.0)
    z = standard_normal(200_000, rng=RandomSource.seeded(9))
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02  # 5-sigma bands for n = 200,000
