"""Noise calibration: from a privacy target and a sensitivity to a noise scale, and back.

All functions validate their inputs (typed :class:`~mpdp.errors.ParameterError` naming the value) and are
pure maths: no randomness, no state.

* Laplace: ``b = Δ1 / ε`` gives ε-DP (Dwork, McSherry, Nissim, Smith 2006).
* Gaussian, classic: ``σ = Δ2 sqrt(2 ln(1.25/δ)) / ε``, valid only for ``ε < 1`` (Dwork & Roth 2014, Thm A.1).
* Gaussian, analytic: the smallest σ with ``Φ(Δ/2σ - εσ/Δ) - e^ε Φ(-Δ/2σ - εσ/Δ) <= δ`` (Balle & Wang 2018,
  Thm 8); this is the exact (ε, δ) curve of the Gaussian mechanism, so it never over-noises.
* zCDP: the Gaussian mechanism is ``Δ2^2 / (2σ^2)``-zCDP (Bun & Steinke 2016, Prop 1.6), and so is the
  discrete Gaussian for integer-valued queries (Canonne, Kamath, Steinke 2020, Prop 5).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mpdp.errors import DomainError, ParameterError, PrecisionError, explain

__all__ = [
    "analytic_gaussian_sigma",
    "check_delta",
    "check_epsilon",
    "check_positive",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_rho",
    "laplace_scale",
]


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """``epsilon`` as a float, or ParameterError unless it is finite and > 0."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterError(explain(name, epsilon, "a finite number > 0", f"pass e.g. {name}=1.0")) from exc
    if isinstance(epsilon, bool) or not (math.isfinite(value) and value > 0):
        raise ParameterError(explain(name, epsilon, "a finite number > 0", f"pass e.g. {name}=1.0"))
    return value


def check_delta(delta: float, *, allow_zero: bool = True, name: str = "delta") -> float:
    """``delta`` as a float in ``[0, 1)`` (or ``(0, 1)`` when ``allow_zero`` is False)."""
    expected = "a number in [0, 1)" if allow_zero else "a number in (0, 1)"
    try:
        value = float(delta)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterError(explain(name, delta, expected, f"pass e.g. {name}=1e-5")) from exc
    if isinstance(delta, bool) or not (0 <= value < 1) or (value == 0 and not allow_zero):
        raise ParameterError(explain(name, delta, expected, f"pass e.g. {name}=1e-5"))
    return value


def check_positive(value: float, name: str, fix: str | None = None) -> float:
    """``value`` as a float, or ParameterError unless it is finite and > 0 (sensitivities, scales)."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterError(explain(name, value, "a finite number > 0", fix or f"pass e.g. {name}=1.0")) from exc
    if isinstance(value, bool) or not (math.isfinite(number) and number > 0):
        raise ParameterError(explain(name, value, "a finite number > 0", fix or f"pass e.g. {name}=1.0"))
    return number


def laplace_scale(*, sensitivity: float, epsilon: float) -> float:
    """Laplace scale ``Δ1 / ε`` for ε-DP."""
    return check_positive(sensitivity, "sensitivity") / check_epsilon(epsilon)


def classic_gaussian_sigma(*, sensitivity: float, epsilon: float, delta: float) -> float:
    """Dwork-Roth Gaussian σ ``Δ2 sqrt(2 ln(1.25/δ)) / ε``; valid for ``0 < ε < 1`` only."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    if eps >= 1:
        raise DomainError(
            explain("epsilon", epsilon, "epsilon < 1 for the classic Gaussian bound (Dwork & Roth, Thm A.1)",
                    "use the analytic calibration (method='analytic'), valid for every epsilon")
        )
    return check_positive(sensitivity, "sensitivity") * math.sqrt(2 * math.log(1.25 / dlt)) / eps


def _log_delta(mu: float, eps: float) -> float:
    """An upper bound on log δ(ε) of a Gaussian mechanism with ``mu = Δ/σ`` (Balle-Wang), ``log(e^a - e^b)``
    with ``a = log Φ(mu/2 - ε/mu)`` and ``b = ε + log Φ(-mu/2 - ε/mu)``.

    ``a`` and ``b`` carry absolute rounding errors of a few ulps of their magnitudes (allowed: ``e = 2^-48
    (max(|a|, |b|) + 1)``), so ``g = a - b`` is known within ``e`` and ``log(1 - e^-g)`` within about
    ``e / (e^g - 1)``: the value returned adds both. Where ``g`` is not resolved (``g <= 2 e``, δ a difference
    of two nearly equal numbers) it returns the bound ``a + e`` (``δ <= e^a``), which is far above the truth
    only where double precision cannot tell: callers then add noise or refuse with a typed error, where the
    rounded difference could understate δ, even as 0, and calibrate too little noise.
    """
    from scipy import special  # on use: importing mpdp.dp costs no scipy (a Flower ClientApp starts per message)

    a = float(special.log_ndtr(mu / 2 - eps / mu))
    if a == -math.inf:  # Phi(mu/2 - eps/mu) underflows even in log space: delta <= that, below e^-(10^300)
        return -math.inf
    b = eps + float(special.log_ndtr(-mu / 2 - eps / mu))
    g = a - b
    err = 2.0**-48 * (max(abs(a), abs(b)) + 1.0)
    if not g > 2 * err:
        return a + err
    slope = 2 * err / math.expm1(g) if g < 700 else 0.0
    return float(min(a + err, a + math.log1p(-math.exp(-g)) + err + slope))


def _root(f: Callable[[float], float], lo: float, hi: float, *, xtol: float, rtol: float, what: str) -> float:
    """A root of ``f`` in ``[lo, hi]`` (``f(lo)``, ``f(hi)`` of opposite signs), by Brent's method; where it does
    not converge in 500 steps (a function that double precision renders flat or jagged) the last estimate, which
    the callers then step to a point that provably meets the target. A bracket without a sign change is a
    :class:`~mpdp.errors.PrecisionError`."""
    from scipy import optimize

    try:
        return float(optimize.brentq(f, lo, hi, xtol=xtol, rtol=rtol, maxiter=500, disp=False))
    except ValueError as exc:
        raise PrecisionError(explain(f"Gaussian {what}", f"a search in [{lo:.6g}, {hi:.6g}]", "a bracketed root",
                                     "use method='zcdp', a valid bound at any scale")) from exc


def gaussian_delta(*, sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact δ at which the Gaussian mechanism with std ``sigma`` is (ε, δ)-DP (Balle & Wang 2018), rounded
    up by its floating-point error bound; :class:`~mpdp.errors.PrecisionError` where double precision cannot
    resolve it (see :func:`_log_delta`)."""
    mu = check_positive(sensitivity, "sensitivity") / check_positive(sigma, "sigma")
    try:
        eps = math.nan if isinstance(epsilon, bool | str | bytes) else float(epsilon)
    except (TypeError, ValueError, OverflowError):
        eps = math.nan
    if not (math.isfinite(eps) and eps >= 0):
        raise ParameterError(explain("epsilon", epsilon, "a finite number >= 0", "pass e.g. epsilon=1.0"))
    return min(1.0, math.exp(_log_delta(mu, eps)))


def gaussian_epsilon(*, sigma: float, sensitivity: float, delta: float) -> float:
    """The smallest ε at which the Gaussian mechanism with std ``sigma`` is (ε, δ)-DP (exact tradeoff)."""
    mu = check_positive(sensitivity, "sensitivity") / check_positive(sigma, "sigma")
    dlt = check_delta(delta, allow_zero=False)
    log_target = math.log(dlt)
    if _log_delta(mu, 0.0) <= log_target:
        return 0.0
    hi = 1.0
    while _log_delta(mu, hi) > log_target:
        hi *= 2
        if hi > 1e12:  # pragma: no cover - would need mu of order 1e6
            raise DomainError(explain("sigma", sigma, "a noise level with finite epsilon", "increase sigma"))
    # Bracket the root within a factor of 4 and solve to a relative tolerance: an absolute one would leave a
    # tiny epsilon (1e-9) over-reported by a relative 1e-5, above the epsilon a calibration was asked for.
    lo = hi / 4
    while lo > 1e-300 and _log_delta(mu, lo) <= log_target:
        hi, lo = lo, lo / 4
    eps = _root(lambda e: _log_delta(mu, e) - log_target, lo, hi, xtol=1e-300, rtol=1e-14, what="epsilon")
    # brentq brackets the root to 1e-14: step up until the guarantee holds at the returned epsilon, with steps
    # that double (delta carries ~1e-16 of absolute rounding noise, a wide relative band at a tiny epsilon).
    step = max(eps * 1e-15, 5e-324)
    while _log_delta(mu, eps) > log_target:
        eps = min(eps + step, hi)  # hi is known to meet the target
        step *= 2
    return eps


def analytic_gaussian_sigma(*, sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest σ (to 1e-12 relative, rounded up) for (ε, δ)-DP, by Balle & Wang's exact condition."""
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    log_target = math.log(dlt)
    # δ(mu) increases with mu = Δ/σ: find the largest admissible mu.
    hi = 1.0
    while _log_delta(hi, eps) < log_target:
        hi *= 2
    lo = hi / 2  # halve until delta is certified below the target (a tiny delta: mu ~ 2.5 delta)
    while not _log_delta(lo, eps) <= log_target:
        if lo < 1e-300:
            raise PrecisionError(explain("analytic Gaussian calibration", f"epsilon = {eps:.6g}, delta = {dlt:.6g}",
                                         "parameters whose delta double precision resolves", "use method='zcdp' "
                                         "(or 'classic' for epsilon < 1): valid bounds at any scale"))
        hi, lo = lo, lo / 2
    mu = _root(lambda m: _log_delta(m, eps) - log_target, lo, hi, xtol=1e-15, rtol=1e-13, what="sigma")
    sigma = sens / mu
    step = 1e-13
    while _log_delta(sens / sigma, eps) > log_target:  # the criterion gaussian_epsilon checks
        sigma *= 1 + step
        step *= 2
    return sigma


def gaussian_rho(*, sigma: float, sensitivity: float) -> float:
    """zCDP parameter ``ρ = Δ2^2 / (2σ^2)`` of the (continuous or discrete) Gaussian mechanism."""
    sens = check_positive(sensitivity, "sensitivity")
    s = check_positive(sigma, "sigma")
    rho = sens * sens / (2 * s * s) if s * s > 0 else math.inf
    if not math.isfinite(rho):
        raise ParameterError(explain("sensitivity / sigma", (sens, s), "a ratio whose square is a float",
                                     "use a larger sigma: this one gives no privacy"))
    return rho
