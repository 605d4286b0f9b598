"""Releases are exact at the ends of int64 and at any epsilon > 0; non-numbers are refused (issue 42).

A wrapped release (``2^63 - 1`` plus positive noise read as a value near ``-2^63``) would show on which side
of the input the noise fell, which breaks the DP guarantee itself; these properties pin that a release is
``x + noise`` computed on exact integers, and that tiny epsilons are sampled (on Python integers) or refused with
a typed error, never a raw ``OverflowError``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.dp import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, GaussianMechanism, LaplaceMechanism
from mpdp.dp.samplers import discrete_gaussian, discrete_laplace
from mpdp.errors import DomainError, MpdpError, ParameterError
from mpdp.randomness import RandomSource
from tests.strategies import int64_edges, non_integers, tiny_epsilons

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _ints(values: Any) -> list[int]:
    return [int(v) for v in np.asarray(values, dtype=object).reshape(-1).tolist()]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(int64_edges, min_size=1, max_size=4), seed=st.integers(0, 2**32),
       gaussian=st.booleans(), scalar=st.booleans())
def test_integer_releases_are_exact_sums_at_the_ends_of_int64(values, seed, gaussian, scalar) -> None:
    """release(x) == x + noise on exact integers, for the same noise the sampler draws from the same seed."""
    x: Any = values[0] if scalar else (np.array(values, dtype=object) if any(
        not -(2**63) <= v < 2**63 for v in values) else np.array(values, dtype=np.int64))
    if gaussian:
        mech: Any = DiscreteGaussianMechanism(sensitivity=1, sigma=3.0, delta=1e-6)
        noise = discrete_gaussian(mech.sigma2, np.shape(x), rng=RandomSource.seeded(seed))
    else:
        mech = DiscreteLaplaceMechanism(epsilon=1, sensitivity=1)
        noise = discrete_laplace(mech.scale, np.shape(x), rng=RandomSource.seeded(seed))
    out = mech.release(x, rng=RandomSource.seeded(seed))
    assert _ints(out) == [a + b for a, b in zip(_ints(x), _ints(noise), strict=True)]
    if scalar:
        assert isinstance(out, int)


def test_the_release_of_the_largest_int64_never_wraps() -> None:
    """The probe of issue 42: about a quarter of the releases of 2^63 - 1 came back near -2^63."""
    mech = DiscreteLaplaceMechanism(epsilon=1, sensitivity=1)
    rng = RandomSource.seeded("edge")
    outs = [int(mech.release(np.array([2**63 - 1]), rng=rng)[0]) for _ in range(200)]
    assert min(outs) > 2**63 - 100 and max(outs) > 2**63 - 1  # some above int64: kept as Python ints
    lows = [int(mech.release(-(2**63), rng=rng)) for _ in range(200)]
    assert max(lows) < -(2**63) + 100 and min(lows) < -(2**63)


@settings(max_examples=30, deadline=None)
@given(bad=non_integers, gaussian=st.booleans())
def test_integer_mechanisms_refuse_non_integers(bad: float, gaussian: bool) -> None:
    mech: Any = DiscreteGaussianMechanism(sensitivity=1, sigma=1, delta=1e-6) if gaussian else \
        DiscreteLaplaceMechanism(epsilon=1, sensitivity=1)
    with pytest.raises(DomainError):
        mech.release(np.array([1, bad]))


@pytest.mark.parametrize("junk", [["abc"], "abc", [None], {"a": 1}, [[1, 2], [3]], [1 + 2j]])
def test_mechanisms_refuse_non_numbers_with_typed_errors(junk: Any) -> None:
    for mech in (LaplaceMechanism(epsilon=1, sensitivity=1), GaussianMechanism(sensitivity=1, sigma=1, delta=1e-5),
                 DiscreteLaplaceMechanism(epsilon=1, sensitivity=1)):
        with pytest.raises(ParameterError):
            mech.release(junk, rng=RandomSource.seeded(0))


@settings(max_examples=25, deadline=None)
@given(epsilon=tiny_epsilons, sensitivity=st.sampled_from([1e-6, 1.0, 1e6]), dim=st.integers(1, 3))
def test_laplace_at_tiny_epsilon_is_sampled_exactly_with_bounded_grid_inflation(epsilon, sensitivity, dim) -> None:
    """Any epsilon > 0 down to 1e-300: finite releases whose noise matches the nominal scale (the grid is fine
    enough against the sensitivity, so snapping inflates the scale by at most d 2^-18)."""
    try:
        mech = LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
    except ParameterError as exc:  # sensitivity / epsilon beyond the float range: refused, saying why
        assert not math.isfinite(sensitivity / epsilon) and "float" in str(exc)
        return
    assert mech.effective_scale(dim) <= mech.scale * (1 + dim * 2.0**-18)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = mech.release(np.zeros(dim), rng=RandomSource.seeded(f"{epsilon}"))
        except MpdpError as exc:  # an output beyond the float range (scale near 1e308): typed
            assert "float64" in str(exc)
            return
    noise = np.abs(np.atleast_1d(out)) / mech.scale
    # |Laplace| / b is Exp(1): below 1e-7 or above 40 with probability < 2e-7 per coordinate
    assert np.all(np.isfinite(noise)) and np.all(noise < 40) and np.any(noise > 1e-7)


@settings(max_examples=15, deadline=None)
@given(epsilon=tiny_epsilons)
def test_gaussian_mechanisms_at_tiny_epsilon_release_or_refuse_typed(epsilon: float) -> None:
    for build in (lambda: GaussianMechanism.calibrated(epsilon=epsilon, delta=1e-5, sensitivity=1.0, dim=2),
                  lambda: DiscreteGaussianMechanism.calibrated(epsilon=epsilon, delta=1e-5, sensitivity=1.0)):
        mech = build()
        value: Any = np.zeros(2) if isinstance(mech, GaussianMechanism) else np.zeros(2, dtype=np.int64)
        out = mech.release(value, rng=RandomSource.seeded(1))
        assert np.all(np.isfinite(np.asarray(out, dtype=np.float64)))
        assert mech.epsilon <= epsilon or mech.epsilon == 0.0


def _exact_delta(sigma: float, epsilon: float) -> float:
    """Balle-Wang's δ(ε) of a Gaussian with Δ = 1 at 80 digits (no cancellation at any scale)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(80):
        mu, e = 1 / mpmath.mpf(sigma), mpmath.mpf(epsilon)
        return float(mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu))


@settings(max_examples=40, deadline=None)
@given(log_eps=st.floats(-30, 1.7), log_delta=st.floats(-60, -1))
def test_analytic_gaussian_calibration_never_understates_delta(log_eps: float, log_delta: float) -> None:
    """Where δ is a difference double precision cannot resolve (tiny ε and δ), the calibration used to return
    a σ whose true δ exceeded the target (or crashed in the root finder): σ must meet δ exactly, checked at
    80 digits, and the ε reported back for it must too."""
    from mpdp.dp.calibration import analytic_gaussian_sigma, gaussian_epsilon

    epsilon, delta = 10.0**log_eps, 10.0**log_delta
    try:
        sigma = analytic_gaussian_sigma(sensitivity=1.0, epsilon=epsilon, delta=delta)
    except MpdpError:
        return  # refused, typed, saying why
    assert _exact_delta(sigma, epsilon) <= delta * (1 + 1e-12)
    reported = gaussian_epsilon(sigma=sigma, sensitivity=1.0, delta=delta)
    assert _exact_delta(sigma, reported) <= delta * (1 + 1e-12)


@pytest.mark.parametrize("epsilon", [1e-30, 1e-100, 1e-300])
def test_every_mechanism_at_the_issue_epsilons_releases_or_refuses_typed(epsilon: float) -> None:
    """The probes of issue 42 (raw OverflowError at epsilon 1e-30): each mechanism releases finite values or
    refuses with a typed error; the Laplace ones sample their noise exactly on Python integers."""
    mechanisms: list[Any] = [LaplaceMechanism(epsilon=epsilon, sensitivity=1.0),
                             DiscreteLaplaceMechanism(epsilon=epsilon, sensitivity=1)]
    for build in (lambda: GaussianMechanism.calibrated(epsilon=epsilon, delta=1e-5, sensitivity=1.0, dim=2),
                  lambda: DiscreteGaussianMechanism.calibrated(epsilon=epsilon, delta=1e-5, sensitivity=1.0)):
        try:
            mechanisms.append(build())
        except MpdpError:
            pass
    for mech in mechanisms:
        integer = isinstance(mech, DiscreteLaplaceMechanism | DiscreteGaussianMechanism)
        out = mech.release(np.zeros(2, dtype=np.int64) if integer else np.zeros(2), rng=RandomSource.seeded(2))
        assert np.all(np.isfinite(np.asarray(out, dtype=np.float64)))
    assert mechanisms[0].effective_scale(2) <= mechanisms[0].scale * (1 + 2 * 2.0**-18)
