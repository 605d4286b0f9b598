"""Laplace, Gaussian, discrete Laplace and discrete Gaussian mechanisms: validation, costs, noise, ledger order."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from mpdp.dp import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyCost,
)
from mpdp.dp.accounting import zcdp_epsilon
from mpdp.dp.calibration import analytic_gaussian_sigma, classic_gaussian_sigma, gaussian_delta
from mpdp.errors import BudgetExceededError, DomainError, ParameterError, PrivacyLeakWarning, ShapeMismatchError
from mpdp.randomness import RandomSource


class RecordingLedger:
    """A stand-in ledger: records charges, or refuses them."""

    def __init__(self, refuse: bool = False) -> None:
        self.charges: list[tuple[PrivacyCost, str]] = []
        self.refuse = refuse

    def spend(self, cost: PrivacyCost, *, label: str) -> None:
        if self.refuse:
            raise BudgetExceededError("budget exhausted")
        self.charges.append((cost, label))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0, "sensitivity": 1}, "epsilon"),
        ({"epsilon": -1, "sensitivity": 1}, "epsilon"),
        ({"epsilon": math.inf, "sensitivity": 1}, "epsilon"),
        ({"epsilon": math.nan, "sensitivity": 1}, "epsilon"),
        ({"epsilon": 1, "sensitivity": -1}, "sensitivity"),
        ({"epsilon": 1, "sensitivity": math.inf}, "sensitivity"),
        ({"epsilon": 1, "sensitivity": 0}, "zero-sensitivity"),
        ({"epsilon": True, "sensitivity": 1}, "epsilon"),
    ],
)
def test_laplace_refuses_bad_parameters(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        LaplaceMechanism(**kwargs)


def test_parameters_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        LaplaceMechanism(1.0, 1.0)  # type: ignore[misc]


def test_laplace_cost_and_noise_scale() -> None:
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    assert mech.cost == PrivacyCost(epsilon=0.5, rho=0.125, mechanism="laplace", noise_multiplier=2.0)
    assert mech.scale == 4.0
    assert mech.effective_scale(10) == pytest.approx(4.0, rel=1e-9)
    with pytest.warns(PrivacyLeakWarning, match="seeded"):
        out = mech.release(np.zeros(40_000), rng=RandomSource.seeded("lap-mech"))
    # Laplace variance 2 b^2 = 32; the sample variance of 40k draws has relative std ~ sqrt(5/40k) = 1.1%.
    assert np.var(out) == pytest.approx(32.0, rel=0.05)
    assert out.shape == (40_000,)


def test_release_charges_the_ledger_before_drawing() -> None:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    ledger = RecordingLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        value = mech.release(3.0, rng=RandomSource.seeded(1), ledger=ledger, label="count")
    assert isinstance(value, float)
    assert ledger.charges == [(mech.cost, "count")]
    refusing = RecordingLedger(refuse=True)
    rng = RandomSource.fresh()
    with pytest.raises(BudgetExceededError):
        mech.release(3.0, rng=rng, ledger=refusing)
    with pytest.raises(ParameterError, match="label"):
        mech.release(3.0, ledger=ledger, label="")


def test_fresh_source_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0).release([1.0, 2.0])


def test_release_refuses_non_finite_values() -> None:
    with pytest.raises(DomainError, match="finite"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0).release([1.0, math.inf])


def test_gaussian_calibrations() -> None:
    analytic = GaussianMechanism.calibrated(epsilon=0.5, delta=1e-5, sensitivity=1.0)
    classic = GaussianMechanism.calibrated(epsilon=0.5, delta=1e-5, sensitivity=1.0, method="classic")
    zcdp = GaussianMechanism.calibrated(epsilon=0.5, delta=1e-5, sensitivity=1.0, method="zcdp")
    assert analytic.sigma < zcdp.sigma < classic.sigma
    for mech in (analytic, classic, zcdp):
        assert mech.epsilon <= 0.5 * (1 + 1e-9)
        assert mech.cost.delta == 1e-5
        assert mech.rho == pytest.approx(1 / (2 * mech.sigma**2), rel=1e-9)
    assert zcdp_epsilon(zcdp.rho, 1e-5) <= 0.5
    assert classic.sigma == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-9)
    with pytest.raises(DomainError, match="analytic"):
        GaussianMechanism.calibrated(epsilon=2.0, delta=1e-5, sensitivity=1.0, method="classic")
    with pytest.raises(ParameterError, match="method"):
        GaussianMechanism.calibrated(epsilon=1.0, delta=1e-5, sensitivity=1.0, method="magic")


def test_analytic_sigma_meets_delta_exactly() -> None:
    # Balle & Wang 2018, Table/Fig: analytic sigma at eps = 1, delta = 1e-5 is about 3.73 (classic: 4.84).
    sigma = analytic_gaussian_sigma(sensitivity=1.0, epsilon=1.0, delta=1e-5)
    assert 3.6 < sigma < 3.8
    assert gaussian_delta(sigma=sigma, sensitivity=1.0, epsilon=1.0) <= 1e-5
    assert gaussian_delta(sigma=sigma * (1 - 1e-9), sensitivity=1.0, epsilon=1.0) > 1e-5 * (1 - 1e-6)
    assert classic_gaussian_sigma(sensitivity=1.0, epsilon=0.9, delta=1e-5) > analytic_gaussian_sigma(
        sensitivity=1.0, epsilon=0.9, delta=1e-5
    )


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, math.nan])
def test_gaussian_refuses_bad_delta(delta: float) -> None:
    with pytest.raises(ParameterError, match="delta"):
        GaussianMechanism(sensitivity=1.0, sigma=1.0, delta=delta)


def test_gaussian_release_noise_and_dim_check() -> None:
    mech = GaussianMechanism(sensitivity=1.0, sigma=2.0, delta=1e-6, dim=30_000)
    with pytest.warns(PrivacyLeakWarning):
        out = mech.release(np.full(30_000, 5.0), rng=RandomSource.seeded("gauss-mech"))
    assert np.mean(out) == pytest.approx(5.0, abs=0.05)
    assert np.var(out) == pytest.approx(4.0, rel=0.04)
    with pytest.raises(ShapeMismatchError, match="dim=3"):
        GaussianMechanism(sensitivity=1.0, sigma=2.0, delta=1e-6).release([1.0, 2.0, 3.0])


def test_discrete_laplace_mechanism() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2)
    assert mech.scale == Fraction(4)
    with pytest.warns(PrivacyLeakWarning):
        out = mech.release(np.arange(10), rng=RandomSource.seeded(2))
    assert out.dtype == np.int64
    with pytest.raises(DomainError, match="integer"):
        mech.release([0.5])
    with pytest.raises(ParameterError, match="sensitivity"):
        DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.5)  # type: ignore[arg-type]
    assert isinstance(DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1).release(7), int)


def test_discrete_gaussian_mechanism() -> None:
    mech = DiscreteGaussianMechanism.calibrated(epsilon=1.0, delta=1e-6, sensitivity=1.0)
    assert mech.epsilon <= 1.0
    assert mech.rho == pytest.approx(1 / (2 * mech.sigma**2))
    assert mech.cost.mechanism == "discrete_gaussian"
    with pytest.warns(PrivacyLeakWarning):
        out = mech.release(np.zeros(20_000, dtype=np.int64), rng=RandomSource.seeded(4))
    assert np.var(out) == pytest.approx(mech.sigma**2, rel=0.05)
    with pytest.raises(DomainError, match="integer"):
        mech.release([math.nan])
