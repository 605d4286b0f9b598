"""Paper 001's sensitivities: values, the Jacobian term, the per-degree budget split, soundness on adversarial
rows of a one-hot schema, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest

from mpdp.dp.sensitivities.ofpa_ofaa import (
    intercept_weight,
    ofaa_budget,
    ofaa_degree_sensitivities,
    ofpa_l1_sensitivity,
    ofpa_plan,
    output_l1_sensitivity,
    unit_ball_row_l1,
)
from mpdp.errors import ParameterError
from mpdp.learning.ofpa_ofaa.model import prepare_rows
from mpdp.learning.ofpa_ofaa.parties import fixed_quadratic_mask
from mpdp.randomness import RandomSource

FloatArray = npt.NDArray[np.float64]


def test_row_l1_bounds() -> None:
    assert unit_ball_row_l1(16) == 4.0
    # Adult: 14 attributes -> B = sqrt(14); [x, 1]/sqrt(15) has l1 <= 15/sqrt(15) = sqrt(15), not sqrt(106)
    assert unit_ball_row_l1(106, math.sqrt(14)) == pytest.approx(math.sqrt(15))
    assert unit_ball_row_l1(4, 100.0) == 2.0  # never looser than sqrt(D)
    assert intercept_weight(math.sqrt(14)) == pytest.approx(1 / math.sqrt(15))


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


def test_output_and_ofaa_degrees() -> None:
    assert output_l1_sensitivity(100, 0.1, 4) == pytest.approx(2 * 2 / (100 * 0.1))
    assert ofaa_degree_sensitivities(2.0) == (2.0, 1.0)
    # the intercept's square is the same for every record: it leaves the degree-2 sensitivity
    assert ofaa_degree_sensitivities(2.0, 0.5) == (2.0, pytest.approx((4.0 - 0.25) / 4))


def test_ofaa_budget_minimises_the_noise_variance() -> None:
    b = ofaa_budget(0.8, 3.0, 0.25, 100, 4000)
    d1, d2 = ofaa_degree_sensitivities(3.0, 0.25)
    assert b.eps_linear + b.eps_quadratic == pytest.approx(0.8)
    assert b.scale_linear == pytest.approx(d1 / b.eps_linear)
    assert b.scale_quadratic == pytest.approx(d2 / b.eps_quadratic)

    def variance(e1: float) -> float:
        return 100 * (d1 / e1) ** 2 + 4000 * (d2 / (0.8 - e1)) ** 2

    # the Lagrange split beats every other split on a fine grid
    best = variance(b.eps_linear)
    assert all(best <= variance(e) + 1e-9 for e in np.linspace(0.01, 0.79, 400))
    # eps_j proportional to (m_j Delta_j^2)^(1/3)
    ratio = (100 * d1**2 / (4000 * d2**2)) ** (1 / 3)
    assert b.eps_linear / b.eps_quadratic == pytest.approx(ratio)
    # nothing data dependent of degree 2: everything goes to degree 1
    only = ofaa_budget(0.8, 1.0, 1.0, 1, 0)
    assert only.eps_linear == 0.8 and only.scale_quadratic == 0.0


# -- soundness: the bounds are suprema over the declared domain, checked on adversarial rows ------------------

NUMERIC = 3
BLOCKS = (4, 2, 5)  # one-hot blocks of three categorical attributes


def _schema() -> tuple[int, float, tuple[tuple[int, ...], ...]]:
    d_raw = NUMERIC + sum(BLOCKS)
    blocks, start = [], NUMERIC
    for k in BLOCKS:
        blocks.append(tuple(range(start, start + k)))
        start += k
    return d_raw, math.sqrt(NUMERIC + len(BLOCKS)), tuple(blocks)


def _adversarial_rows(rng: RandomSource, count: int) -> FloatArray:
    """Raw rows of the domain at its extremes: numeric entries +-1 (every sign pattern) or random in [-1, 1],
    one category per block (every one-hot pattern of the first two blocks)."""
    d_raw, _, blocks = _schema()
    rows = []
    for signs in itertools.product((-1.0, 1.0), repeat=NUMERIC):
        for cats in itertools.product(range(BLOCKS[0]), range(BLOCKS[1])):
            row = np.zeros(d_raw)
            row[:NUMERIC] = signs
            row[blocks[0][cats[0]]] = 1.0
            row[blocks[1][cats[1]]] = 1.0
            row[blocks[2][len(rows) % BLOCKS[2]]] = 1.0
            rows.append(row)
    extra = rng.random((count, d_raw))
    for row in extra:
        row[:NUMERIC] = 2.0 * row[:NUMERIC] - 1.0
        row[NUMERIC:] = 0.0
        for block in blocks:
            row[block[int(rng.below(len(block), 1)[0])]] = 1.0
    return np.vstack([np.array(rows), extra])


def _stats(x: FloatArray, y: float, fixed: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
    """One record's contribution to OFAA's released coefficients: degree 1 and the noisy degree 2."""
    iu = np.triu_indices(x.size)
    outer = np.outer(x, x) / 8.0
    coef = np.where(iu[0] == iu[1], outer[iu], 2.0 * outer[iu])
    return -0.5 * y * x, coef[~fixed]


def test_bounds_hold_on_adversarial_rows() -> None:
    rng = RandomSource.seeded(1)
    _, bound, blocks = _schema()
    X = prepare_rows(_adversarial_rows(rng, 200), bound)
    dim = X.shape[1]
    row_l1 = unit_ball_row_l1(dim, bound)
    h = intercept_weight(bound)
    fixed = fixed_quadratic_mask(dim, blocks, dim - 1)
    d1, d2 = ofaa_degree_sensitivities(row_l1, h)
    l1 = np.abs(X).sum(axis=1)
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
    assert np.all(l1 <= row_l1 + 1e-12)
    assert l1.max() == pytest.approx(row_l1)  # attained by the +-1 rows: the bound is tight
    stats = [_stats(x, y, fixed) for x in X for y in (-1.0, 1.0)]
    lin = np.array([s[0] for s in stats])
    quad = np.array([s[1] for s in stats])
    pairs = rng.integers(0, len(stats), (5000, 2))
    pairs = np.vstack([pairs, [[0, 1], [0, len(stats) - 1]]])  # the same row with both labels; two extremes
    lin_gap = np.abs(lin[pairs[:, 0]] - lin[pairs[:, 1]]).sum(axis=1)
    quad_gap = np.abs(quad[pairs[:, 0]] - quad[pairs[:, 1]]).sum(axis=1)
    assert lin_gap.max() <= d1 + 1e-12
    assert quad_gap.max() <= d2 + 1e-12
    assert lin_gap.max() >= 0.9 * d1  # and nearly reached, so a loose (useless) bound would show
    # the fixed coefficients really are the same for every row
    iu = np.triu_indices(dim)
    fixed_values = np.array([np.outer(x, x)[iu][fixed] for x in X])
    assert np.all(fixed_values == fixed_values[0])
    # OFPA: each record's gradient term is s y x with |s| < 1; replacement moves the sum by < 2 row_l1
    s = rng.random(len(X))
    grads = (s * np.where(rng.random(len(X)) < 0.5, -1.0, 1.0))[:, None] * X
    gaps = np.abs(grads[pairs[:, 0] % len(X)] - grads[pairs[:, 1] % len(X)]).sum(axis=1)
    assert gaps.max() <= ofpa_l1_sensitivity(row_l1)


def test_fixed_mask_marks_within_block_products_and_the_intercept() -> None:
    fixed = fixed_quadratic_mask(5, ((1, 2, 3),), 4)
    iu, ju = np.triu_indices(5)
    marked = {(int(a), int(b)) for a, b, f in zip(iu, ju, fixed, strict=True) if f}
    assert marked == {(1, 2), (1, 3), (2, 3), (4, 4)}
    with pytest.raises(Exception, match="disjoint"):
        fixed_quadratic_mask(5, ((1, 2), (2, 3)), 4)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(eps: float) -> None:
    with pytest.raises(ParameterError):
        ofpa_plan(eps, 100, 1e-3, 1.0)
    with pytest.raises(ParameterError):
        ofaa_budget(eps, 1.0, 0.1, 3, 6)


def test_bad_counts() -> None:
    with pytest.raises(ParameterError):
        ofpa_plan(1.0, 0, 1e-3, 1.0)
    with pytest.raises(ParameterError):
        output_l1_sensitivity(10, 0.0, 3)
    with pytest.raises(ParameterError, match="intercept"):
        ofaa_degree_sensitivities(1.0, 2.0)
    with pytest.raises(ParameterError):
        ofaa_budget(1.0, 1.0, 0.1, 3, -1)
