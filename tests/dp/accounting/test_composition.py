"""compose(): basic sums, zCDP/RDP/PLD against dp-accounting, mixed releases, validation; PrivacyCost."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from mpdp.dp.accounting import PrivacyCost, compose, zcdp_epsilon
from mpdp.errors import ParameterError

GAUSS = PrivacyCost(epsilon=2.0, delta=1e-6, rho=1 / 8, mechanism="gaussian", noise_multiplier=2.0)
LAPLACE = PrivacyCost(epsilon=0.5, rho=0.125, mechanism="laplace", noise_multiplier=2.0)
APPROX = PrivacyCost(epsilon=0.3, delta=1e-7)


def test_basic_sums_with_counts() -> None:
    spent = compose([GAUSS, LAPLACE, PrivacyCost(epsilon=0.1, count=3)], method="basic")
    assert spent.epsilon == pytest.approx(2.8) and spent.delta == 1e-6 and spent.method == "basic"
    assert compose([], delta=1e-5).epsilon == 0.0


def test_rdp_matches_dp_accounting_and_takes_approximate_releases_out_of_delta() -> None:
    costs = [PrivacyCost(epsilon=math.inf, mechanism="gaussian", noise_multiplier=2.0, count=40),
             PrivacyCost(epsilon=math.inf, mechanism="laplace", noise_multiplier=3.0, sampling_rate=0.1, count=7),
             APPROX]
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(2.0), 40)
    accountant.compose(dp_accounting.LaplaceDpEvent(3.0), 7)  # no subsampled-Laplace RDP: charged unsampled
    expected = 0.3 + accountant.get_epsilon(1e-5 - 1e-7)
    assert compose(costs, delta=1e-5, method="rdp").epsilon == pytest.approx(expected, rel=1e-12)


def test_zcdp_sums_rho() -> None:
    costs = [PrivacyCost(epsilon=math.inf, mechanism="gaussian", noise_multiplier=3.0, count=10),
             PrivacyCost(epsilon=1.0, rho=0.5, mechanism="laplace")]
    rho = 10 / 18 + 0.5
    assert compose(costs, delta=1e-6, method="zcdp").epsilon == pytest.approx(zcdp_epsilon(rho, 1e-6), rel=1e-9)


def test_every_method_is_at_most_basic() -> None:
    costs = [LAPLACE]  # one pure release: basic (0.5) beats any conversion at delta = 1e-6
    for method in ("zcdp", "rdp", "pld"):
        assert compose(costs, delta=1e-6, method=method).epsilon <= 0.5


def test_pld_is_tightest_on_many_laplace_steps() -> None:
    costs = [PrivacyCost(epsilon=0.1, rho=0.005, mechanism="laplace", noise_multiplier=10.0, count=200)]
    basic = compose(costs, method="basic").epsilon
    rdp_eps = compose(costs, delta=1e-5, method="rdp").epsilon
    pld_eps = compose(costs, delta=1e-5, method="pld").epsilon
    assert pld_eps < rdp_eps < basic == pytest.approx(20.0)


def test_validation() -> None:
    with pytest.raises(ParameterError, match="method"):
        compose([GAUSS], delta=1e-5, method="advanced")
    with pytest.raises(ParameterError, match="delta"):
        compose([GAUSS], method="rdp")
    with pytest.raises(ParameterError, match="PrivacyCost"):
        compose([1.0], method="basic")  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"epsilon": -1.0}, "epsilon"), ({"epsilon": math.nan}, "epsilon"), ({"epsilon": 1.0, "delta": 1.0}, "delta"),
     ({"epsilon": 1.0, "rho": -0.1}, "rho"), ({"epsilon": 1.0, "noise_multiplier": 0.0}, "noise_multiplier"),
     ({"epsilon": 1.0, "sampling_rate": 0.0}, "sampling_rate"), ({"epsilon": 1.0, "count": 0}, "count"),
     ({"epsilon": 1.0, "mechanism": ""}, "mechanism")],
)
def test_cost_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        PrivacyCost(**kwargs)  # type: ignore[arg-type]


def test_cost_round_trip() -> None:
    for cost in (GAUSS, PrivacyCost(epsilon=math.inf, mechanism="gaussian", noise_multiplier=1.0)):
        assert PrivacyCost.from_dict(cost.to_dict()) == cost
    with pytest.raises(ParameterError, match="unknown"):
        PrivacyCost.from_dict({"epsilon": 1.0, "colour": "red"})
