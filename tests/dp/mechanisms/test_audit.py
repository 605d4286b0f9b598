"""Empirical privacy audit: a lower bound on epsilon from neighbouring inputs stays below the claim.

For neighbouring values 0 and Δ, every event ``S = {output > t}`` gives ``P[M(0) in S] <= e^ε P[M(Δ) in S] + δ``
and symmetrically, so ``ε >= ln((p1 - δ) / p0)`` for the upper confidence bound ``p0`` and the lower
confidence bound ``p1`` (Clopper-Pearson). With confidence ``1 - 1e-6`` per bound and Bonferroni over the
thresholds, a correct mechanism violates ``ε_lb <= ε`` with probability below 1e-4 (the suite's ALPHA).
The audit has power: the same audit flags a mechanism that adds half the claimed noise.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats

from mpdp.dp import GaussianMechanism, LaplaceMechanism
from mpdp.errors import PrivacyLeakWarning
from mpdp.randomness import RandomSource

N = 200_000
THRESHOLDS = 8
_CONF = 1e-6 / THRESHOLDS


def _upper(k: int, n: int) -> float:
    return float(stats.beta.ppf(1 - _CONF, k + 1, n - k)) if k < n else 1.0


def _lower(k: int, n: int) -> float:
    return float(stats.beta.ppf(_CONF, k, n - k + 1)) if k > 0 else 0.0


def epsilon_lower_bound(out0: np.ndarray, out1: np.ndarray, thresholds: np.ndarray, delta: float = 0.0) -> float:
    best = 0.0
    for t in thresholds:
        k0, k1 = int(np.count_nonzero(out0 > t)), int(np.count_nonzero(out1 > t))
        p0, p1 = _upper(k0, out0.size), _lower(k1, out1.size)
        if p1 - delta > 0 and p0 > 0:
            best = max(best, math.log((p1 - delta) / p0))
    return best


def _releases(mech: object, value: float, seed: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return np.asarray(mech.release(np.full(N, value), rng=RandomSource.seeded(seed)))  # type: ignore[attr-defined]


def test_laplace_audit_stays_below_epsilon_and_has_power() -> None:
    eps, sens = 1.0, 1.0
    mech = LaplaceMechanism(epsilon=eps, sensitivity=sens)
    thresholds = np.linspace(1.0, 4.0, THRESHOLDS)  # beyond Δ the likelihood ratio is exactly e^ε
    lb = epsilon_lower_bound(_releases(mech, 0.0, "a0"), _releases(mech, sens, "a1"), thresholds)
    assert 0.8 * eps < lb <= eps
    broken = LaplaceMechanism(epsilon=2 * eps, sensitivity=sens)  # half the noise, claimed as eps
    lb_broken = epsilon_lower_bound(_releases(broken, 0.0, "b0"), _releases(broken, sens, "b1"), thresholds / 2)
    assert lb_broken > eps


def test_gaussian_audit_stays_below_epsilon_and_has_power() -> None:
    eps, delta = 1.0, 1e-5
    mech = GaussianMechanism.calibrated(epsilon=eps, delta=delta, sensitivity=1.0, dim=N)
    thresholds = np.linspace(1.0, 2.5, THRESHOLDS) * mech.sigma
    lb = epsilon_lower_bound(_releases(mech, 0.0, "g0"), _releases(mech, 1.0, "g1"), thresholds, delta)
    assert 0.3 < lb <= eps
    broken = GaussianMechanism(sensitivity=1.0, sigma=mech.sigma / 2, delta=delta, dim=N)
    lb_broken = epsilon_lower_bound(_releases(broken, 0.0, "h0"), _releases(broken, 1.0, "h1"), thresholds / 2, delta)
    assert lb_broken > eps
