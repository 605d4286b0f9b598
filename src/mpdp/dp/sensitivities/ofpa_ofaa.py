"""Sensitivities of paper 001 (Du, Li, Li): OFPA objective perturbation, Algorithm 1 output perturbation, OFAA.

Setting. A party holds ``n`` records ``(x_i, y_i)``, ``y_i`` in {-1, +1}, with the intercept folded into the
features: ``x_i = [x_raw_i / B, 1] / sqrt(2)`` with ``B`` a public bound on ``||x_raw_i||_2``, so that
``||x_i||_2 <= 1`` (the paper's normalisation, stated in the proof of its Theorem 2). Neighbouring datasets
differ in one record (replacement), so ``n`` is public.

``row_l1`` is a public bound on ``||x_i||_1``. With only the l2 bound it is ``sqrt(D)`` for ``D`` features;
with a schema whose raw entries lie in [-1, 1] and whose l2 bound ``B`` counts the entries that can be
non-zero (``B^2`` of them, :meth:`mpdp.datasets.dataset.Dataset.row_norm_bound`), it is ``(B + 1) / sqrt(2)``.

Where the paper is loose, and what is used instead
---------------------------------------------------
* OFPA (Theorem 2) perturbs with ``v ~ Lap(4/eps)`` per coordinate, arguing ``||v - v'||_1 <= 4`` from
  ``||x||_1 <= 1``. Under the l2 normalisation the proof actually assumes elsewhere (``||x|| <= 1``) the l1
  distance of the two gradient terms is up to ``2 ||x||_1 <= 2 sqrt(D)``, not 4: per-coordinate Laplace needs
  the **l1** sensitivity, ``2 * row_l1`` (:func:`ofpa_l1_sensitivity`).
* The proof also equates the densities of ``v`` and of the output ``w`` and so drops the Jacobian of the map
  ``v -> w``. Chaudhuri, Monteleoni, Sarwate (JMLR 2011, Theorem 6) show the Jacobian ratio is at most
  ``(1 + c / (n lam))^2`` for a loss of curvature ``c`` (logistic: ``c = 1/4``) and an ``n lam``-strongly
  convex regulariser. The paper's objective has no regulariser, so the ratio is unbounded and the released
  minimiser has no finite guarantee. We add ``lam/2 ||w||^2`` and spend ``2 log(1 + c/(n lam))`` of ``eps``
  on it; when that would exceed ``eps/2`` the regulariser is raised to ``c / (n (e^{eps/4} - 1))`` as in
  Chaudhuri et al. (:func:`ofpa_plan`).
* Algorithm 1 (output perturbation) leaves ``Delta S`` uncomputed. For the ``lam``-regularised mean loss with
  a 1-Lipschitz loss and ``||x|| <= 1`` the l2 sensitivity of the minimiser is ``2 / (n lam)`` (Chaudhuri et
  al., Corollary 8); per-coordinate Laplace needs the l1 bound ``sqrt(D) * 2 / (n lam)``
  (:func:`output_l1_sensitivity`).
* OFAA (Algorithm 3, Theorem 3) sets ``Delta S = 2 (J + 1) max |lambda|`` per degree from the *data's* largest
  coefficient, which is itself data dependent, and its eq. (35) mixes l1 and l2. Sound per-degree l1
  sensitivities for the order-2 expansion ``ln 2 - (y/2) z + z^2 / 8`` of ``log(1 + e^{-y z})``, ``z = w.x``:
  degree 1 coefficients ``-(y/2) x`` change by at most ``row_l1`` in l1, degree 2 coefficients
  ``x x^T / 8`` (upper triangle, off-diagonal doubled) by at most ``row_l1^2 / 4``; degree 0 (``n ln 2``) is
  data independent (:func:`ofaa_degree_sensitivities`). The budget is split between the degrees in proportion
  to their sensitivities, which equalises the noise scale (Zhang et al., VLDB 2012, the functional mechanism).

Repeated rounds compose: these functions price one release; callers compose rounds (see
:mod:`mpdp.learning.ofpa_ofaa`).

References
----------
Du, Li, Li, "Privacy-Preserving Multiparty Learning for Logistic Regression" (``001_5578a5cbeaca8b44.txt``),
Theorems 2, 3, eq. (35); Chaudhuri, Monteleoni, Sarwate, "Differentially Private Empirical Risk Minimization",
JMLR 12 (2011), Algorithm 2 and Theorem 6; Zhang et al., "Functional Mechanism", VLDB 2012, Lemma 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpdp.errors import ParameterError, explain

__all__ = [
    "LOGISTIC_CURVATURE",
    "OfpaPlan",
    "ofaa_degree_sensitivities",
    "ofaa_laplace_scale",
    "ofpa_l1_sensitivity",
    "ofpa_plan",
    "output_l1_sensitivity",
    "output_laplace_scale",
    "unit_ball_row_l1",
]

#: Upper bound on the second derivative of the logistic loss ``log(1 + e^{-z})``.
LOGISTIC_CURVATURE = 0.25


def _positive(name: str, value: float, fix: str) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ParameterError(explain(name, value, "a finite number > 0", fix))
    return float(value)


def _count(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ParameterError(explain(name, value, "an int >= 1", f"pass the public {name}"))
    return value


def unit_ball_row_l1(dim: int, l2_bound: float | None = None) -> float:
    """Public l1 bound of ``[x / B, 1] / sqrt(2)``: ``(B + 1) / sqrt(2)`` when the raw row has at most ``B^2``
    entries in [-1, 1] that can be non-zero (``B = l2_bound``), else ``sqrt(dim)`` for ``dim`` augmented features."""
    dim = _count("dim", dim)
    generic = math.sqrt(dim)
    if l2_bound is None:
        return generic
    b = _positive("l2_bound", l2_bound, "pass Dataset.row_norm_bound")
    return min(generic, (b + 1.0) / math.sqrt(2.0))


def ofpa_l1_sensitivity(row_l1: float) -> float:
    """l1 sensitivity of the gradient term ``sum_i grad loss`` under replacement of one record: ``2 row_l1``
    (each record's logistic gradient is ``s x_i`` with ``|s| < 1``). The paper's 4 holds only for l1-normalised
    rows with a doubled margin; it under-noises l2-normalised rows when ``row_l1 > 2``."""
    return 2.0 * _positive("row_l1", row_l1, "pass unit_ball_row_l1(dim, bound)")


@dataclass(frozen=True)
class OfpaPlan:
    """One OFPA release: regulariser ``lam`` (mean form), Laplace ``scale`` of the sum-form linear term
    ``v^T w``, the part of ``eps`` paid for the Jacobian and the part left for the noise."""

    lam: float
    scale: float
    eps_jacobian: float
    eps_noise: float


def ofpa_plan(eps: float, n: int, lam: float, row_l1: float, curvature: float = LOGISTIC_CURVATURE) -> OfpaPlan:
    """Calibrate OFPA soundly (Chaudhuri et al. 2011, Algorithm 2 with per-coordinate Laplace noise).

    Objective (sum form): ``sum_i loss(w.x_i) + (n lam / 2) ||w||^2 + v^T w``, ``v_j ~ Lap(scale)``.
    ``eps_jacobian = 2 log(1 + c / (n lam))``; if it exceeds ``eps / 2``, ``lam`` is raised to
    ``c / (n (e^{eps/4} - 1))`` so that it equals ``eps / 2``. ``scale = 2 row_l1 / eps_noise``.
    The release of the exact minimiser is then ``eps``-DP.
    """
    eps = _positive("epsilon", eps, "pass e.g. epsilon=0.8")
    n = _count("n (party records)", n)
    lam = _positive("lam", lam, "pass e.g. lam=1e-4")
    c = _positive("curvature", curvature, "0.25 for the logistic loss")
    jac = 2.0 * math.log1p(c / (n * lam))
    if jac > eps / 2:
        lam = c / (n * math.expm1(eps / 4))
        jac = 2.0 * math.log1p(c / (n * lam))
    eps_noise = eps - jac
    return OfpaPlan(lam=lam, scale=ofpa_l1_sensitivity(row_l1) / eps_noise, eps_jacobian=jac, eps_noise=eps_noise)


def output_l1_sensitivity(n: int, lam: float, dim: int, lipschitz: float = 1.0) -> float:
    """l1 sensitivity of the minimiser of ``mean loss + lam/2 ||w||^2`` for a ``G``-Lipschitz loss and
    ``||x|| <= 1``: ``sqrt(dim) * 2 G / (n lam)`` (l2 bound of Chaudhuri et al., Corollary 8, times sqrt(dim))."""
    n = _count("n (party records)", n)
    lam = _positive("lam", lam, "output perturbation needs lam > 0, e.g. lam=1e-2")
    dim = _count("dim", dim)
    g = _positive("lipschitz", lipschitz, "1 for the logistic loss")
    return math.sqrt(dim) * 2.0 * g / (n * lam)


def output_laplace_scale(eps: float, n: int, lam: float, dim: int) -> float:
    """Per-coordinate Laplace scale for Algorithm 1: ``output_l1_sensitivity / eps``."""
    return output_l1_sensitivity(n, lam, dim) / _positive("epsilon", eps, "pass e.g. epsilon=0.8")


def ofaa_degree_sensitivities(row_l1: float) -> tuple[float, float]:
    """l1 sensitivities of the degree-1 and degree-2 Taylor coefficients (sum over records) of the logistic
    loss at 0 under replacement of one record: ``(row_l1, row_l1^2 / 4)`` (module docstring)."""
    r = _positive("row_l1", row_l1, "pass unit_ball_row_l1(dim, bound)")
    return r, r * r / 4.0


def ofaa_laplace_scale(eps: float, row_l1: float) -> tuple[float, tuple[float, float]]:
    """Laplace scale for every perturbed coefficient and the budget per degree ``(eps_1, eps_2)``.

    Degree j gets ``eps_j = eps * Delta_j / (Delta_1 + Delta_2)``, so both degrees get the scale
    ``(Delta_1 + Delta_2) / eps`` and, by basic composition over the two degrees, the release is ``eps``-DP.
    """
    eps = _positive("epsilon", eps, "pass e.g. epsilon=0.8")
    d1, d2 = ofaa_degree_sensitivities(row_l1)
    total = d1 + d2
    return total / eps, (eps * d1 / total, eps * d2 / total)
