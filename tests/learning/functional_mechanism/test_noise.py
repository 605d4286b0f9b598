"""The FM plan, grid-exact Laplace noise on every monomial, and partition-independent noise streams."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from mpdp.dp.sensitivities import functional_mechanism as sens
from mpdp.errors import ParameterError, ShapeMismatchError
from mpdp.learning.functional_mechanism.noise import (
    FMPlan,
    PartyNoise,
    add_noise,
    assemble_release,
    local_units,
    monomial_mask,
)
from mpdp.learning.functional_mechanism.objective import ColumnPartition, exact_objective
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _release(plan: FMPlan, X: np.ndarray, y: np.ndarray, noise_seed: int) -> np.ndarray:
    """Every party releases its blocks computed in the clear (the shares of a party-local block are exact)."""
    exact = exact_objective(plan.objective, X, y)
    part = plan.partition
    totals = {}
    for block in plan.groups:
        if block[0] == "const":
            value = np.asarray(exact.constant)
        elif block[0] == "lin":
            value = exact.linear[list(part.columns[block[1]])]
        else:
            value = exact.quad[np.ix_(list(part.columns[block[1]]), list(part.columns[block[2]]))]
        for k in part.involved(block):  # the first involved party holds the value, the others a zero share
            share = value if k == min(part.involved(block)) else np.zeros_like(value)
            units = add_noise(plan, k, block, local_units(plan, block, share),
                              PartyNoise(plan, RandomSource.seeded(noise_seed)))
            totals[block] = totals.get(block, np.zeros(units.shape, dtype=np.uint64)) + units
    return assemble_release(plan, totals).monomials()


def test_same_noise_for_every_partition() -> None:
    rng = RandomSource.seeded(3)
    X = 2 * rng.random((30, 7)) - 1
    y = 2 * rng.random(30) - 1
    central = _release(FMPlan("linear", ColumnPartition((tuple(range(7)),)), epsilon=1.0), X, y, 11)
    for cols, label in [(((0, 1, 2), (3, 4, 5, 6)), 0), (((5, 0), (1, 6), (2, 3, 4)), 2), (((), tuple(range(7))), 0)]:
        part = ColumnPartition(cols, label)
        plan = FMPlan("linear", part, epsilon=1.0)
        np.testing.assert_allclose(_release(plan, X, y, 11), central, rtol=0, atol=1e-6)
    assert not np.allclose(_release(FMPlan("linear", ColumnPartition((tuple(range(7)),)), epsilon=1.0), X, y, 12),
                           central, atol=1.0)


def test_each_monomial_noised_exactly_once() -> None:
    part = ColumnPartition(((4, 0), (1, 3), (2,)), 1)
    plan = FMPlan("logistic", part, epsilon=1.0)
    count = np.zeros((5, 5), dtype=int)
    lin = np.zeros(5, dtype=int)
    for block in plan.groups:
        for k in range(3):
            mask = monomial_mask(part, block, k)
            if block[0] == "quad":
                rows, cols = part.columns[block[1]], part.columns[block[2]]
                for i, a in enumerate(rows):
                    for j, b in enumerate(cols):
                        count[min(a, b), max(a, b)] += int(mask[i, j])
            elif block[0] == "lin":
                lin[list(part.columns[block[1]])] += mask.astype(int)
    assert np.array_equal(count, np.triu(np.ones((5, 5), dtype=int))) and np.all(lin == 1)


def test_released_coefficients_carry_laplace_noise() -> None:
    """KS test of (released - exact) / (Delta/eps) against Laplace(0, 1); false-failure rate 1e-3."""
    d = 6
    plan = FMPlan("logistic", ColumnPartition(((0, 1, 2), (3, 4, 5)), 0), epsilon=0.5)
    delta = sens.logistic_regression_sensitivity(d)
    group = plan.unique_groups[0]
    assert group.sensitivity == delta and group.scale == pytest.approx(delta / 0.5, rel=1e-9)
    rng = RandomSource.seeded(5)
    X = 2 * rng.random((20, d)) - 1
    y = rng.bits(20).astype(float)
    exact = exact_objective("logistic", X, y).monomials()[1:]
    samples = np.concatenate([(_release(plan, X, y, seed)[1:] - exact) / (delta / 0.5) for seed in range(40)])
    assert stats.kstest(samples, "laplace").pvalue > 1e-3
    assert abs(np.var(samples) - 2.0) < 0.4


def test_plan_budgets_and_wire_round_trip() -> None:
    part = ColumnPartition(((0, 1, 2), (3, 4)), 0)
    top = FMPlan("linear", part, epsilon=2.0)
    assert top.total_epsilon == 2.0
    assert top.per_party_epsilon() == pytest.approx(sens.top_down_party_epsilons("linear", (3, 2), 0, 2.0))
    assert FMPlan.from_wire(top.to_wire()).groups.keys() == top.groups.keys()
    bottom = FMPlan("linear", part, bottom_up={"single": (0.3, 0.2), "cross": {(1, 0): 0.5}})
    assert bottom.total_epsilon == pytest.approx(1.0)
    assert bottom.per_party_epsilon() == pytest.approx((0.8, 0.7))
    assert {g.name for g in bottom.unique_groups} == {"g/0", "g/1", "h/0/1"}
    assert FMPlan.from_wire(bottom.to_wire()).total_epsilon == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="exactly one"):
        FMPlan("linear", part)
    with pytest.raises(ParameterError, match="epsilon"):
        FMPlan("linear", part, epsilon=0.0)
    with pytest.raises(ParameterError, match="pair"):
        FMPlan("linear", part, bottom_up={"single": (0.3, 0.2), "cross": {}})
    with pytest.raises(ParameterError, match="party_l1"):
        FMPlan("linear", part, party_l1=(4.0, 1.0), epsilon=1.0)
    with pytest.raises(ShapeMismatchError):
        FMPlan("linear", part, party_l1=(1.0,), epsilon=1.0)


def test_seeded_noise_warns() -> None:
    plan = FMPlan("logistic", ColumnPartition(((0, 1),)), epsilon=1.0)
    with warnings.catch_warnings(record=True):
        units = add_noise(plan, 0, ("lin", 0), local_units(plan, ("lin", 0), np.zeros(2)),
                          PartyNoise(plan, RandomSource.seeded(1)))
    assert units.dtype == np.uint64 and units.shape == (2,)
