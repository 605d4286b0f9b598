"""DPVI's accountant against closed forms and dp-accounting: analyst, per party (VPDP), disjoint epochs."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from mpdp.dp.accounting.distributed import DDG_ORDERS
from mpdp.errors import DomainError, ParameterError
from mpdp.learning.dpvi.privacy import analyst_epsilon, calibrate_noise_multiplier, party_epsilon
from mpdp.learning.dpvi.training import BatchPlan

POISSON = BatchPlan(n=2000, batch_size=100, epochs=3, batching="poisson")  # q = 0.05, T = 60
DISJOINT = BatchPlan(n=2000, batch_size=100, epochs=3, batching="disjoint")
COMMON = {"delta": 1e-5, "dim": 50, "clip": 2.0, "grid_bits": 30}


def gaussian_rdp_epsilon(z: float, steps: int, delta: float) -> float:
    """Unsampled Gaussian: RDP alpha steps / (2 z^2), converted as the DP core does, over its orders."""
    best = math.inf
    for a in DDG_ORDERS:
        eps = steps * a / (2 * z * z) + (math.log(1 / delta) - math.log(a)) / (a - 1) + math.log1p(-1 / a)
        best = min(best, eps)
    return best


def test_gaussian_accountant_is_dp_accounting_subsampled_gaussian() -> None:
    z = 1.3
    ours = analyst_epsilon(noise_multiplier=z, plan=POISSON, accountant="gaussian", **COMMON)
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(z)), 60)
    assert ours == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)


def test_party_sees_full_steps_and_only_the_unknown_noise() -> None:
    z = 3.0
    # trusted noise party: towards a party that knows the minibatches, T unsampled Gaussian steps
    trusted = party_epsilon(noise_multiplier=z, plan=POISSON, parties=2, noise="trusted", **COMMON)
    assert trusted == pytest.approx(gaussian_rdp_epsilon(z, 60, 1e-5), rel=1e-6)
    # distributed noise among 3 parties: the party's own share is known, z sqrt(2/3) remains
    shared = party_epsilon(noise_multiplier=z, plan=POISSON, parties=3, noise="parties", **COMMON)
    assert shared == pytest.approx(gaussian_rdp_epsilon(z * math.sqrt(2 / 3), 60, 1e-5), rel=1e-6)
    # hidden minibatches give the amplification back, and the analyst always gets it
    hidden = party_epsilon(noise_multiplier=z, plan=POISSON, parties=2, noise="trusted", indices_known=False,
                           **COMMON)
    analyst = analyst_epsilon(noise_multiplier=z, plan=POISSON, **COMMON)
    assert hidden == pytest.approx(analyst) and analyst < trusted < shared


def test_disjoint_epochs_cost_one_release_per_epoch() -> None:
    z = 3.0
    analyst = analyst_epsilon(noise_multiplier=z, plan=DISJOINT, **COMMON)
    party = party_epsilon(noise_multiplier=z, plan=DISJOINT, parties=2, noise="trusted", **COMMON)
    assert analyst == pytest.approx(gaussian_rdp_epsilon(z, 3, 1e-5), rel=1e-6) == party
    assert party < party_epsilon(noise_multiplier=z, plan=POISSON, parties=2, noise="trusted", **COMMON)


def test_snapping_costs_a_little() -> None:
    z = 2.0
    exact = analyst_epsilon(noise_multiplier=z, plan=DISJOINT, **COMMON)
    snapped = analyst_epsilon(noise_multiplier=z, plan=DISJOINT, snapped=True, **COMMON)
    assert exact < snapped < exact * (1 + 1e-6)


def test_calibration_reaches_the_target() -> None:
    z = calibrate_noise_multiplier(epsilon=1.0, plan=DISJOINT, **COMMON)
    assert analyst_epsilon(noise_multiplier=z, plan=DISJOINT, **COMMON) <= 1.0
    assert analyst_epsilon(noise_multiplier=z * 0.99, plan=DISJOINT, **COMMON) > 1.0


def test_refusals() -> None:
    with pytest.raises(DomainError, match="colluders"):
        party_epsilon(noise_multiplier=1.0, plan=POISSON, parties=2, noise="parties", colluders=1, **COMMON)
    with pytest.raises(ParameterError, match="accountant"):
        analyst_epsilon(noise_multiplier=1.0, plan=POISSON, accountant="moments", **COMMON)
    with pytest.raises(ParameterError, match="noise"):
        party_epsilon(noise_multiplier=1.0, plan=POISSON, parties=2, noise="tee", **COMMON)
    assert analyst_epsilon(noise_multiplier=0.0, plan=POISSON, **COMMON) == math.inf
