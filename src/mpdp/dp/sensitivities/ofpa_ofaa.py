"""Sensitivities of paper 001 (Du, Li, Li): OFPA objective perturbation, Algorithm 1 output perturbation, OFAA.

Setting. A party holds ``n`` records ``(x_i, y_i)``, ``y_i`` in {-1, +1}, with the intercept folded into the
features as one more attribute: ``x_i = [x_raw_i, 1] / sqrt(B^2 + 1)`` with ``B`` a public bound on
``||x_raw_i||_2``, so that ``||x_i||_2 <= 1`` (the paper's normalisation, stated in the proof of its Theorem 2)
and the intercept coordinate is the constant ``h = 1 / sqrt(B^2 + 1)`` (:func:`intercept_weight`). Neighbouring
datasets differ in one record (replacement), so ``n`` is public.

``row_l1`` is a public bound on ``||x_i||_1``. With only the l2 bound it is ``sqrt(D)`` for ``D`` augmented
features. With a schema whose raw entries lie in [-1, 1] and in which at most ``B^2`` of them can be non-zero
(numeric attributes, plus one per one-hot block: ``B^2`` is the number of attributes,
:meth:`mpdp.datasets.dataset.Dataset.row_norm_bound`), ``||x_raw||_1 <= B^2``, so ``||x||_1 <= (B^2 + 1) h =
sqrt(B^2 + 1)``: on Adult sqrt(15) = 3.87 for 106 augmented columns, not sqrt(106) = 10.3
(:func:`unit_ball_row_l1`). Giving the intercept the weight of one attribute (rather than the ``1/sqrt(2)`` of
``[x / B, 1] / sqrt(2)``, which made it 3.7 times heavier than any attribute) lowers the degree-2 sensitivity
relative to the feature-feature coefficients by about 30%; the released model is the same function of the data
up to the scale of its intercept coordinate.

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
  sensitivities for the order-2 expansion ``ln 2 - (y/2) z + z^2 / 8`` of ``log(1 + e^{-y z})``, ``z = w.x``
  (:func:`ofaa_degree_sensitivities`):

  - degree 1, coefficients ``-(y/2) x``: a record contributes l1 ``||x||_1 / 2``; replacing it changes the sum
    by at most ``2 * row_l1 / 2 = row_l1``;
  - degree 2, coefficients of ``w_a w_b`` (a <= b) ``x_a x_b / 8`` on the diagonal and ``2 x_a x_b / 8`` off it:
    a record contributes l1 ``(sum_a |x_a|)^2 / 8 = ||x||_1^2 / 8``. The intercept's diagonal coefficient is
    ``h^2 / 8`` for *every* record, so it cancels under replacement and is released exactly (``n h^2 / 8``);
    what is left changes by at most ``2 (row_l1^2 - h^2) / 8 = (row_l1^2 - h^2) / 4``;
  - degree 0 (``n ln 2``) is data independent.

  Coefficients that are the same for every row of the declared domain carry no information and get no noise:
  ``x_a x_b = 0`` for two columns of one one-hot block, the intercept's diagonal. They do not change the
  bound above (they add 0 to every record's l1 mass), they only remove noise from the released polynomial.

  The budget is split between the degrees to minimise the total noise variance
  ``sum_j m_j 2 (Delta_j / eps_j)^2`` over the ``m_j`` noisy coefficients of degree ``j``: by Lagrange,
  ``eps_j`` proportional to ``(m_j Delta_j^2)^(1/3)`` (:func:`ofaa_budget`). On Adult (106 linear, 4,564 noisy
  quadratic coefficients) that gives degree 1 about 23% of ``eps``; the paper's and the functional mechanism's
  equal-scale split (``eps_j`` proportional to ``Delta_j``) gives it half, where its noise hardly matters, and
  leaves the quadratic form, whose noise decides the accuracy, 1.6 times as noisy.

Every bound is a supremum over the declared domain (``tests/dp/sensitivities/test_ofpa_ofaa.py`` tries
adversarial rows: extreme numeric values, every one-hot pattern), never over the data at hand.

Repeated rounds compose: these functions price one release; callers compose rounds (see
:mod:`mpdp.learning.ofpa_ofaa.model`).

References
----------
Du, Li, Li, "Privacy-Preserving Multiparty Learning for Logistic Regression" (paper 001, SecureComm 2018),
Theorems 2, 3, eq. (35); Chaudhuri, Monteleoni, Sarwate, "Differentially Private Empirical Risk Minimization",
JMLR 12 (2011), Algorithm 2 and Theorem 6; Zhang et al., "Functional Mechanism", VLDB 2012, Lemma 1;
Wang, "Revisiting differentially private linear regression", NeurIPS 2018 (AdaSSP: ridge of the order of
the noise of the perturbed second-moment matrix), for :func:`ofaa_ridge`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpdp.errors import ParameterError, explain
from mpdp.numeric import positive_finite

__all__ = [
    "LOGISTIC_CURVATURE",
    "OfaaBudget",
    "OfpaPlan",
    "intercept_weight",
    "ofaa_budget",
    "ofaa_degree_sensitivities",
    "ofpa_l1_sensitivity",
    "ofpa_plan",
    "output_l1_sensitivity",
    "output_laplace_scale",
    "unit_ball_row_l1",
]

#: Upper bound on the second derivative of the logistic loss ``log(1 + e^{-z})``.
LOGISTIC_CURVATURE = 0.25


def _positive(name: str, value: float, fix: str) -> float:
    return positive_finite(value, name, fix)


def _count(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ParameterError(explain(name, value, "an int >= 1", f"pass the public {name}"))
    return value


def intercept_weight(l2_bound: float) -> float:
    """The constant intercept coordinate ``h = 1 / sqrt(B^2 + 1)`` of ``[x_raw, 1] / sqrt(B^2 + 1)``."""
    b = _positive("l2_bound", l2_bound, "pass Dataset.row_norm_bound")
    return 1.0 / math.sqrt(b * b + 1.0)


def unit_ball_row_l1(dim: int, l2_bound: float | None = None) -> float:
    """Public l1 bound of ``[x_raw, 1] / sqrt(B^2 + 1)`` (``dim`` augmented features, ``B = l2_bound``).

    ``sqrt(dim)`` from the l2 bound alone (Cauchy-Schwarz). When ``l2_bound`` comes from a schema whose raw
    entries lie in [-1, 1] with at most ``B^2`` of them non-zero (:meth:`Dataset.row_norm_bound
    <mpdp.datasets.dataset.Dataset.row_norm_bound>`: numeric attributes and one 1 per one-hot block),
    ``||x_raw||_1 <= B^2`` and the bound is ``(B^2 + 1) / sqrt(B^2 + 1) = sqrt(B^2 + 1)``.
    """
    dim = _count("dim", dim)
    generic = math.sqrt(dim)
    if l2_bound is None:
        return generic
    b = _positive("l2_bound", l2_bound, "pass Dataset.row_norm_bound")
    return min(generic, math.sqrt(b * b + 1.0))


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


def ofaa_degree_sensitivities(row_l1: float, intercept: float = 0.0) -> tuple[float, float]:
    """l1 sensitivities of the degree-1 and degree-2 Taylor coefficients (sum over records) of the logistic
    loss at 0 under replacement of one record: ``(row_l1, (row_l1^2 - h^2) / 4)`` where ``h = intercept`` is a
    coordinate equal to ``h`` in every row (its diagonal coefficient ``h^2 / 8`` cancels; module docstring).
    ``intercept=0`` gives the bound without that knowledge, ``row_l1^2 / 4``."""
    r = _positive("row_l1", row_l1, "pass unit_ball_row_l1(dim, bound)")
    if not isinstance(intercept, (int, float)) or not 0.0 <= intercept <= r:
        raise ParameterError(explain("intercept", intercept, f"a number in [0, row_l1 = {r}]",
                                     "pass intercept_weight(bound), or 0 when no coordinate is constant"))
    return r, (r * r - float(intercept) ** 2) / 4.0


@dataclass(frozen=True)
class OfaaBudget:
    """One OFAA release: the budget of each degree and the Laplace scale of each of its coefficients."""

    eps_linear: float
    eps_quadratic: float
    scale_linear: float
    scale_quadratic: float


def ofaa_budget(eps: float, row_l1: float, intercept: float, n_linear: int, n_quadratic: int) -> OfaaBudget:
    """Split ``eps`` between the degree-1 and degree-2 coefficients to minimise the total noise variance.

    With ``m_j`` noisy coefficients of l1 sensitivity ``Delta_j`` (:func:`ofaa_degree_sensitivities`) and Laplace
    scales ``Delta_j / eps_j``, the variance ``sum_j 2 m_j Delta_j^2 / eps_j^2`` under ``eps_1 + eps_2 = eps`` is
    smallest at ``eps_j`` proportional to ``(m_j Delta_j^2)^(1/3)``. Each degree is ``eps_j``-DP (Laplace
    mechanism), so the release is ``eps``-DP by basic composition; the split depends on public numbers only.
    """
    eps = _positive("epsilon", eps, "pass e.g. epsilon=0.8")
    m1 = _count("n_linear", n_linear)
    m2 = n_quadratic
    if not isinstance(m2, int) or isinstance(m2, bool) or m2 < 0:
        raise ParameterError(explain("n_quadratic", m2, "an int >= 0", "count the noisy degree-2 coefficients"))
    d1, d2 = ofaa_degree_sensitivities(row_l1, intercept)
    if m2 == 0 or d2 == 0.0:  # nothing data dependent of degree 2: the whole budget goes to degree 1
        return OfaaBudget(eps_linear=eps, eps_quadratic=0.0, scale_linear=d1 / eps, scale_quadratic=0.0)
    w1 = (m1 * d1 * d1) ** (1.0 / 3.0)
    w2 = (m2 * d2 * d2) ** (1.0 / 3.0)
    eps1 = eps * w1 / (w1 + w2)
    eps2 = eps - eps1
    return OfaaBudget(eps_linear=eps1, eps_quadratic=eps2, scale_linear=d1 / eps1, scale_quadratic=d2 / eps2)
