"""MPC Out P, MPC Grad P and Pathak: secure aggregation with noise added inside the secure computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpdp.dp.accounting import zcdp_epsilon
from mpdp.dp.sensitivities.erm import gaussian_sigma_for_zcdp, gradient_sensitivity
from mpdp.errors import ParameterError
from mpdp.learning import erm
from mpdp.learning.distributed_erm import fit_local_gradp, fit_mpc_gradp, fit_mpc_outp, fit_pathak
from mpdp.learning.distributed_erm.common import GradientPerturbation, OutputPerturbation, gd_step
from mpdp.learning.distributed_erm.mpc import MPCSetup, mpc_noise_samples
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.randomness import RandomSource

PROBLEM = ERMProblem(erm.LogisticLoss(), lam=1e-2)


def _parties(rng: RandomSource, n: int = 120, d: int = 4, m: int = 6) -> HorizontalParties:
    X = (rng.random((n, d)) * 2 - 1) / np.sqrt(d)
    y = np.where(X @ np.arange(1, d + 1) >= 0, 1.0, -1.0)
    return HorizontalParties.from_rows(X, y, np.array_split(np.arange(n), m), task="classification")


def test_secure_aggregate_of_minimisers_equals_their_plain_mean(rng: RandomSource) -> None:
    parties = _parties(rng)
    fit = fit_mpc_outp(PROBLEM, parties, OutputPerturbation(epsilon=1e7), rng=rng, cohort_size=1)
    plain = np.concatenate([g.local_minimizers(PROBLEM) for g in parties]).mean(axis=0)
    # Laplace scale of the average sqrt(4) 2G/(6 * 20 * 0.01 * 1e7) ~ 3e-7, rounding 2^-25: 1e-5 is > 30 scales
    np.testing.assert_allclose(fit.theta, plain, atol=1e-5)
    assert fit.privacy.delta < 1e-15  # the in-MPC Laplace's total-variation slack, added to delta
    # six real parties, two aggregators and the correlation dealer exchanged messages
    assert fit.communication["messages"] > 6 * 2


def test_secure_aggregate_of_gradients_is_gradient_descent_on_the_plain_mean(rng: RandomSource) -> None:
    parties = _parties(rng)
    settings = GradientPerturbation(epsilon=1e6, delta=1e-5, T=25, record=(5, 25))
    fit = fit_mpc_gradp(PROBLEM, parties, settings, rng=rng)
    theta = np.zeros(parties.d)
    reference = []
    for t in range(1, 26):
        grads = np.concatenate([g.local_gradients(PROBLEM, theta) for g in parties])
        theta = gd_step(theta, grads.mean(axis=0), PROBLEM, 1.0)
        if t in (5, 25):
            reference.append(theta)
    # per step: noise std sqrt(2) * 0.1 sqrt(25 / 2e6) / 6 ~ 8e-5, rounding 2^-25; 25 contracting steps < 1e-3
    np.testing.assert_allclose(fit.iterates, np.array(reference), atol=2e-3)


def _noise_only(rng: RandomSource, m: int, d: int) -> HorizontalParties:
    """Parties whose records are all zero: their gradients vanish, so every update is pure noise."""
    X = np.zeros((m * 3, d))
    y = np.ones(m * 3)
    return HorizontalParties.from_rows(X, y, np.array_split(np.arange(m * 3), m), task="classification")


def _recovered_noise(fit_theta_trace: np.ndarray, problem: ERMProblem, eta: float) -> np.ndarray:
    previous = np.vstack([np.zeros(fit_theta_trace.shape[1]), fit_theta_trace[:-1]])
    # theta_{t+1} = (1 - eta lam) theta_t - eta z_t
    return ((1 - eta * problem.lam) * previous - fit_theta_trace) / eta


def test_mpc_gradp_noise_has_the_calibrated_std_and_beats_local_noise(rng: RandomSource) -> None:
    m, d, T = 8, 5, 200
    parties = _noise_only(rng, m, d)
    settings = GradientPerturbation(epsilon=0.5, delta=1e-3, T=T)
    mpc = fit_mpc_gradp(PROBLEM, parties, settings, rng=rng.spawn("mpc"))
    local = fit_local_gradp(PROBLEM, parties, settings, rng=rng.spawn("local"))
    z_mpc = _recovered_noise(mpc.iterates, PROBLEM, 1.0)
    z_local = _recovered_noise(local.iterates, PROBLEM, 1.0)
    # 1,000 Gaussian draws each: std within 10% is > 4 standard errors (2.2%).
    assert z_mpc.std() == pytest.approx(mpc.privacy.details["sigma_of_average"], rel=0.1)
    assert z_local.std() == pytest.approx(local.privacy.details["sigma_of_average_n1"], rel=0.1)
    # two aggregators' copies (sqrt(2)) against m independent local copies (sqrt(m)) of an m-times larger noise
    assert mpc.privacy.details["sigma_of_average"] * math.sqrt(m / 2) == pytest.approx(
        local.privacy.details["sigma_of_average_n1"], rel=1e-6)


def test_mpc_gradp_accounting_closed_forms(rng: RandomSource) -> None:
    parties = _parties(rng, n=60, m=3)  # 20 records each
    settings = GradientPerturbation(epsilon=0.5, delta=1e-3, T=10, stop_after=2)
    fit = fit_mpc_gradp(PROBLEM, parties, settings, rng=rng)
    details = fit.privacy.details
    delta_sum = gradient_sensitivity(PROBLEM.G, 20)
    effective = delta_sum + math.sqrt(parties.d) * 2.0**-24  # rounding to the shares' grid
    assert details["effective_sensitivity"] == pytest.approx(effective, rel=1e-12)
    assert details["sigma"] == pytest.approx(gaussian_sigma_for_zcdp(effective, 10, 0.5, 1e-3), rel=1e-9)
    assert details["rho"] == pytest.approx(10 * effective**2 / (2 * details["sigma"] ** 2), rel=1e-12)
    assert zcdp_epsilon(details["rho"], 1e-3, conversion="bun_steinke") == pytest.approx(0.5, rel=1e-9)
    assert fit.privacy.epsilon <= 0.5
    assert details["epsilon_exact"] < details["epsilon_zcdp_tight_conversion"] < details["epsilon_zcdp"]
    assert details["epsilon_outsiders"] < fit.privacy.epsilon  # outsiders face both aggregators' copies
    tight = fit_mpc_gradp(PROBLEM, parties, GradientPerturbation(epsilon=0.5, delta=1e-3, T=10, stop_after=1,
                                                                 accountant="tight"), rng=rng)
    assert tight.privacy.details["sigma"] < details["sigma"] and tight.privacy.epsilon <= 0.5


def test_pathak_noise_is_m_times_mpc_outp(rng: RandomSource) -> None:
    parties = _parties(rng)
    mpc = fit_mpc_outp(PROBLEM, parties, OutputPerturbation(epsilon=1.0), rng=rng)
    pathak = fit_pathak(PROBLEM, parties, OutputPerturbation(epsilon=1.0), rng=rng)
    ratio = pathak.privacy.details["laplace_scale_of_average"] / mpc.privacy.details["laplace_scale_of_average"]
    assert ratio == pytest.approx(parties.m, rel=1e-4)
    # the paper's scalar scale 2G/(m n(1) lam eps) times the l1 factor sqrt(d) (plus the grid's rounding)
    assert mpc.privacy.details["laplace_scale_paper_scalar"] == pytest.approx(2 / (6 * 20 * 1e-2), rel=1e-4)


def test_larger_parties_spend_less(rng: RandomSource) -> None:
    X = (rng.random((25, 3)) - 0.5) / 2
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    parties = HorizontalParties.from_rows(X, y, np.array_split(np.arange(25), 3), task="classification")  # 9,8,8
    fit = fit_mpc_outp(PROBLEM, parties, OutputPerturbation(epsilon=1.0), rng=rng)
    # the noise is set for n(1) = 8; the larger party's epsilon is the grid-inflated sensitivities' ratio, 8/9
    # up to the grid's rounding (d units on sensitivities of about 2^24 units)
    assert fit.privacy.per_party == {"party0 (9 rows)": pytest.approx(8 / 9, rel=1e-6),
                                     "party1..party2 (8 rows each)": 1.0}


@pytest.mark.parametrize(("family", "scale"), [("laplace", 0.05), ("gaussian", 0.003)])
def test_in_mpc_noise_samples(family: str, scale: float) -> None:
    x = mpc_noise_samples(family, scale, 2000, rng=RandomSource.seeded(family))  # type: ignore[arg-type]
    expected = math.sqrt(2) * scale if family == "laplace" else scale
    # 2,000 draws: standard error of the std 2.5% (Laplace) / 1.6% (Gaussian); 10% is > 4 of them
    assert x.std() == pytest.approx(expected, rel=0.1)
    assert abs(x.mean()) < 5 * expected / math.sqrt(2000)


def test_bad_setup() -> None:
    with pytest.raises(ParameterError, match="two non-colluding"):
        MPCSetup(aggregators=1)


class _Ledger:
    """A BudgetSpender double: records what is charged, or refuses once the budget is gone."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.charged: list[tuple[str, object]] = []

    def spend(self, cost: object, *, label: str) -> None:
        from mpdp.errors import BudgetExceededError

        if self.refuse:
            raise BudgetExceededError("budget exhausted (test double)")
        self.charged.append((label, cost))


def test_every_method_charges_its_ledger_before_releasing(rng: RandomSource) -> None:
    from mpdp.errors import BudgetExceededError
    from mpdp.learning.distributed_erm import fit_local_objp, fit_local_outp

    parties = _parties(rng, n=40, m=2)
    grad = GradientPerturbation(epsilon=0.5, delta=1e-3, T=7, stop_after=1)
    out = OutputPerturbation(epsilon=0.5)
    fits = [(fit_mpc_gradp, grad), (fit_local_gradp, grad), (fit_mpc_outp, out), (fit_pathak, out),
            (fit_local_outp, out), (fit_local_objp, out)]
    for fit, settings in fits:
        ledger = _Ledger()
        result = fit(PROBLEM, parties, settings, rng=rng, ledger=ledger)  # type: ignore[operator]
        ((label, cost),) = ledger.charged
        assert label == f"003/{result.method}"
        # one entry for the whole run (T releases for the gradient methods): a record's guarantee, with its zCDP
        assert cost.count == 1 and cost.epsilon == result.privacy.epsilon  # type: ignore[attr-defined]
        if isinstance(settings, GradientPerturbation):
            assert cost.rho == result.privacy.details["rho"] and cost.delta == 1e-3  # type: ignore[attr-defined]
        else:
            assert cost.epsilon == 0.5 and cost.delta <= 1e-15  # type: ignore[attr-defined]
        with pytest.raises(BudgetExceededError):
            fit(PROBLEM, parties, settings, rng=rng, ledger=_Ledger(refuse=True))  # type: ignore[operator]
