"""Paper 001's sensitivities: values, the Jacobian term, the per-degree budget split, bad input."""

from __future__ import annotations

import math

import pytest

from mpdp.dp.sensitivities.ofpa_ofaa import (
    ofaa_degree_sensitivities,
    ofaa_laplace_scale,
    ofpa_l1_sensitivity,
    ofpa_plan,
    output_l1_sensitivity,
    unit_ball_row_l1,
)
from mpdp.errors import ParameterError


def test_row_l1_bounds() -> None:
    assert unit_ball_row_l1(16) == 4.0
    # Adult: 14 attributes -> B = sqrt(14); [x/B, 1]/sqrt(2) has l1 <= (sqrt(14) + 1)/sqrt(2)
    assert unit_ball_row_l1(105, math.sqrt(14)) == pytest.approx((math.sqrt(14) + 1) / math.sqrt(2))
    assert unit_ball_row_l1(4, 100.0) == 2.0  # never looser than sqrt(D)


def test_ofpa_is_twice_row_l1_not_the_papers_four() -> None:
    assert ofpa_l1_sensitivity(3.0) == 6.0


def test_ofpa_plan_pays_the_jacobian() -> None:
    plan = ofpa_plan(0.8, 10_000, 1e-3, 2.0)
    assert plan.lam == 1e-3
    assert plan.eps_jacobian == pytest.approx(2 * math.log1p(0.25 / 10.0))
    assert plan.eps_jacobian + plan.eps_noise == pytest.approx(0.8)
    assert plan.scale == pytest.approx(4.0 / plan.eps_noise)


def test_ofpa_plan_raises_the_regulariser_when_needed() -> None:
    plan = ofpa_plan(0.1, 100, 1e-6, 1.0)
    assert plan.lam == pytest.approx(0.25 / (100 * math.expm1(0.025)))
    assert plan.eps_jacobian == pytest.approx(0.05)
    assert plan.eps_noise == pytest.approx(0.05)


def test_output_and_ofaa() -> None:
    assert output_l1_sensitivity(100, 0.1, 4) == pytest.approx(2 * 2 / (100 * 0.1))
    assert ofaa_degree_sensitivities(2.0) == (2.0, 1.0)
    scale, (e1, e2) = ofaa_laplace_scale(0.6, 2.0)
    assert scale == pytest.approx(3.0 / 0.6)
    assert e1 + e2 == pytest.approx(0.6)
    assert e1 == pytest.approx(0.4)  # budget proportional to sensitivity: equal scales 2/0.4 == 1/0.2


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(eps: float) -> None:
    with pytest.raises(ParameterError):
        ofpa_plan(eps, 100, 1e-3, 1.0)
    with pytest.raises(ParameterError):
        ofaa_laplace_scale(eps, 1.0)


def test_bad_counts() -> None:
    with pytest.raises(ParameterError):
        ofpa_plan(1.0, 0, 1e-3, 1.0)
    with pytest.raises(ParameterError):
        output_l1_sensitivity(10, 0.0, 3)
