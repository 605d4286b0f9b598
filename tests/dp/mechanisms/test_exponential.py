"""Exponential mechanism: exact selection frequencies, validation, cost."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from mpdp.dp import ExponentialMechanism
from mpdp.dp.mechanisms.exponential import select_index
from mpdp.errors import DomainError, ParameterError, PrivacyLeakWarning
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA


def test_selection_frequencies_match_exp_eps_u_over_2() -> None:
    utilities = np.array([0.0, 1.0, 2.0, 2.5, 4.0, -3.0])
    mech = ExponentialMechanism(epsilon=1.2, sensitivity=1.0)
    expected = np.exp(1.2 * utilities / 2)
    expected /= expected.sum()
    assert np.allclose(mech.probabilities(utilities), expected)
    rng = RandomSource.seeded("em")
    n = 6_000  # 6 categories, smallest expected count ~45: the chi-square is well calibrated
    gammas = [(Fraction(4.0) - Fraction(float(u))) * Fraction(1.2) / 2 for u in utilities]
    picks = np.array([select_index(gammas, rng=rng) for _ in range(n)])
    observed = np.bincount(picks, minlength=utilities.size)
    assert stats.chisquare(observed, expected * n).pvalue > ALPHA


def test_monotonic_variant_drops_the_factor_two() -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=2.0, monotonic=True)
    p = mech.probabilities([0.0, 2.0])
    assert p[1] / p[0] == pytest.approx(math.e)
    assert mech.cost.rho == 0.5
    assert ExponentialMechanism(epsilon=1.0, sensitivity=2.0).cost.rho == 0.125


def test_select_returns_an_index_and_warns_when_seeded() -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    with pytest.warns(PrivacyLeakWarning):
        i = mech.select([0.0, 100.0, 0.0], rng=RandomSource.seeded(1))
    assert i == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mech.select([5.0]) == 0


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]], [1.0, math.nan], [math.inf, 0.0]])
def test_bad_utilities(bad: object) -> None:
    with pytest.raises(DomainError, match="utilities"):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0).select(bad)


def test_bad_parameters() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        ExponentialMechanism(epsilon=0.0, sensitivity=1.0)
    with pytest.raises(ParameterError, match="monotonic"):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0, monotonic="yes")  # type: ignore[arg-type]
