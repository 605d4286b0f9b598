"""The shared ERM pieces: losses, objective, solver, metrics, and their input checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning import erm
from mpdp.randomness import RandomSource

LOSSES = [erm.LogisticLoss(), erm.SquaredLoss(), erm.HuberLoss(c=0.7), erm.HingeLoss(), erm.SmoothHingeLoss(h=0.3)]


def _data(rng: RandomSource, n: int, d: int, task: str) -> tuple[np.ndarray, np.ndarray]:
    X = rng.random((n, d)) * 2 - 1
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.random(d) * 2 - 1
    if task == "classification":
        y = np.where(X @ w + 0.3 * (rng.random(n) - 0.5) >= 0, 1.0, -1.0)
    else:
        y = np.clip(X @ w + 0.1 * (rng.random(n) - 0.5), -1, 1)
    return X, y


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
@given(seed=st.integers(0, 2**32 - 1))
def test_gradient_matches_finite_differences(loss: erm.Loss, seed: int) -> None:
    rng = RandomSource.seeded(seed)
    X, y = _data(rng, 30, 4, loss.task)
    obj = erm.Objective(loss, X, y, lam=0.05, linear=rng.random(4) - 0.5)
    theta = rng.random(4) * 4 - 2
    grad = obj.gradient(theta)
    h = 1e-6
    numeric = np.array([(obj.value(theta + h * e) - obj.value(theta - h * e)) / (2 * h) for e in np.eye(4)])
    if loss.name == "hinge":  # kinks: compare only where no margin sits within h of 1
        margins = y * (X @ theta)
        if np.any(np.abs(margins - 1) < 1e-4):
            return
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
    val, grad2 = obj.value_and_gradient(theta)
    assert val == pytest.approx(obj.value(theta)) and np.allclose(grad2, grad)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_stated_lipschitz_and_smoothness_constants_hold(loss: erm.Loss, rng: RandomSource) -> None:
    z = np.sort(rng.random(4001) * 20 - 10)
    for label in (-1.0, 1.0) if loss.task == "classification" else (-0.8, 0.0, 0.9):
        y = np.full_like(z, label)
        d = loss.derivative(z, y)
        assert np.abs(d).max() <= loss.lipschitz + 1e-12
        if np.isfinite(loss.smoothness):
            slopes = np.abs(np.diff(d) / np.diff(z))
            assert slopes.max() <= loss.smoothness * (1 + 1e-9)
            assert slopes.max() >= 0.9 * loss.smoothness  # the constant is tight, not just an upper bound
        # Lipschitz in z of the value itself
        assert np.abs(np.diff(loss.value(z, y)) / np.diff(z)).max() <= loss.lipschitz * (1 + 1e-9)
    assert loss.lipschitz_constant(0.5) == pytest.approx(0.5 * loss.lipschitz)


def test_huber_equals_squared_inside_its_threshold(rng: RandomSource) -> None:
    z = rng.random(100) * 2 - 1
    y = rng.random(100) * 2 - 1
    inside = np.abs(z - y) <= 0.5
    huber, sq = erm.HuberLoss(c=0.5), erm.SquaredLoss()
    assert np.allclose(huber.value(z, y)[inside], sq.value(z, y)[inside])
    assert not np.allclose(huber.value(z, y)[~inside], sq.value(z, y)[~inside])


def test_ridge_solution_matches_closed_form(rng: RandomSource) -> None:
    X, y = _data(rng, 200, 5, "regression")
    lam = 0.01
    sol = erm.solve(erm.Objective(erm.SquaredLoss(), X, y, lam=lam))
    closed = np.linalg.solve(X.T @ X / 200 + lam * np.eye(5), X.T @ y / 200)
    assert sol.converged
    np.testing.assert_allclose(sol.theta, closed, atol=1e-7)


def test_logistic_solution_is_stationary_and_optimal(rng: RandomSource) -> None:
    X, y = _data(rng, 300, 6, "classification")
    obj = erm.Objective(erm.LogisticLoss(), X, y, lam=1e-3)
    sol = erm.solve(obj)
    assert sol.converged and sol.gradient_norm < 1e-7
    # strong convexity: no point nearby does better
    for _ in range(20):
        assert obj.value(sol.theta + 0.01 * (rng.random(6) - 0.5)) >= sol.value
    assert erm.accuracy(sol.theta, X, y) > 0.85


def test_weights_reproduce_the_plain_mean_and_party_averaging(rng: RandomSource) -> None:
    X, y = _data(rng, 10, 3, "classification")
    plain = erm.Objective(erm.LogisticLoss(), X, y, lam=0.1)
    uniform = erm.Objective(erm.LogisticLoss(), X, y, lam=0.1, weights=np.full(10, 0.1))
    theta = np.array([0.3, -1.0, 2.0])
    assert plain.value(theta) == pytest.approx(uniform.value(theta))
    # party-averaged (1/m) sum_j (1/n_j) sum_i: parties of sizes 4 and 6
    w = np.r_[np.full(4, 0.5 / 4), np.full(6, 0.5 / 6)]
    party = erm.Objective(erm.LogisticLoss(), X, y, lam=0.1, weights=w)
    a = erm.Objective(erm.LogisticLoss(), X[:4], y[:4], lam=0.1)
    b = erm.Objective(erm.LogisticLoss(), X[4:], y[4:], lam=0.1)
    assert party.value(theta) == pytest.approx(0.5 * (a.value(theta) + b.value(theta)))


def test_metrics() -> None:
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    theta = np.array([1.0, -1.0])
    assert erm.accuracy(theta, X, [1, 0, 0]) == pytest.approx(1.0)
    assert erm.misclassification(theta, X, [1, 1, 0]) == pytest.approx(1 / 3)
    assert erm.mse(theta, X, [1.0, -1.0, 0.0]) == pytest.approx(1 / 3)
    assert erm.log_loss(np.zeros(2), X, [1, 0, 1]) == pytest.approx(np.log(2))
    assert np.array_equal(erm.to_pm1([0, 1, 1]), [-1.0, 1.0, 1.0])


def test_add_intercept_keeps_unit_ball() -> None:
    X = np.array([[1.0, 0.0], [0.6, 0.8]])
    Xi = erm.add_intercept(X)
    assert Xi.shape == (2, 3) and np.linalg.norm(Xi, axis=1).max() <= 1 + 1e-12
    erm.require_unit_ball(Xi)


def test_bad_input_is_refused_with_a_fix() -> None:
    X = np.array([[0.5, 0.5], [0.1, 0.2]])
    with pytest.raises(DomainError, match="labels in"):
        erm.Objective(erm.LogisticLoss(), X, np.array([0.0, 1.0]), lam=0.1)
    with pytest.raises(ParameterError, match="lam"):
        erm.Objective(erm.LogisticLoss(), X, np.array([-1.0, 1.0]), lam=-1.0)
    with pytest.raises(ShapeMismatchError, match="one label per row"):
        erm.Objective(erm.LogisticLoss(), X, np.array([1.0]), lam=0.1)
    with pytest.raises(ShapeMismatchError, match="at least one record"):
        erm.Objective(erm.LogisticLoss(), np.zeros((0, 2)), np.zeros(0), lam=0.1)
    with pytest.raises(ParameterError, match="weights"):
        erm.Objective(erm.LogisticLoss(), X, np.array([-1.0, 1.0]), lam=0.1, weights=np.array([0.2, 0.2]))
    with pytest.raises(DomainError, match="unit ball"):
        erm.require_unit_ball(np.array([[1.0, 1.0]]))
    with pytest.raises(DomainError, match=r"\|y\| <= 1"):
        erm.require_unit_ball(X, np.array([0.0, 3.0]))
    with pytest.raises(ParameterError, match="HuberLoss"):
        erm.HuberLoss(c=0.0)
    with pytest.raises(DomainError, match="0/1"):
        erm.to_pm1([0, 2])


@pytest.mark.parametrize("loss", [erm.LogisticLoss(), erm.HuberLoss(c=0.3), erm.SmoothHingeLoss(h=0.5)],
                         ids=lambda loss: loss.name)
@pytest.mark.parametrize(("n", "d"), [(1, 5), (3, 8), (12, 4)])
def test_solve_batch_matches_one_solve_per_problem(loss: erm.Loss, n: int, d: int, rng: RandomSource) -> None:
    g, lam = 6, 1e-2
    X = np.stack([_data(rng.spawn(str(i)), n, d, loss.task)[0] for i in range(g)])
    y = np.stack([_data(rng.spawn(str(i)), n, d, loss.task)[1] for i in range(g)])
    b = (rng.random((g, d)) - 0.5) * 0.1
    batch = erm.solve_batch(loss, X, y, lam, linear=b)
    for i in range(g):
        obj = erm.Objective(loss, X[i], y[i], lam=lam, linear=b[i])
        one = erm.solve(obj)
        assert obj.value(batch[i]) <= one.value + 1e-10
        assert np.linalg.norm(obj.gradient(batch[i])) < 1e-8


def test_solve_batch_scales_to_many_one_record_problems(rng: RandomSource) -> None:
    g, d = 20_000, 30
    X = rng.random((g, 1, d)) * 2 - 1
    X /= np.linalg.norm(X, axis=2, keepdims=True)
    y = np.where(rng.random((g, 1)) < 0.5, -1.0, 1.0)
    theta = erm.solve_batch(erm.LogisticLoss(), X, y, 1e-3)
    # one record: theta = a y x with lam a = sigmoid(-a) (the stationarity condition)
    a = np.einsum("gd,gd->g", theta, y * X[:, 0])
    assert np.allclose(1e-3 * a, 1 / (1 + np.exp(a)), rtol=1e-8)


def test_solve_batch_rejects_bad_input() -> None:
    with pytest.raises(ShapeMismatchError, match="equal-size"):
        erm.solve_batch(erm.LogisticLoss(), np.zeros((2, 3)), np.zeros(2), 0.1)
    with pytest.raises(ParameterError, match="SmoothHingeLoss"):
        erm.solve_batch(erm.HingeLoss(), np.zeros((1, 1, 2)), np.ones((1, 1)), 0.1)
    with pytest.raises(ParameterError, match="lam"):
        erm.solve_batch(erm.LogisticLoss(), np.zeros((1, 1, 2)), np.ones((1, 1)), 0.0)
