"""The sound solve of a possibly indefinite noisy quadratic (regularisation + spectral trimming)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpdp.errors import DomainError, ParameterError
from mpdp.learning.functional_mechanism.objective import QuadraticObjective
from mpdp.learning.functional_mechanism.solver import minimize_noisy_quadratic


def test_exact_minimiser_when_positive_definite() -> None:
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    b = np.array([1.0, -2.0])
    res = minimize_noisy_quadratic(QuadraticObjective(0.0, b, A))
    np.testing.assert_allclose(res.weights, -0.5 * np.linalg.solve(A, b), rtol=1e-12)
    assert res.trimmed == 0 and res.kept == 2


def test_indefinite_is_trimmed_not_unbounded() -> None:
    A = np.diag([1.0, -1.0, 0.0])
    b = np.array([2.0, 3.0, 4.0])
    res = minimize_noisy_quadratic(QuadraticObjective(0.0, b, A))
    np.testing.assert_allclose(res.weights, [-1.0, 0.0, 0.0])
    assert res.trimmed == 2 and res.min_eigenvalue == -1.0
    # Regularisation lifts the negative direction above the floor.
    res = minimize_noisy_quadratic(QuadraticObjective(0.0, b, A), ridge=2.0, floor=0.5)
    np.testing.assert_allclose(res.weights, [-1 / 3, -1.5, -1.0])


matrices = hnp.arrays(np.float64, (5, 5), elements=st.floats(-1e6, 1e6))
vectors = hnp.arrays(np.float64, (5,), elements=st.floats(-1e6, 1e6))


def _norm(v: np.ndarray) -> float:
    """Euclidean norm without underflow: ``np.linalg.norm`` squares entries, so 1e-166 becomes 0."""
    top = float(np.abs(v).max(initial=0.0))
    return top * float(np.linalg.norm(v / top)) if top > 0 else 0.0


@given(matrices, vectors, st.floats(0, 10), st.floats(0, 10))
def test_always_finite_and_bounded(A: np.ndarray, b: np.ndarray, ridge: float, floor: float) -> None:
    res = minimize_noisy_quadratic(QuadraticObjective(0.0, b, A), ridge=ridge, floor=floor)
    assert np.all(np.isfinite(res.weights))
    assert _norm(res.weights) <= _norm(b) / (2 * res.floor) * (1 + 1e-9) + 1e-300
    # The solution lies in the kept eigen-directions, so the (regularised) objective there is no higher than at 0:
    # it equals -sum_kept (q.b)^2 / (4 lam) <= 0, up to rounding.
    sym = 0.5 * (A + A.T) + ridge * np.eye(5)
    w = res.weights
    scale = np.abs(b) @ np.abs(w) + np.abs(w) @ np.abs(sym) @ np.abs(w)
    assert b @ w + w @ sym @ w <= 1e-8 * scale + 1e-12


def test_bound_holds_for_tiny_gradients() -> None:
    # Regression: hypothesis once found this case; the bound held, but the test's own norm of b underflowed to 0.
    A = np.zeros((5, 5))
    A[0, 0], A[0, 1] = -7.88e3, 1.0
    b = np.full(5, 9.97312378e-167)
    res = minimize_noisy_quadratic(QuadraticObjective(0.0, b, A))
    assert res.kept == 1
    assert 0 < _norm(res.weights) <= _norm(b) / (2 * res.floor)


def test_bad_input() -> None:
    obj = QuadraticObjective(0.0, np.ones(2), np.eye(2))
    with pytest.raises(ParameterError, match="ridge"):
        minimize_noisy_quadratic(obj, ridge=-1.0)
    with pytest.raises(DomainError, match="non-finite"):
        minimize_noisy_quadratic(QuadraticObjective(0.0, np.array([np.nan, 0.0]), np.eye(2)))
