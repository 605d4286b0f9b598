"""ERM sensitivities and the six noise scales of paper 003's Table 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.dp.sensitivities import erm as sens
from mpdp.errors import ParameterError
from mpdp.learning import erm
from mpdp.randomness import RandomSource

# Table 1's input row: m = 100, n(1) = 500, lambda = 0.01, eps = 0.5, G = 1, T = 100.
M, N1, LAM, EPS, G, T = 100, 500, 0.01, 0.5, 1.0, 100


def test_table1_noise_generation_row_as_printed() -> None:
    # Printed: 800e-3, 80.0e-3, 8.00e-3, 5.66e-3, 8.00e-3, 0.57e-3 (three significant digits at most).
    assert sens.pathak_laplace_scale(G, N1, LAM, EPS) == pytest.approx(0.800, rel=1e-12)
    assert sens.local_outp_laplace_scale(G, M, N1, LAM, EPS) == pytest.approx(0.0800, rel=1e-12)
    assert sens.local_objp_laplace_scale(G, N1, EPS) == pytest.approx(0.00800, rel=1e-12)
    assert sens.local_gradp_sigma(G, M, N1, EPS, T) == pytest.approx(5.66e-3, abs=0.005e-3)
    assert sens.mpc_outp_laplace_scale(G, M, N1, LAM, EPS) == pytest.approx(8.00e-3, rel=1e-12)
    assert sens.mpc_gradp_sigma(G, M, N1, EPS, T) == pytest.approx(0.57e-3, abs=0.005e-3)


def test_table1_gaussian_columns_are_rho_eps_squared_not_theorem_34() -> None:
    # rho = eps^2 total zCDP over T steps of sensitivity Delta gives sigma = Delta sqrt(T / (2 eps^2)).
    delta_mpc = sens.averaged_gradient_sensitivity(G, M, N1)
    assert sens.mpc_gradp_sigma(G, M, N1, EPS, T) == pytest.approx(delta_mpc * math.sqrt(T / (2 * EPS**2)))
    delta_local = sens.gradient_sensitivity(G, N1)
    # Local Grad P: each party's sigma, averaged over m parties (sigma / sqrt(m)).
    assert sens.local_gradp_sigma(G, M, N1, EPS, T) == pytest.approx(
        delta_local * math.sqrt(T / (2 * EPS**2)) / math.sqrt(M))
    # Theorem 3.4 at delta = 1e-3 is about 2.97e-3 (the paper README's reading).
    assert sens.mpc_gradp_sigma_theorem34(G, M, N1, EPS, 1e-3, T) == pytest.approx(2.97e-3, abs=0.005e-3)


def test_theorem34_calibration_overshoots_epsilon_and_exact_calibration_does_not() -> None:
    delta = 1e-3
    L = math.log(1 / delta)
    sigma = sens.mpc_gradp_sigma_theorem34(G, M, N1, EPS, delta, T)
    rho = T * sens.averaged_gradient_sensitivity(G, M, N1) ** 2 / (2 * sigma**2)
    assert sens.epsilon_of_zcdp(rho, delta) == pytest.approx(EPS + EPS**2 / (4 * L), rel=1e-12)
    exact = sens.gaussian_sigma_for_zcdp(sens.averaged_gradient_sensitivity(G, M, N1), T, EPS, delta)
    rho_exact = T * sens.averaged_gradient_sensitivity(G, M, N1) ** 2 / (2 * exact**2)
    assert sens.epsilon_of_zcdp(rho_exact, delta) == pytest.approx(EPS, rel=1e-12)
    assert exact > sigma  # the sound sigma is (slightly) larger


@given(eps=st.floats(1e-6, 50.0), delta=st.floats(1e-15, 0.5))
def test_zcdp_conversion_inverts_exactly(eps: float, delta: float) -> None:
    rho = sens.zcdp_rho_for_epsilon(eps, delta)
    assert sens.epsilon_of_zcdp(rho, delta) == pytest.approx(eps, rel=1e-9)


def test_laplace_scale_for_l2_is_sqrt_d_times_the_paper_scale() -> None:
    assert sens.laplace_scale_for_l2(0.2, 0.5, 16) == pytest.approx(4 * 0.2 / 0.5)
    assert sens.laplace_scale_for_l2(0.2, 0.5, 1) == pytest.approx(0.2 / 0.5)


def _neighbours(rng: RandomSource, n: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = rng.random((n, d)) * 2 - 1
    X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    # the worst replacement for a margin loss: a unit-norm record with its label flipped (y x moves by 2)
    X[0] /= np.linalg.norm(X[0])
    X2, y2 = X.copy(), y.copy()
    y2[0] = -y[0]
    return X, y, X2, y2


@pytest.mark.parametrize("seed", range(5))
def test_minimizer_sensitivity_bounds_neighbouring_optima(seed: int) -> None:
    rng = RandomSource.seeded(seed)
    n, d, lam = 20, 3, 0.05
    X, y, X2, y2 = _neighbours(rng, n, d)
    a = erm.solve(erm.Objective(erm.LogisticLoss(), X, y, lam=lam)).theta
    b = erm.solve(erm.Objective(erm.LogisticLoss(), X2, y2, lam=lam)).theta
    moved = float(np.linalg.norm(a - b))
    bound = sens.minimizer_sensitivity(1.0, n, lam)
    assert moved <= bound
    assert moved >= 0.05 * bound  # the bound is not vacuous for these worst-case neighbours


@given(seed=st.integers(0, 2**32 - 1))
def test_gradient_sensitivity_bounds_neighbouring_gradients(seed: int) -> None:
    rng = RandomSource.seeded(seed)
    n, d = 7, 4
    X, y, X2, y2 = _neighbours(rng, n, d)
    theta = rng.random(d) * 6 - 3
    for loss in (erm.LogisticLoss(), erm.HuberLoss(c=1.0)):
        if loss.task == "regression":  # targets in [-1, 1], differing only in record 0
            y = y * 0.5
            y2 = y.copy()
            y2[0] = -0.9 * np.sign(y[0])
        g1 = erm.Objective(loss, X, y, lam=0.0).data_gradient(theta)
        g2 = erm.Objective(loss, X2, y2, lam=0.0).data_gradient(theta)
        assert np.linalg.norm(g1 - g2) <= sens.gradient_sensitivity(loss.lipschitz, n) + 1e-12
        assert sens.averaged_gradient_sensitivity(loss.lipschitz, 5, n) == pytest.approx(
            sens.gradient_sensitivity(loss.lipschitz, n) / 5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sens.minimizer_sensitivity(1.0, 10, 0.0), "lambda"),
        (lambda: sens.minimizer_sensitivity(1.0, 10, -1.0), "lambda"),
        (lambda: sens.minimizer_sensitivity(1.0, 0, 0.1), "at least one record"),
        (lambda: sens.gradient_sensitivity(float("nan"), 3), "Lipschitz"),
        (lambda: sens.mpc_gradp_sigma(1.0, 10, 5, 0.0, 10), "epsilon"),
        (lambda: sens.mpc_gradp_sigma(1.0, 10, 5, 0.5, 0), "iterations"),
        (lambda: sens.mpc_gradp_sigma_theorem34(1.0, 10, 5, 0.5, 1.0, 10), "delta"),
        (lambda: sens.mpc_outp_laplace_scale(1.0, 0, 5, 0.1, 0.5), "number of parties"),
        (lambda: sens.zcdp_rho_for_epsilon(1.0, 0.0), "delta"),
    ],
)
def test_bad_input(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=match):
        call()
