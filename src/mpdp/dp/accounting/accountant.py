"""The accountant calls the learning modules make: DP-SGD style Gaussian steps, in one line each.

    >>> from mpdp.dp.accounting import dpsgd_epsilon, dpsgd_noise_multiplier
    >>> eps = dpsgd_epsilon(noise_multiplier=1.1, sampling_rate=0.01, steps=1000, delta=1e-5)
    >>> z = dpsgd_noise_multiplier(epsilon=1.0, delta=1e-5, sampling_rate=0.01, steps=1000)

A "step" is one release of a sum of per-example gradients clipped to L2 norm C, plus N(0, (z C)^2) noise,
on a Poisson sample with rate q (q = 1: the full batch). Neighbouring datasets add or remove one record.
Methods are those of :func:`mpdp.dp.accounting.composition.compose` ("rdp" default, "pld" tighter, "zcdp"
ignores subsampling). :func:`dpsgd_cost` gives the matching :class:`PrivacyCost` for a ledger.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mpdp.dp.accounting.composition import compose
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.calibration import check_delta, check_epsilon, check_positive
from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["dpsgd_cost", "dpsgd_epsilon", "dpsgd_noise_multiplier", "smallest_noise_multiplier"]


def _check_steps(steps: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ParameterError(explain("steps", steps, "an int >= 1", "pass the number of noisy releases"))
    return steps


def _check_rate(sampling_rate: float) -> float:
    rate = float(sampling_rate)
    if not 0 < rate <= 1:
        raise ParameterError(
            explain("sampling_rate", sampling_rate, "a number in (0, 1]", "pass batch_size / n (1.0: full batches)")
        )
    return rate


def dpsgd_cost(*, noise_multiplier: float, sampling_rate: float = 1.0, steps: int = 1, delta: float,
               method: str = "rdp") -> PrivacyCost:
    """The :class:`PrivacyCost` of ``steps`` (subsampled) Gaussian steps, with ε computed at ``delta``."""
    z = check_positive(noise_multiplier, "noise_multiplier")
    q = _check_rate(sampling_rate)
    t = _check_steps(steps)
    dlt = check_delta(delta, allow_zero=False)
    if not z * z > 0 or not math.isfinite(t / (2 * z * z)):
        raise ParameterError(explain("noise_multiplier", noise_multiplier, "a multiplier whose square is a "
                                     "normal float", "use a larger noise multiplier: this one gives no privacy"))
    unit = PrivacyCost(epsilon=math.inf, delta=0.0, mechanism="subsampled_gaussian" if q < 1 else "gaussian",
                       noise_multiplier=z, sampling_rate=q if q < 1 else None, count=t)
    spent = compose([unit], delta=dlt, method=method)
    return PrivacyCost(epsilon=spent.epsilon, delta=dlt, rho=None if q < 1 else t / (2 * z * z),
                       mechanism=unit.mechanism, noise_multiplier=z, sampling_rate=unit.sampling_rate, count=t)


def dpsgd_epsilon(*, noise_multiplier: float, sampling_rate: float = 1.0, steps: int, delta: float,
                  method: str = "rdp") -> float:
    """ε after ``steps`` Gaussian steps with noise multiplier z and Poisson rate q, at ``delta``."""
    return dpsgd_cost(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps, delta=delta,
                      method=method).epsilon


def dpsgd_noise_multiplier(*, epsilon: float, delta: float, sampling_rate: float = 1.0, steps: int,
                           method: str = "rdp", tolerance: float = 1e-4) -> float:
    """The smallest noise multiplier (to relative ``tolerance``, rounded up) meeting (ε, δ) after ``steps``."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    q = _check_rate(sampling_rate)
    t = _check_steps(steps)

    def epsilon_of(z: float) -> float:
        return dpsgd_epsilon(noise_multiplier=z, sampling_rate=q, steps=t, delta=dlt, method=method)

    return smallest_noise_multiplier(epsilon_of, eps, start=(1e-2, 1.0), floor=1e-2, ceiling=1e6,
                                     tolerance=tolerance, fix="raise epsilon or delta, or take fewer steps")


def smallest_noise_multiplier(epsilon_of: Callable[[float], float], epsilon: float, *,
                              start: tuple[float, float], floor: float, ceiling: float, tolerance: float,
                              fix: str) -> float:
    """The smallest z in [floor, ceiling] with ``epsilon_of(z) <= epsilon``, to relative ``tolerance``.

    ``epsilon_of`` must decrease in z. The bracket ``start`` is widened by factors of 4 (up to ``ceiling``,
    beyond which the target is refused with a :class:`DomainError` carrying ``fix``; down to ``floor``, which
    is returned when even it meets the target), Brent's method then locates the crossing in log z, and the
    root is rounded up until ``epsilon_of`` is within the target, so the result never overspends.
    """

    def excess(log_z: float) -> float:
        return epsilon_of(math.exp(log_z)) - epsilon

    lo, hi = math.log(start[0]), math.log(start[1])
    while excess(hi) > 0:
        lo, hi = hi, hi + math.log(4.0)
        if hi > math.log(ceiling):
            raise DomainError(explain("epsilon", epsilon, f"a target reachable with a noise multiplier <= {ceiling:g}",
                                      fix))
    while excess(lo) <= 0:
        lo, hi = lo - math.log(4.0), lo
        if lo < math.log(floor):
            return math.exp(hi)
    from scipy import optimize  # on use: importing the accounting costs no scipy

    z = math.exp(float(optimize.brentq(excess, lo, hi, xtol=tolerance / 4)))
    while excess(math.log(z)) > 0:
        z *= 1 + tolerance / 4
    return z
