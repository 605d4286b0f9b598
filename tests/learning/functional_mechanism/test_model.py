"""The centralised FM reference, the estimators, Claim 1 across K and backends, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning.functional_mechanism.model import (
    FMLinearRegression,
    FMLogisticRegression,
    SolveSettings,
    centralized_fm,
)
from mpdp.learning.functional_mechanism.noise import FMPlan
from mpdp.learning.functional_mechanism.objective import ColumnPartition, exact_objective
from mpdp.learning.functional_mechanism.parties import run_vertical_fm
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
    assert lin.mse(X, 0.3 * (X @ np.ones(5)) / 5) < 0.05 and lin.epsilon_spent_ == 10.0


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


EXACT_BACKENDS = {"shares": {}, "paillier": {"key_bits": 512, "insecure_for_tests": True}}
CLAIM1_CASES = [("shares", 2), ("shares", 3), ("shares", 5), ("paillier", 2), ("paillier", 3), ("ckks", 2)]


@pytest.mark.parametrize(("backend", "K"), CLAIM1_CASES)
def test_claim1_vertical_equals_centralised(backend: str, K: int) -> None:
    """Same noise draws: the K-party model equals the centralised FM model, for every K and backend.

    ``shares`` and ``paillier`` compute the cross-party coefficients exactly on the plan's fixed-point grid,
    so the released objective (and the model) is bit-for-bit the centralised one; ``ckks`` is approximate,
    within its documented error.
    """
    pytest.importorskip("mpdp.protocols.inner_product")
    if backend == "ckks":
        pytest.importorskip("tenseal")
    X, y = _logistic_data(300, 6, 12)
    cols = [list(c) for c in ColumnPartition.even(6, K).columns]
    if backend in EXACT_BACKENDS:
        ref = centralized_fm("logistic", X, y, epsilon=1.0, noise_rng=RandomSource.seeded(13),
                             settings=SolveSettings(trim_factor=0.0))
        model = FMLogisticRegression(1.0, partition=cols, label_party=K - 1, backend=backend, fit_intercept=False,
                                     backend_options=EXACT_BACKENDS[backend], noise_rng=RandomSource.seeded(13),
                                     rng=RandomSource.seeded(14), settings=SolveSettings(trim_factor=0.0)).fit(X, y)
        got = model.result_.objective
        assert np.array_equal(got.quad, ref.objective.quad) and np.array_equal(got.linear, ref.objective.linear)
        assert np.array_equal(model.coef_, ref.weights)
    else:
        # CKKS is approximate: its error is priced into the sensitivity (so the noise scale differs from the
        # centralised one); with negligible noise the objective is the centralised one within the documented
        # per-entry bound times the monomial factor (1 for lambda, 1/8 for M).
        from mpdp.protocols.inner_product.ckks_parameters import ckks_error_bound

        ref = centralized_fm("logistic", X, y, epsilon=1e7, rng=RandomSource.seeded(13),
                             settings=SolveSettings(trim_factor=0.0))
        model = FMLogisticRegression(1e7, partition=cols, label_party=K - 1, backend=backend, fit_intercept=False,
                                     rng=RandomSource.seeded(14), settings=SolveSettings(trim_factor=0.0)).fit(X, y)
        got = model.result_.objective
        bound = ckks_error_bound(300, 1.0) + 1e-3
        np.testing.assert_allclose(got.quad, ref.objective.quad, rtol=0, atol=bound / 8 + 1e-3)
        np.testing.assert_allclose(got.linear, ref.objective.linear, rtol=0, atol=bound)
        np.testing.assert_allclose(model.coef_, ref.weights, rtol=0, atol=1e-2)
        assert model.result_.plan.coefficient_error > 0
    assert model.per_party_epsilon_[K - 1] > model.per_party_epsilon_[0]  # the label party pays for sharing y
    assert model.communication_["bytes"] > 0


def test_bottom_up_budgets_end_to_end() -> None:
    """Bottom-up: the parties pick eps^k and eps^kl; the spent budget is their composition (Corollary 1's
    sound form), and each party's guarantee is its own share of it."""
    pytest.importorskip("mpdp.protocols.inner_product")
    X, y = _logistic_data(400, 4, 15)
    budgets = {"single": (0.5, 0.4), "cross": {(0, 1): 1.0}}
    model = FMLogisticRegression(None, partition=[[0, 1], [2, 3]], bottom_up=budgets, fit_intercept=False,
                                 rng=RandomSource.seeded(16)).fit(X, y)
    assert model.epsilon_spent_ == pytest.approx(1.9)
    assert model.per_party_epsilon_ == pytest.approx((1.5, 1.4))
    assert np.all(np.isfinite(model.coef_))


class _Spender:
    """A minimal BudgetSpender: records what is charged and refuses beyond ``budget``."""

    def __init__(self, budget: float) -> None:
        self.budget, self.spent, self.labels = budget, 0.0, []

    def spend(self, cost, *, label):  # type: ignore[no-untyped-def]
        from mpdp.errors import BudgetExceededError

        if self.spent + cost.epsilon > self.budget + 1e-12:
            raise BudgetExceededError(f"{label}: {cost.epsilon} exceeds what is left")
        self.spent += cost.epsilon
        self.labels.append(label)


def test_ledger_is_charged_before_training_and_refuses_overspend() -> None:
    from mpdp.errors import BudgetExceededError

    X, y = _logistic_data(200, 3, 17)
    ledger = _Spender(1.5)
    FMLogisticRegression(1.0, ledger=ledger, rng=RandomSource.seeded(18)).fit(X, y)
    assert ledger.spent == pytest.approx(1.0) and ledger.labels == ["fm-logistic"]
    with pytest.raises(BudgetExceededError):
        FMLogisticRegression(1.0, ledger=ledger, rng=RandomSource.seeded(19)).fit(X, y)
    assert ledger.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        centralized_fm("logistic", X, y, epsilon=1.0, ledger=ledger)
