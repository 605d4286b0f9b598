"""DP-SGD accounting, the distributed discrete Gaussian and VPDP, against closed forms and dp-accounting."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from mpdp.dp.accounting import (
    ddg_cost,
    ddg_epsilon,
    ddg_rdp,
    ddg_tau,
    disjoint_epochs_epsilon,
    dpsgd_cost,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    party_noise_multiplier,
    vpdp_epsilon,
    zcdp_epsilon,
)
from mpdp.dp.accounting.distributed import DDG_ORDERS
from mpdp.dp.calibration import gaussian_epsilon
from mpdp.errors import DomainError, ParameterError


def test_dpsgd_rdp_is_dp_accounting() -> None:
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_accounting.PoissonSampledDpEvent(0.02, dp_accounting.GaussianDpEvent(1.3)), 500)
    ours = dpsgd_epsilon(noise_multiplier=1.3, sampling_rate=0.02, steps=500, delta=1e-5)
    assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-12)


def test_full_batch_gaussian_matches_closed_forms() -> None:
    z, steps, delta = 4.0, 30, 1e-6
    # zCDP: rho = T / (2 z^2), converted tightly.
    assert dpsgd_epsilon(noise_multiplier=z, steps=steps, delta=delta, method="zcdp") == pytest.approx(
        zcdp_epsilon(steps / (2 * z * z), delta), rel=1e-9)
    # PLD (pessimistic, discretised) brackets the exact Gaussian curve of T composed steps: mu = sqrt(T) / z.
    exact = gaussian_epsilon(sigma=z / math.sqrt(steps), sensitivity=1.0, delta=delta)
    pld = dpsgd_epsilon(noise_multiplier=z, steps=steps, delta=delta, method="pld")
    assert exact <= pld <= exact * 1.01
    assert pld <= dpsgd_epsilon(noise_multiplier=z, steps=steps, delta=delta, method="rdp")


def test_noise_multiplier_search_inverts_epsilon() -> None:
    z = dpsgd_noise_multiplier(epsilon=2.0, delta=1e-5, sampling_rate=0.01, steps=300)
    assert dpsgd_epsilon(noise_multiplier=z, sampling_rate=0.01, steps=300, delta=1e-5) <= 2.0
    assert dpsgd_epsilon(noise_multiplier=z * (1 - 1e-3), sampling_rate=0.01, steps=300, delta=1e-5) > 2.0
    with pytest.raises(DomainError, match="epsilon"):
        dpsgd_noise_multiplier(epsilon=1e-9, delta=1e-12, steps=10**6)


def test_dpsgd_cost_and_validation() -> None:
    cost = dpsgd_cost(noise_multiplier=2.0, sampling_rate=0.1, steps=10, delta=1e-5)
    assert cost.count == 10 and cost.sampling_rate == 0.1 and cost.mechanism == "subsampled_gaussian"
    assert dpsgd_cost(noise_multiplier=2.0, steps=10, delta=1e-5).rho == pytest.approx(10 / 8)
    for kwargs, match in [({"steps": 0}, "steps"), ({"sampling_rate": 0.0}, "sampling_rate"),
                          ({"noise_multiplier": -1.0}, "noise_multiplier"), ({"delta": 0.0}, "delta")]:
        args = {"noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 5, "delta": 1e-5} | kwargs
        with pytest.raises(ParameterError, match=match):
            dpsgd_epsilon(**args)  # type: ignore[arg-type]


def test_ddg_tau_closed_form() -> None:
    assert ddg_tau(1.0, 1) == 0.0
    assert ddg_tau(1.0, 2) == pytest.approx(10 * math.exp(-math.pi**2), rel=1e-12)
    assert ddg_tau(0.7, 4) == pytest.approx(
        10 * sum(math.exp(-2 * math.pi**2 * 0.49 * k / (k + 1)) for k in (1, 2, 3)), rel=1e-12)
    with pytest.raises(DomainError, match="1/2"):
        ddg_tau(0.4, 3)


def test_ddg_single_party_is_the_discrete_gaussian() -> None:
    # n = 1: tau = 0, RDP alpha Δ^2 / (2σ^2): exactly the Gaussian curve, on DDG's integer orders.
    sigma, sens = 8.0, 4.0
    assert ddg_rdp(3.0, local_sigma=sigma, n_parties=1, l2_sensitivity=sens, dim=10) == pytest.approx(3 * 16 / 128)
    accountant = rdp.RdpAccountant(orders=list(DDG_ORDERS))
    accountant.compose(dp_accounting.GaussianDpEvent(sigma / sens), 20)
    ours = ddg_epsilon(local_sigma=sigma, n_parties=1, l2_sensitivity=sens, dim=10, delta=1e-5, steps=20)
    assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-9)


def test_ddg_approaches_the_central_gaussian_and_subsampling_helps() -> None:
    # 10 parties of sigma 100: sum has sigma 316; Δ = 316 gives noise multiplier 1.
    central = dpsgd_epsilon(noise_multiplier=1.0, steps=5, delta=1e-5)
    ddg = ddg_epsilon(local_sigma=100.0, n_parties=10, l2_sensitivity=100 * math.sqrt(10), dim=50, delta=1e-5, steps=5)
    assert central <= ddg <= central * 1.01
    sampled = ddg_epsilon(local_sigma=100.0, n_parties=10, l2_sensitivity=100 * math.sqrt(10), dim=50,
                          delta=1e-5, steps=5, sampling_rate=0.05)
    assert sampled < ddg
    cost = ddg_cost(local_sigma=100.0, n_parties=10, l2_sensitivity=100 * math.sqrt(10), dim=50, delta=1e-5, steps=5)
    assert cost.epsilon == ddg and cost.rho == pytest.approx(5 * 0.5, rel=1e-6)


def test_vpdp() -> None:
    assert party_noise_multiplier(noise_multiplier=2.0, n_parties=2) == pytest.approx(2.0 / math.sqrt(2))
    assert party_noise_multiplier(noise_multiplier=2.0, n_parties=4, colluders=1) == pytest.approx(2.0 / math.sqrt(2))
    assert party_noise_multiplier(noise_multiplier=2.0, n_parties=2, noise="trusted") == 2.0
    with pytest.raises(DomainError, match="coalition"):
        party_noise_multiplier(noise_multiplier=2.0, n_parties=3, colluders=2)
    known = vpdp_epsilon(noise_multiplier=2.0, sampling_rate=0.01, steps=100, delta=1e-5, n_parties=2)
    assert known == pytest.approx(dpsgd_epsilon(noise_multiplier=math.sqrt(2.0), steps=100, delta=1e-5))
    hidden = vpdp_epsilon(noise_multiplier=2.0, sampling_rate=0.01, steps=100, delta=1e-5, n_parties=2,
                          indices_known=False)
    analyst = dpsgd_epsilon(noise_multiplier=2.0, sampling_rate=0.01, steps=100, delta=1e-5)
    assert analyst < hidden < known
    epochs = disjoint_epochs_epsilon(noise_multiplier=2.0, epochs=1, delta=1e-5, n_parties=2)
    assert epochs < known
    with pytest.raises(ParameterError, match="noise"):
        party_noise_multiplier(noise_multiplier=1.0, n_parties=2, noise="somebody")
