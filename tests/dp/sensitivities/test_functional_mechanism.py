"""Sensitivities of the functional mechanism (paper 000, Lemma 1, Lemma 2, Theorem 2, Corollary 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.dp.sensitivities import functional_mechanism as fm
from mpdp.errors import ParameterError

dims = st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=5)


@pytest.mark.parametrize("d", [0, 1, 2, 3, 14, 41, 800])
def test_closed_forms_match_paper(d: int) -> None:
    assert fm.linear_regression_sensitivity(d) == 2 * (1 + 2 * d + d**2)
    assert fm.logistic_regression_sensitivity(d) == d**2 / 4 + d


@given(dims, st.data())
def test_block_decomposition_sums_to_global(parts: list[int], data: st.DataObject) -> None:
    label = data.draw(st.integers(0, len(parts) - 1))
    d = sum(parts)
    assert fm.global_sensitivity("linear", parts, label) == pytest.approx(fm.linear_regression_sensitivity(d))
    assert fm.global_sensitivity("logistic", parts, label) == pytest.approx(fm.logistic_regression_sensitivity(d))
    for objective in ("linear", "logistic"):
        total = fm.global_sensitivity(objective, parts, label)
        groups = sum(fm.single_party_sensitivity(objective, parts, label, k) for k in range(len(parts)))
        groups += sum(fm.cross_party_sensitivity(objective, parts, label, k, j)
                      for k, j in itertools.combinations(range(len(parts)), 2))
        assert groups == pytest.approx(total)  # g and h partition the coefficients (Equation 5)
        for k in range(len(parts)):
            assert 0 < fm.party_sensitivity(objective, parts, label, k) <= total + 1e-9


@given(dims, st.data())
def test_logistic_party_sensitivity_matches_paper(parts: list[int], data: st.DataObject) -> None:
    label = data.draw(st.integers(0, len(parts) - 1))
    d = sum(parts)
    for k, dk in enumerate(parts):
        assert fm.party_sensitivity("logistic", parts, label, k) == pytest.approx(
            fm.paper_logistic_party_sensitivity(dk, d, k == label))


def test_paper_linear_party_formula_as_printed() -> None:
    # Theorem 2's worked example: Delta_f^1 = 2(1 + 2d + d^1 d), Delta_f^k = 2(2d^k + d^k d).
    assert fm.paper_linear_party_sensitivity(2, 5, True) == 2 * (1 + 10 + 10)
    assert fm.paper_linear_party_sensitivity(3, 5, False) == 2 * (6 + 15)
    # The sound values add the second copy of each cross-party quadratic coefficient.
    assert fm.party_sensitivity("linear", [2, 3], 0, 0) == 2 * (1 + 10 + 2 * (10 - 2))
    assert fm.party_sensitivity("linear", [2, 3], 0, 1) == 2 * (6 + 3 * (10 - 3))
    # K = 1: the party's sensitivity is the global one, in both forms.
    assert fm.party_sensitivity("linear", [7], 0, 0) == fm.linear_regression_sensitivity(7)
    assert fm.paper_linear_party_sensitivity(7, 7, True) == fm.linear_regression_sensitivity(7)


def _linear_coefficients(x: np.ndarray, y: float) -> np.ndarray:
    """One record's monomial coefficients of (y - x.w)^2: const, linear, upper-triangular quadratic."""
    quad = np.outer(x, x)
    iu = np.triu_indices(len(x))
    mono = np.where(iu[0] == iu[1], 1.0, 2.0) * quad[iu]
    return np.concatenate([[y * y], -2 * y * x, mono])


def test_paper_linear_party_formula_is_exceeded_sound_one_is_not() -> None:
    # d = 3, one column per party, label at party 0. Party 1 changes its value in one record.
    worst = 0.0
    for x0, x2, y, a, b in itertools.product([-1.0, 1.0], [-1.0, 1.0], [-1.0, 1.0], [-1.0, 0.0, 1.0],
                                             [-1.0, 0.0, 1.0]):
        before = _linear_coefficients(np.array([x0, a, x2]), y)
        after = _linear_coefficients(np.array([x0, b, x2]), y)
        worst = max(worst, float(np.abs(before - after).sum()))
    assert worst == 12.0
    assert fm.paper_linear_party_sensitivity(1, 3, False) == 10.0 < worst
    assert fm.party_sensitivity("linear", [1, 1, 1], 0, 1) >= worst


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_lemma1_bounds_random_neighbours(parts: list[int], data: st.DataObject) -> None:
    d = sum(parts)
    vals = st.floats(-1, 1, allow_nan=False)
    x = np.array(data.draw(st.lists(vals, min_size=d, max_size=d)))
    x2 = np.array(data.draw(st.lists(vals, min_size=d, max_size=d)))
    y, y2 = data.draw(vals), data.draw(vals)
    change = np.abs(_linear_coefficients(x, y) - _linear_coefficients(x2, y2)).sum()
    assert change <= fm.linear_regression_sensitivity(d) + 1e-9
    # Only party 0's columns change: bounded by its own Delta_f^0.
    x3 = x.copy()
    x3[: parts[0]] = x2[: parts[0]]
    change = np.abs(_linear_coefficients(x, y) - _linear_coefficients(x3, y)).sum()
    assert change <= fm.party_sensitivity("linear", parts, len(parts) - 1, 0) + 1e-9


def test_row_l1_bounds_shrink_sensitivity() -> None:
    # A one-hot group of width 5 has L1 norm 1: c_k = 1 instead of 5.
    assert fm.global_sensitivity("logistic", [1.0], 0) == fm.logistic_regression_sensitivity(1)
    assert fm.global_sensitivity("logistic", [1.0, 2.0], 0) == pytest.approx(3 + 9 / 4)


def test_top_down_party_epsilons_theorem2() -> None:
    eps = fm.top_down_party_epsilons("linear", [3, 3], 0, 1.0)
    total = fm.linear_regression_sensitivity(6)
    assert eps == pytest.approx((fm.party_sensitivity("linear", [3, 3], 0, 0) / total,
                                 fm.party_sensitivity("linear", [3, 3], 0, 1) / total))
    assert all(0 < e <= 1.0 for e in eps)
    assert eps[0] > eps[1]  # sharing the label costs the label holder extra sensitivity


def test_bottom_up_composition_and_corollary1() -> None:
    single, cross = [0.2, 0.3], {(0, 1): 0.5}
    assert fm.bottom_up_epsilon(single, cross) == pytest.approx(1.0)
    assert fm.bottom_up_party_epsilons(single, cross) == pytest.approx((0.7, 0.8))
    corollary = fm.corollary1_epsilon("linear", [2, 3], 0, single, cross)
    assert corollary > fm.bottom_up_epsilon(single, cross)  # the printed corollary over-reports
    # One party: both reduce to that party's budget.
    assert fm.corollary1_epsilon("linear", [4], 0, [0.7], {}) == pytest.approx(0.7)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_refused(bad: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        fm.top_down_party_epsilons("linear", [2, 3], 0, bad)
    with pytest.raises(ParameterError, match="epsilon"):
        fm.bottom_up_epsilon([bad], {})


def test_bad_arguments_refused() -> None:
    with pytest.raises(ParameterError, match="objective"):
        fm.global_sensitivity("poisson", [2], 0)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="label_party"):
        fm.global_sensitivity("linear", [2, 3], 2)
    with pytest.raises(ParameterError, match="party_l1"):
        fm.global_sensitivity("linear", [2, -1], 0)
    with pytest.raises(ParameterError, match="d"):
        fm.linear_regression_sensitivity(-3)
    with pytest.raises(ParameterError, match="pair"):
        fm.bottom_up_epsilon([1.0, 1.0], {(0, 1): 1.0, (1, 0): 1.0})
