"""The distributed discrete Gaussian (Kairouz, Liu, Steinke 2021): n parties each add N_Z(0, σ^2) noise.

The sum of n independent discrete Gaussians is not a discrete Gaussian, but close: KLS21 (Thm 1, Prop 14)
bound the Rényi divergence of the summed noise under an integer shift Δ (per coordinate, d coordinates, the
query already scaled to integers) by

    ε(α) = min( α/2 · Δ2^2/(nσ^2) + τ d,
                α/2 · (Δ2^2/(nσ^2) + 2 τ Δ1/(sqrt(n) σ) + τ^2 d),
                α/2 · (Δ2/(sqrt(n) σ) + τ sqrt(d))^2 ),
    τ = 10 Σ_{k=1}^{n-1} exp(-2 π^2 σ^2 k/(k+1)),

valid for σ >= 1/2. τ is the correction for the sum not being exactly discrete Gaussian; it vanishes fast as
σ grows (σ = 2 gives τ < 10^-15 n). With Poisson subsampling at rate q the RDP is bounded by Zhu & Wang 2019
(Thm 5, the general upper bound for integer orders); the conversion to (ε, δ) is the one of
:mod:`mpdp.dp.accounting.zcdp` applied order by order. The third term is a zCDP bound, which is the ρ the
:class:`PrivacyCost` of :func:`ddg_cost` carries for composition with other releases.
"""

from __future__ import annotations

import math

import numpy as np

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.calibration import check_delta, check_positive
from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["DDG_ORDERS", "ddg_cost", "ddg_epsilon", "ddg_rdp", "ddg_tau"]

DDG_ORDERS = (*range(2, 129), 160, 192, 256)


def _check_parties(n_parties: int) -> int:
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or n_parties < 1:
        raise ParameterError(explain("n_parties", n_parties, "an int >= 1", "pass the number of noise contributors"))
    return n_parties


def _check_sigma(local_sigma: float) -> float:
    s = check_positive(local_sigma, "local_sigma")
    if s < 0.5:
        raise DomainError(explain("local_sigma", local_sigma, "sigma >= 1/2 (KLS21, Prop 14)",
                                  "use a finer integer grid so the per-party noise has sigma >= 1/2"))
    return s


def ddg_tau(local_sigma: float, n_parties: int) -> float:
    """KLS21's τ = 10 Σ_{k=1}^{n-1} exp(-2π^2 σ^2 k/(k+1)) (0 for a single party)."""
    s = _check_sigma(local_sigma)
    n = _check_parties(n_parties)
    return 10 * math.fsum(math.exp(-2 * math.pi**2 * s * s * k / (k + 1)) for k in range(1, n))


def ddg_rdp(alpha: float, *, local_sigma: float, n_parties: int, l2_sensitivity: float, dim: int,
            l1_sensitivity: float | None = None) -> float:
    """RDP of order α of one release with the summed noise (KLS21, Prop 14); sensitivities in grid units."""
    s = _check_sigma(local_sigma)
    n = _check_parties(n_parties)
    l2 = check_positive(l2_sensitivity, "l2_sensitivity")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ParameterError(explain("dim", dim, "an int >= 1", "pass the number of coordinates"))
    l1 = math.sqrt(dim) * l2 if l1_sensitivity is None else check_positive(l1_sensitivity, "l1_sensitivity")
    tau = ddg_tau(s, n)
    a2 = l2 * l2 / (n * s * s)
    a1 = l1 / (math.sqrt(n) * s)
    return min(alpha / 2 * a2 + tau * dim,
               alpha / 2 * (a2 + 2 * tau * a1 + tau * tau * dim),
               alpha / 2 * (math.sqrt(a2) + tau * math.sqrt(dim)) ** 2)


def _subsampled(alpha: int, q: float, eps: list[float]) -> float:
    """Zhu & Wang 2019, Thm 5: RDP of order α of a Poisson-subsampled mechanism with RDP curve ``eps``."""
    from scipy import special  # on use: importing the accounting costs no scipy

    log_terms = [0.0, math.log(special.comb(alpha, 2)) + 2 * math.log(q) + (alpha - 2) * math.log1p(-q)
                 + min(4 * math.expm1(eps[2]), eps[2] + math.log(2.0), 2 * eps[2])]
    scales = [((1 - q) ** (alpha - 1)) * (alpha * q - q + 1), 1.0]
    for j in range(3, alpha + 1):
        log_terms.append(float(special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1))
                         + j * math.log(q) + (alpha - j) * math.log1p(-q) + (j - 1) * eps[j] + math.log(3.0))
        scales.append(1.0)
    return float(special.logsumexp(log_terms, b=scales)) / (alpha - 1)


def ddg_epsilon(*, local_sigma: float, n_parties: int, l2_sensitivity: float, dim: int, delta: float,
                steps: int = 1, sampling_rate: float = 1.0, l1_sensitivity: float | None = None) -> float:
    """ε at ``delta`` after ``steps`` releases of a sum whose noise is n parties' N_Z(0, σ^2) (grid units)."""
    dlt = check_delta(delta, allow_zero=False)
    q = float(sampling_rate)
    if not 0 < q <= 1:
        raise ParameterError(explain("sampling_rate", sampling_rate, "a number in (0, 1]", "pass batch / n"))
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ParameterError(explain("steps", steps, "an int >= 1", "pass the number of releases"))
    top = max(DDG_ORDERS)
    curve = [0.0, 0.0] + [ddg_rdp(a, local_sigma=local_sigma, n_parties=n_parties, l2_sensitivity=l2_sensitivity,
                                  dim=dim, l1_sensitivity=l1_sensitivity) for a in range(2, top + 1)]
    best = math.inf
    for alpha in DDG_ORDERS:
        rdp = curve[alpha] if q == 1 else min(curve[alpha], _subsampled(alpha, q, curve))
        total = steps * rdp
        eps = total + (math.log(1 / dlt) - math.log(alpha)) / (alpha - 1) + math.log1p(-1 / alpha)
        best = min(best, eps)
    return float(np.maximum(best, 0.0))


def ddg_cost(*, local_sigma: float, n_parties: int, l2_sensitivity: float, dim: int, delta: float,
             steps: int = 1, l1_sensitivity: float | None = None) -> PrivacyCost:
    """The :class:`PrivacyCost` of ``steps`` distributed-discrete-Gaussian releases (no subsampling)."""
    eps = ddg_epsilon(local_sigma=local_sigma, n_parties=n_parties, l2_sensitivity=l2_sensitivity, dim=dim,
                      delta=delta, steps=steps, l1_sensitivity=l1_sensitivity)
    tau = ddg_tau(local_sigma, n_parties)
    rho_one = (l2_sensitivity / (math.sqrt(n_parties) * local_sigma) + tau * math.sqrt(dim)) ** 2 / 2
    return PrivacyCost(epsilon=eps, delta=delta, rho=rho_one * steps, mechanism="distributed_discrete_gaussian",
                       count=1)
