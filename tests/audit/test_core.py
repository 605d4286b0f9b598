"""The audit's statistics: Clopper-Pearson bounds, validity of the epsilon bound, and its typed refusals."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from mpdp.audit import audit, clopper_pearson, epsilon_lower_bound, minimum_samples
from mpdp.audit.core import best_possible_bound
from mpdp.audit.neighbours import check_add_remove, check_neighbours, check_query_distance, check_replace
from mpdp.dp.samplers import discrete_laplace
from mpdp.errors import DomainError, ParameterError
from mpdp.randomness import RandomSource


def test_clopper_pearson_matches_closed_forms() -> None:
    lo, hi = clopper_pearson(np.array([0, 10]), 10, 0.05)
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - 0.05 ** (1 / 10))  # k = 0: 1 - alpha^(1/n)
    assert lo[1] == pytest.approx(0.05 ** (1 / 10))  # k = n: alpha^(1/n)


def test_bound_is_zero_without_evidence_and_grows_with_it() -> None:
    bounds = epsilon_lower_bound(np.array([50, 500, 900]), np.array([50, 100, 10]), 1000, delta=0.0, alpha=0.05)
    assert bounds[0] == 0.0
    assert 0 < bounds[1] < math.log(5) < bounds[2] < math.log(90)


def test_delta_lowers_the_bound() -> None:
    plain = epsilon_lower_bound(300, 30, 1000, delta=0.0, alpha=0.05)
    approx = epsilon_lower_bound(300, 30, 1000, delta=0.1, alpha=0.05)
    assert approx < plain


def _laplace(scale: Fraction) -> Any:
    def sampler(data: Any, n: int, rng: RandomSource) -> Any:
        return int(np.sum(data)) + np.asarray(discrete_laplace(scale, n, rng=rng))

    return sampler


def test_bound_exceeds_the_true_epsilon_rarely() -> None:
    # true epsilon = 1 (discrete Laplace of scale 1 on a count); the bound holds with probability >= 0.95 per
    # audit, so P(more than 6 of 40 audits exceed 1) <= P(Binomial(40, 0.05) >= 7) < 0.004 (for any seed).
    d0, d1 = np.ones((3, 1)), np.ones((2, 1))
    exceed = sum(
        audit(_laplace(Fraction(1)), d0, d1, claimed_epsilon=1.0, samples=4_000, rng=RandomSource.seeded(i),
              score=lambda x: x[:, 0]).lower_bound > 1.0
        for i in range(40))
    assert exceed <= 6


def test_generic_projection_finds_the_event_for_vectors() -> None:
    def sampler(data: Any, n: int, rng: RandomSource) -> Any:
        shift = np.array([float(np.sum(data)), 0.0, 0.0])
        return shift + np.asarray(discrete_laplace(Fraction(1, 2), (n, 3), rng=rng))

    result = audit(sampler, np.ones((3, 1)), np.ones((2, 1)), claimed_epsilon=1.0, samples=20_000,
                   rng=RandomSource.seeded("vec"))
    assert 1.0 < result.lower_bound <= 2.0 and result.flagged  # true epsilon 2


def test_too_few_samples_is_a_typed_error_naming_the_minimum() -> None:
    need = minimum_samples(1.0, delta=0.0, confidence=0.95)
    assert best_possible_bound(need // 2, delta=0.0, confidence=0.95) > 1.0
    assert best_possible_bound(need // 2 - 1, delta=0.0, confidence=0.95) <= 1.0
    with pytest.raises(ParameterError, match=f"samples >= {need}"):
        audit(_laplace(Fraction(1)), [[1]], [], claimed_epsilon=1.0, samples=need - 2)
    audit(_laplace(Fraction(1)), [[1]], [], claimed_epsilon=1.0, samples=need, rng=RandomSource.seeded(0))


@pytest.mark.parametrize("kwargs", [{"claimed_epsilon": 0.0}, {"claimed_epsilon": 1.0, "delta": 1.0},
                                    {"claimed_epsilon": 1.0, "confidence": 1.0},
                                    {"claimed_epsilon": 1.0, "samples": 2.5}])
def test_bad_parameters_are_typed(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ParameterError):
        audit(_laplace(Fraction(1)), [[1]], [], **kwargs)


def test_sampler_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ParameterError, match="first axis"):
        audit(lambda d, n, r: np.zeros(n - 1), [[1]], [], claimed_epsilon=1.0, samples=1000)


def test_neighbour_checks() -> None:
    d = np.array([[1.0, 2.0], [3.0, 4.0]])
    check_add_remove(d, d[:1])
    check_add_remove(d[1:], d)
    check_replace(d, np.array([[1.0, 2.0], [3.0, 5.0]]))
    check_neighbours(d, d[:1], "add_remove")
    with pytest.raises(DomainError, match="differing by exactly one"):
        check_add_remove(d, d[:0])
    with pytest.raises(DomainError, match="more than one record"):
        check_add_remove(d, np.array([[9.0, 9.0]]))
    with pytest.raises(DomainError, match="exactly 1"):
        check_replace(d, d + 1)
    with pytest.raises(DomainError, match="equal shapes"):
        check_replace(d, d[:1])
    with pytest.raises(DomainError, match="sensitivity"):
        check_query_distance(3, 1, 1.0)
    with pytest.raises(DomainError, match="relation"):
        check_neighbours(d, d, "bounded")
