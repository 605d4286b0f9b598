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

from mpdp.errors import DomainError, ParameterError, explain

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
    except (TypeError, ValueError) as exc:
        raise ParameterError(explain(name, epsilon, "a finite number > 0", f"pass e.g. {name}=1.0")) from exc
    if isinstance(epsilon, bool) or not (math.isfinite(value) and value > 0):
        raise ParameterError(explain(name, epsilon, "a finite number > 0", f"pass e.g. {name}=1.0"))
    return value


def check_delta(delta: float, *, allow_zero: bool = True, name: str = "delta") -> float:
    """``delta`` as a float in ``[0, 1)`` (or ``(0, 1)`` when ``allow_zero`` is False)."""
    expected = "a number in [0, 1)" if allow_zero else "a number in (0, 1)"
    try:
        value = float(delta)
    except (TypeError, ValueError) as exc:
        raise ParameterError(explain(name, delta, expected, f"pass e.g. {name}=1e-5")) from exc
    if isinstance(delta, bool) or not (0 <= value < 1) or (value == 0 and not allow_zero):
        raise ParameterError(explain(name, delta, expected, f"pass e.g. {name}=1e-5"))
    return value


def check_positive(value: float, name: str, fix: str | None = None) -> float:
    """``value`` as a float, or ParameterError unless it is finite and > 0 (sensitivities, scales)."""
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
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
    """log of the exact δ(ε) of a Gaussian mechanism with ``mu = Δ/σ`` (Balle-Wang), computed stably."""
    from scipy import special  # on use: importing mpdp.dp costs no scipy (a ClientApp starts per message)

    a = special.log_ndtr(mu / 2 - eps / mu)
    b = eps + special.log_ndtr(-mu / 2 - eps / mu)
    if b >= a:
        return -math.inf
    return float(a + math.log1p(-math.exp(b - a)))


def gaussian_delta(*, sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact δ at which the Gaussian mechanism with std ``sigma`` is (ε, δ)-DP (Balle & Wang 2018)."""
    mu = check_positive(sensitivity, "sensitivity") / check_positive(sigma, "sigma")
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps >= 0):
        raise ParameterError(explain("epsilon", epsilon, "a finite number >= 0", "pass e.g. epsilon=1.0"))
    return math.exp(_log_delta(mu, eps))


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
    from scipy import optimize

    eps = float(optimize.brentq(lambda e: _log_delta(mu, e) - log_target, 0.0, hi, xtol=1e-14, rtol=1e-14))
    # brentq brackets the root to 1e-14: step up until the guarantee provably holds at the returned epsilon.
    while _log_delta(mu, eps) > log_target:
        eps = math.nextafter(eps, math.inf) * (1 + 1e-15)
    return eps


def analytic_gaussian_sigma(*, sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest σ (to 1e-12 relative, rounded up) for (ε, δ)-DP, by Balle & Wang's exact condition."""
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    log_target = math.log(dlt)
    # δ(mu) increases with mu = Δ/σ: find the largest admissible mu.
    lo, hi = 1e-12, 1.0
    while _log_delta(hi, eps) < log_target:
        lo, hi = hi, hi * 2
    from scipy import optimize

    mu = float(optimize.brentq(lambda m: _log_delta(m, eps) - log_target, lo, hi, xtol=1e-15, rtol=1e-13))
    sigma = sens / mu
    while gaussian_delta(sigma=sigma, sensitivity=sens, epsilon=eps) > dlt:
        sigma *= 1 + 1e-13
    return sigma


def gaussian_rho(*, sigma: float, sensitivity: float) -> float:
    """zCDP parameter ``ρ = Δ2^2 / (2σ^2)`` of the (continuous or discrete) Gaussian mechanism."""
    sens = check_positive(sensitivity, "sensitivity")
    s = check_positive(sigma, "sigma")
    return sens * sens / (2 * s * s)
