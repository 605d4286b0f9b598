"""zCDP closed forms and conversions, against the formulas and dp-accounting (agreement to 1e-9)."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from hypothesis import assume, given
from hypothesis import strategies as st

from mpdp.dp.accounting import compose_rho, gaussian_zcdp, pure_dp_to_zcdp, zcdp_epsilon, zcdp_rho_for
from mpdp.dp.accounting.zcdp import zcdp_epsilon_at_order
from mpdp.errors import ParameterError

rhos = st.floats(min_value=1e-6, max_value=50)
deltas = st.floats(min_value=1e-12, max_value=0.1)


def test_closed_forms() -> None:
    assert gaussian_zcdp(sensitivity=2.0, sigma=4.0) == 2.0**2 / (2 * 4.0**2)
    assert pure_dp_to_zcdp(0.5) == 0.125
    assert compose_rho(0.1, 0.2, 0.3) == pytest.approx(0.6, abs=1e-15)
    rho, delta = 0.3, 1e-6
    assert zcdp_epsilon(rho, delta, conversion="bun_steinke") == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-12
    )


@given(rhos, deltas)
def test_tight_conversion_matches_dp_accounting_on_its_orders(rho: float, delta: float) -> None:
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    theirs = accountant.get_epsilon(delta)
    ours_on_grid = max(min(zcdp_epsilon_at_order(rho, delta, a) for a in rdp.DEFAULT_RDP_ORDERS if a > 1), 0.0)
    assert ours_on_grid == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    tight = zcdp_epsilon(rho, delta)
    assert tight <= theirs + 1e-12  # continuous optimisation over orders is at least as good
    assert tight <= zcdp_epsilon(rho, delta, conversion="bun_steinke") + 1e-12
    assert tight >= 0


@given(rhos, deltas)
def test_rho_for_inverts_the_conversion(rho: float, delta: float) -> None:
    eps = zcdp_epsilon(rho, delta)
    assume(eps > 1e-6)  # at eps = 0 the inverse is not unique
    back = zcdp_rho_for(epsilon=eps, delta=delta)
    assert back == pytest.approx(rho, rel=1e-9)
    assert zcdp_epsilon(back, delta) <= eps


def test_gaussian_composition_in_zcdp_is_exact_gaussian_rdp() -> None:
    # T Gaussian steps of noise multiplier z: RDP alpha T / (2 z^2) = alpha rho. dp-accounting on the same orders.
    z, steps, delta = 3.0, 50, 1e-5
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(z), steps)
    rho = steps * gaussian_zcdp(sensitivity=1.0, sigma=z)
    on_grid = min(zcdp_epsilon_at_order(rho, delta, a) for a in rdp.DEFAULT_RDP_ORDERS if a > 1)
    assert on_grid == pytest.approx(accountant.get_epsilon(delta), rel=1e-9)


@pytest.mark.parametrize(("rho", "delta", "match"), [(-1, 1e-5, "rho"), (math.nan, 1e-5, "rho"),
                                                     (0.1, 0, "delta"), (0.1, 1, "delta")])
def test_bad_inputs(rho: float, delta: float, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        zcdp_epsilon(rho, delta)


def test_zero_rho_and_bad_conversion() -> None:
    assert zcdp_epsilon(0.0, 1e-5) == 0.0
    with pytest.raises(ParameterError, match="conversion"):
        zcdp_epsilon(0.1, 1e-5, conversion="loose")
    with pytest.raises(ParameterError, match="alpha"):
        zcdp_epsilon_at_order(0.1, 1e-5, 1.0)
