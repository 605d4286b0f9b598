"""Zero-concentrated DP (Bun & Steinke 2016): closed forms, composition and conversion to (ε, δ).

ρ-zCDP means ``D_α(M(x) || M(x')) <= α ρ`` for every order ``α > 1``. It composes by adding ρ, and:

* the Gaussian mechanism with L2 sensitivity Δ and std σ is ``Δ^2 / (2σ^2)``-zCDP (BS16, Prop 1.6), and so is
  the discrete Gaussian for integer-valued queries (Canonne, Kamath, Steinke 2020, Prop 5), summed over
  coordinates for vectors;
* ε-DP implies ``ε^2 / 2``-zCDP (BS16, Prop 1.4).

Conversion to (ε, δ)-DP, two ways:

* ``"bun_steinke"``: ``ε = ρ + 2 sqrt(ρ ln(1/δ))`` (BS16, Prop 1.3), the formula most papers quote (paper 003's
  Theorem 3.4 uses it);
* ``"tight"`` (default): ``ε = inf_{α>1} αρ + (ln(1/δ) - ln α)/(α - 1) + ln(1 - 1/α)`` (Canonne, Kamath,
  Steinke 2020, Prop 12 / Cor 13; Asoodeh et al. 2021). It is never larger than the Bun-Steinke value and
  is what dp-accounting's RDP accountant computes for ``ε(α) = αρ``; we minimise over real α (dp-accounting
  over a grid of orders), so ours is at most theirs.
"""

from __future__ import annotations

import math
from typing import Any

from mpdp.dp.calibration import check_delta, check_epsilon, check_positive
from mpdp.errors import ParameterError, explain

__all__ = [
    "compose_rho",
    "gaussian_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_epsilon",
    "zcdp_epsilon_at_order",
    "zcdp_rho_for",
]

CONVERSIONS = ("tight", "bun_steinke")


def _check_rho(rho: Any) -> float:
    try:
        if isinstance(rho, str | bytes):
            raise TypeError(type(rho).__name__)
        value = float(rho)
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if isinstance(rho, bool) or not (math.isfinite(value) and value >= 0):
        raise ParameterError(explain("rho", rho, "a finite number >= 0", "pass the zCDP parameter, e.g. rho=0.1"))
    return value


def gaussian_zcdp(*, sensitivity: float, sigma: float) -> float:
    """ρ of one Gaussian (or discrete Gaussian) release: ``Δ2^2 / (2σ^2)``."""
    sens = check_positive(sensitivity, "sensitivity")
    s = check_positive(sigma, "sigma")
    rho = sens * sens / (2 * s * s) if s * s > 0 else math.inf
    if not math.isfinite(rho):
        raise ParameterError(explain("sensitivity / sigma", (sens, s), "a ratio whose square is a float",
                                     "use a larger sigma: this one gives no privacy"))
    return rho


def pure_dp_to_zcdp(epsilon: float) -> float:
    """ε-DP implies ``ε^2/2``-zCDP (Bun & Steinke 2016, Prop 1.4)."""
    eps = check_epsilon(epsilon)
    return eps * eps / 2


def compose_rho(*rhos: float) -> float:
    """zCDP composes additively (Bun & Steinke 2016, Lemma 1.7)."""
    return math.fsum(_check_rho(r) for r in rhos)


def zcdp_epsilon_at_order(rho: float, delta: float, alpha: float) -> float:
    """The (ε, δ) conversion at one Rényi order α > 1 (CKS 2020, Prop 12)."""
    if not alpha > 1:
        raise ParameterError(explain("alpha", alpha, "a Rényi order > 1", "pass e.g. alpha=2.0"))
    return alpha * rho + (math.log(1 / delta) - math.log(alpha)) / (alpha - 1) + math.log1p(-1 / alpha)


def zcdp_epsilon(rho: float, delta: float, *, conversion: str = "tight") -> float:
    """The ε at which ρ-zCDP implies (ε, δ)-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    delta : float
        Target δ in (0, 1).
    conversion : {"tight", "bun_steinke"}
        See the module docstring.
    """
    r = _check_rho(rho)
    dlt = check_delta(delta, allow_zero=False)
    if conversion not in CONVERSIONS:
        raise ParameterError(explain("conversion", conversion, f"one of {CONVERSIONS}", "pass conversion='tight'"))
    if r == 0:
        return 0.0
    bun_steinke = r + 2 * math.sqrt(r * math.log(1 / dlt))
    if conversion == "bun_steinke" or r < 1e-200:  # (tiny rho: the search bounds would overflow; BS is valid)
        return bun_steinke
    # Minimise over x = ln(α - 1); the optimum is near α = 1 + sqrt(ln(1/δ)/ρ).
    x0 = math.log(math.sqrt(math.log(1 / dlt) / r))

    def objective(x: float) -> float:
        return zcdp_epsilon_at_order(r, dlt, 1 + math.exp(x))

    from scipy import optimize  # on use: importing the accounting costs no scipy

    res = optimize.minimize_scalar(objective, bounds=(x0 - 12, x0 + 12), method="bounded",
                                   options={"xatol": 1e-12})
    best = min(float(res.fun), objective(x0), bun_steinke)
    return max(best, 0.0)


def zcdp_rho_for(*, epsilon: float, delta: float, conversion: str = "tight") -> float:
    """The largest ρ whose conversion gives at most ``epsilon`` at ``delta`` (to 1e-12 relative, rounded down)."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    hi = max(eps, 1.0)
    while zcdp_epsilon(hi, dlt, conversion=conversion) < eps:
        hi *= 2
    # Bracket the root within a factor of 4 before the root finder runs: from [0, hi] it would need hundreds of
    # steps for a tiny epsilon. The tight curve is 0 below some rho > 0 (there (0, delta)-DP already holds), so
    # the search ends for every epsilon > 0; the check on lo only guards the arithmetic.
    lo = hi / 4
    while lo > 0 and zcdp_epsilon(lo, dlt, conversion=conversion) > eps:
        hi, lo = lo, lo / 4
    if lo == 0:
        raise ParameterError(explain("epsilon", epsilon, f"an epsilon whose rho at delta={dlt} is a normal float",
                                     "use a larger epsilon: the noise would exceed any float"))
    from scipy import optimize

    rho = float(optimize.brentq(lambda r: zcdp_epsilon(r, dlt, conversion=conversion) - eps, lo, hi,
                                xtol=1e-320, rtol=1e-13))
    step = 1e-12
    while rho > 0 and zcdp_epsilon(rho, dlt, conversion=conversion) > eps:
        rho *= 1 - step
        step = min(2 * step, 0.5)
    return rho
