"""Paper 003's horizontal setting: party groups, local computations, evaluation, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning import erm
from mpdp.learning.distributed_erm.problem import ERMProblem, Evaluator, HorizontalParties
from mpdp.randomness import RandomSource


def _records(rng: RandomSource, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    X = rng.random((n, d)) * 2 - 1
    X /= np.sqrt(d)
    y = np.where(X @ np.arange(1, d + 1) >= 0, 1.0, 0.0)
    return X, y


def test_groups_keep_every_party_separate_and_in_order(rng: RandomSource) -> None:
    X, y = _records(rng, 23, 3)
    cuts = np.array_split(np.arange(23), 5)  # sizes 5,5,5,4,4
    parties = HorizontalParties.from_rows(X, y, cuts, task="classification")
    assert parties.m == 5 and parties.n == 23 and parties.n_min == 4 and parties.sizes == (5, 5, 5, 4, 4)
    assert [(g.first, g.size, g.records) for g in parties] == [(0, 3, 5), (3, 2, 4)]
    second_group = parties.groups[1]
    np.testing.assert_array_equal(second_group.X[1], X[cuts[4]])
    np.testing.assert_array_equal(second_group.y[0], 2 * y[cuts[3]] - 1)


def test_local_results_equal_each_party_alone(rng: RandomSource) -> None:
    X, y = _records(rng, 40, 4)
    cuts = np.array_split(np.arange(40), 8)
    problem = ERMProblem(erm.LogisticLoss(), lam=0.05)
    parties = HorizontalParties.from_rows(X, y, cuts, task="classification")
    theta = np.array([0.5, -1.0, 2.0, 0.1])
    grads = np.concatenate([g.local_gradients(problem, theta) for g in parties])
    mins = np.concatenate([g.local_minimizers(problem) for g in parties])
    for j, idx in enumerate(cuts):
        own = erm.Objective(problem.loss, X[idx], erm.to_pm1(y[idx]), lam=problem.lam)
        np.testing.assert_allclose(grads[j], own.data_gradient(theta), atol=1e-14)
        np.testing.assert_allclose(mins[j], erm.solve(own).theta, atol=1e-7)


def test_evaluator_scores_theta_star_as_zero_and_others_positive(rng: RandomSource) -> None:
    X, y = _records(rng, 200, 3)
    problem = ERMProblem(erm.LogisticLoss(), lam=1e-2)
    ev = Evaluator(problem, (X[:150], y[:150]), (X[150:], y[150:]))
    assert ev.optimality_gap(ev.theta_star) == pytest.approx(0.0, abs=1e-15)
    assert ev.relative_accuracy_loss(ev.theta_star) == 0.0
    other = ev.theta_star + 0.3
    assert ev.optimality_gap(other) > 0
    scores = ev.score(other)
    assert scores.test_metric == pytest.approx(ev.test_metric(other))
    reg = ERMProblem(erm.HuberLoss(c=1.0), lam=1e-2)
    yr = np.clip(X @ np.ones(3), -1, 1)
    ev_r = Evaluator(reg, (X[:150], yr[:150]), (X[150:], yr[150:]))
    assert ev_r.metric_name == "mse" and ev_r.relative_accuracy_loss(ev_r.theta_star + 1.0) > 0


def test_bad_input_named_by_the_issue(rng: RandomSource) -> None:
    X, y = _records(rng, 10, 2)
    with pytest.raises(DomainError, match="lambda"):
        ERMProblem(erm.LogisticLoss(), lam=0.0)
    with pytest.raises(DomainError, match="lambda"):
        ERMProblem(erm.LogisticLoss(), lam=-1e-3)
    with pytest.raises(ParameterError, match="HuberLoss"):
        ERMProblem(erm.SquaredLoss(), lam=1e-3)
    with pytest.raises(DomainError, match="unit ball"):
        HorizontalParties.from_rows(X * 5, y, [np.arange(5), np.arange(5, 10)], task="classification")
    with pytest.raises(ShapeMismatchError, match="at least one record per party"):
        HorizontalParties.from_rows(X, y, [np.arange(10), np.array([], dtype=int)], task="classification")
    with pytest.raises(ShapeMismatchError, match="at least one party"):
        HorizontalParties.from_parts([], task="classification")
    with pytest.raises(DomainError, match=r"\|y\| <= 1"):
        HorizontalParties.from_rows(X, y * 3, [np.arange(10)], task="regression")
