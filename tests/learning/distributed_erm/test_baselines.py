"""Paper 003's local baselines: each party's release is its own DP release; the aggregator only averages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpdp.dp.sensitivities.erm import gradient_sensitivity
from mpdp.errors import DomainError, ParameterError
from mpdp.learning import erm
from mpdp.learning.distributed_erm import fit_local_gradp, fit_local_objp, fit_local_outp
from mpdp.learning.distributed_erm.baselines import gaussian_rows, laplace_rows, output_laplace
from mpdp.learning.distributed_erm.common import (
    GradientPerturbation,
    OutputPerturbation,
    calibrate_gradient_noise,
    cohorts,
    gd_step,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.randomness import RandomSource

PROBLEM = ERMProblem(erm.LogisticLoss(), lam=1e-2)


def _parties(rng: RandomSource, n: int = 120, d: int = 4, m: int = 6) -> HorizontalParties:
    X = (rng.random((n, d)) * 2 - 1) / np.sqrt(d)
    y = np.where(X @ np.arange(1, d + 1) >= 0, 1.0, -1.0)
    return HorizontalParties.from_rows(X, y, np.array_split(np.arange(n), m), task="classification")


def _local_minimizers(parties: HorizontalParties, problem: ERMProblem = PROBLEM) -> np.ndarray:
    return np.concatenate([g.local_minimizers(problem) for g in parties])


def test_local_outp_without_meaningful_noise_is_the_average_of_local_models(rng: RandomSource) -> None:
    parties = _parties(rng)
    fit = fit_local_outp(PROBLEM, parties, OutputPerturbation(epsilon=1e6), rng=rng, cohort_size=1)
    # Laplace scale sqrt(4) * 2G / (20 * 0.01 * 1e6) = 2e-5 per party: 1e-3 is > 50 scales
    np.testing.assert_allclose(fit.theta, _local_minimizers(parties).mean(axis=0), atol=1e-3)
    assert fit.privacy.epsilon == 1e6 and fit.privacy.delta == 0.0
    # six real parties + the aggregator: one release each, one model back each
    assert fit.communication["messages"] == 12


def test_laplace_rows_give_each_party_its_own_noise_of_the_stated_scale(rng: RandomSource) -> None:
    mech = output_laplace(PROBLEM, n=50, epsilon=0.5, dim=4)
    assert mech.scale == pytest.approx(2 * 2 * 1.0 / (50 * 1e-2 * 0.5))  # sqrt(4) * 2G/(n lam eps)
    rows = laplace_rows(mech, np.zeros((2500, 4)), rng=rng)
    # std of 10,000 Laplace draws: relative standard error ~ sqrt(5/4/10^4) = 1.1%; 5% is > 4 standard errors
    # (false-failure rate < 1e-4 for a fresh seed; the seed here is fixed).
    assert rows.std() == pytest.approx(math.sqrt(2) * mech.effective_scale(4), rel=0.05)
    assert not np.allclose(rows[0], rows[1])


def test_local_objp_with_a_huge_budget_approaches_local_models(rng: RandomSource) -> None:
    parties = _parties(rng, n=600, m=3)
    fit = fit_local_objp(PROBLEM, parties, OutputPerturbation(epsilon=1e6), rng=rng)
    np.testing.assert_allclose(fit.theta, _local_minimizers(parties).mean(axis=0), atol=1e-3)
    assert fit.privacy.details["extra_regularization_n1"] == 0.0


def test_local_objp_needs_a_1_lipschitz_loss(rng: RandomSource) -> None:
    with pytest.raises(ParameterError, match="G <= 1"):
        fit_local_objp(ERMProblem(erm.HuberLoss(c=2.0), lam=0.1), _parties(rng), OutputPerturbation(1.0), rng=rng)


def test_local_gradp_without_meaningful_noise_is_gradient_descent(rng: RandomSource) -> None:
    parties = _parties(rng)
    # eps = 1e6: sigma = 0.1 sqrt(25 / (2 rho)) ~ 3.5e-4 per party, ~ 1.4e-4 per averaged step; 25 steps of
    # non-expansive updates accumulate < 7e-4 * 5 standard deviations.
    settings = GradientPerturbation(epsilon=1e6, delta=1e-5, T=25, record=(1, 5, 25))
    fit = fit_local_gradp(PROBLEM, parties, settings, rng=rng)
    theta = np.zeros(parties.d)
    reference = []
    for t in range(1, 26):
        grads = np.concatenate([g.local_gradients(PROBLEM, theta) for g in parties])
        theta = gd_step(theta, grads.mean(axis=0), PROBLEM, 1.0)
        if t in (1, 5, 25):
            reference.append(theta)
    np.testing.assert_allclose(fit.iterates, np.array(reference), atol=4e-3)
    np.testing.assert_allclose(fit.theta, reference[-1], atol=4e-3)
    assert fit.iterations == (1, 5, 25)
    assert fit.communication["rounds"] >= 2 * 25


def test_local_gradp_stop_after_runs_fewer_iterations(rng: RandomSource) -> None:
    settings = GradientPerturbation(epsilon=1.0, delta=1e-5, T=50, stop_after=3)
    fit = fit_local_gradp(PROBLEM, _parties(rng), settings, rng=rng)
    assert fit.iterations == (1, 2, 3) and fit.iterates.shape == (3, 4)


def test_gradient_calibration_meets_the_target_by_each_accountant() -> None:
    sens = gradient_sensitivity(1.0, 50)
    zcdp = calibrate_gradient_noise(sens, 10, GradientPerturbation(epsilon=0.5, delta=1e-3, T=100))
    tight = calibrate_gradient_noise(sens, 10, GradientPerturbation(epsilon=0.5, delta=1e-3, T=100,
                                                                    accountant="tight"))
    assert zcdp.epsilon_zcdp <= 0.5 and zcdp.epsilon_zcdp == pytest.approx(0.5, rel=1e-9)
    assert zcdp.epsilon_exact < zcdp.epsilon_zcdp_tight < zcdp.epsilon_zcdp  # tighter accounting, same noise
    assert tight.epsilon_exact <= 0.5 and tight.sigma < zcdp.sigma  # tighter calibration, less noise
    assert tight.epsilon_zcdp > 0.5  # ...which the paper's zCDP route would not certify
    # the grid's rounding is part of the sensitivity, and negligible at the default grid
    assert zcdp.effective_sensitivity > sens and zcdp.effective_sensitivity == pytest.approx(sens, rel=1e-8)
    # a larger party (smaller sensitivity) spends less
    assert zcdp.epsilon_for(gradient_sensitivity(1.0, 100), 10) < 0.5


def test_gaussian_rows_std(rng: RandomSource) -> None:
    cal = calibrate_gradient_noise(0.01, 5, GradientPerturbation(epsilon=1.0, delta=1e-5, T=10))
    rows = gaussian_rows(cal, np.zeros((2000, 5)), rng=rng)
    # 10,000 draws: relative standard error of the std 0.7%; 3% is > 4 standard errors.
    assert rows.std() == pytest.approx(cal.sigma, rel=0.03)


def test_cohorts_split_groups_into_named_runtime_parties(rng: RandomSource) -> None:
    parties = _parties(rng, n=13, m=5)  # sizes 3,3,3,2,2
    names = [c.name for c in cohorts(parties, 2)]
    assert names == ["parties0-1", "party2", "parties3-4"]
    assert [c.name for c in cohorts(parties)] == ["parties0-2", "parties3-4"]  # default: up to 4,096 per cohort


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: GradientPerturbation(epsilon=0.5, delta=1e-3, T=0), "T"),
        (lambda: GradientPerturbation(epsilon=0.0, delta=1e-3, T=10), "epsilon"),
        (lambda: GradientPerturbation(epsilon=float("inf"), delta=1e-3, T=10), "epsilon"),
        (lambda: GradientPerturbation(epsilon=0.5, delta=0.0, T=10), "delta"),
        (lambda: GradientPerturbation(epsilon=0.5, delta=1.0, T=10), "delta"),
        (lambda: GradientPerturbation(epsilon=0.5, delta=1e-3, T=10, accountant="rdp"), "accountant"),  # type: ignore[arg-type]
        (lambda: GradientPerturbation(epsilon=0.5, delta=1e-3, T=10, record=(11,)), "record"),
        (lambda: OutputPerturbation(epsilon=-1.0), "epsilon"),
    ],
)
def test_bad_settings(build, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=match):
        build()


def test_step_size_must_suit_the_smoothness(rng: RandomSource) -> None:
    huber = ERMProblem(erm.HuberLoss(c=1.0), lam=1e-3)
    settings = GradientPerturbation(epsilon=1.0, delta=1e-5, T=5, eta=2.5)
    X = (rng.random((10, 3)) - 0.5) / 2
    parties = HorizontalParties.from_rows(X, X[:, 0], [np.arange(5), np.arange(5, 10)], task="regression")
    with pytest.raises(ParameterError, match="eta"):
        fit_local_gradp(huber, parties, settings, rng=rng)
    assert issubclass(DomainError, ParameterError)


def test_tiny_noise_coarsens_the_grid_instead_of_overflowing(rng: RandomSource) -> None:
    parties = _parties(rng)
    fit = fit_local_outp(PROBLEM, parties, OutputPerturbation(epsilon=1e12), rng=rng)
    np.testing.assert_allclose(fit.theta, _local_minimizers(parties).mean(axis=0), atol=1e-6)
