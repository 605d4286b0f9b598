"""Sensitivities and noise scales of regularised ERM in the multiparty setting (paper 003, Table 1).

Setting (003 section 3): ``m`` parties, party ``j`` holds ``n_j`` records in the unit ball, ``n(1) = min_j n_j``;
the loss is ``G``-Lipschitz (and ``L``-smooth) in ``theta``; the objective ``J`` is ``lam``-strongly convex.
Neighbouring data sets differ in one record of one party (replace-one).

Sensitivities (all in the l2 norm):

* minimiser of one party's ERM: ``2G / (n lam)`` (Chaudhuri, Monteleoni, Sarwate 2011, Corollary 8);
* average over ``m`` parties of their minimisers: ``2G / (m n(1) lam)`` (003 Theorem 3.1);
* one party's averaged gradient ``(1/n) sum_i grad loss``: ``2G / n``;
* the party-averaged gradient ``(1/m) sum_j (1/n_j) sum_i grad loss``: ``2G / (m n(1))`` (003 Theorem 3.4 proof).

Table 1 of 003 prints one noise scale per method. Each is a named function here, computed exactly as printed:
Laplace scales ``b`` (standard deviation ``sqrt(2) b``) and Gaussian standard deviations ``sigma``. The printed
Gaussian columns equal the zCDP calibration with ``rho = eps^2`` (``sigma = sqrt(2T) Delta / (2 eps)`` with
``Delta = 2G/n(1)`` resp. ``2G/(m n(1))``), not Theorem 3.4's ``sigma^2 = 8 G^2 T log(1/delta) / (m^2 n(1)^2
eps^2)``; both are here. Two places where the paper's analysis is loose, and what mpdp does instead:

1. Laplace noise added coordinate-wise with scale ``Delta_2 / eps`` is eps-DP only for ``d = 1``: the Laplace
   mechanism needs the l1 sensitivity, and ``Delta_1 <= sqrt(d) Delta_2`` is all the l2 analysis gives.
   :func:`laplace_scale_for_l2` returns the sound coordinate-wise scale ``sqrt(d) Delta_2 / eps``; training uses
   it, Table 1 (a scalar table) prints the paper's numbers.
2. Theorem 3.4 solves ``rho + 2 sqrt(rho log(1/delta)) = eps`` by dropping ``rho``; its sigma therefore reaches
   ``eps + eps^2 / (4 log(1/delta))`` (0.509 for eps = 0.5, delta = 1e-3), not eps.
   :func:`zcdp_rho_for_epsilon` solves the quadratic exactly and :func:`gaussian_sigma_for_zcdp` calibrates by it.

References
----------
Paper 003 (Jayaraman et al., NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`) sections 3.1-3.2 and Table 1
(its Gaussian columns read as rho = eps^2 zCDP:
:func:`mpdp.learning.distributed_erm.experiments.reproduce_table1`); Chaudhuri et al., JMLR 12 (2011); Bun and
Steinke, TCC 2016, Lemmas 2.1-2.3 as quoted in 003.
"""

from __future__ import annotations

import math

import numpy as np

from mpdp.errors import ParameterError, explain
from mpdp.numeric import positive_finite

__all__ = [
    "TABLE1_METHODS",
    "averaged_gradient_sensitivity",
    "averaged_minimizer_sensitivity",
    "epsilon_of_zcdp",
    "gaussian_sigma_for_zcdp",
    "gradient_sensitivity",
    "laplace_scale_for_l2",
    "local_gradp_sigma",
    "local_objp_laplace_scale",
    "local_outp_laplace_scale",
    "minimizer_sensitivity",
    "mpc_gradp_sigma",
    "mpc_gradp_sigma_theorem34",
    "mpc_outp_laplace_scale",
    "pathak_laplace_scale",
    "zcdp_rho_for_epsilon",
]

#: Table 1's columns in the paper's order, with the noise family each uses.
TABLE1_METHODS: tuple[tuple[str, str], ...] = (
    ("Pathak", "laplace"),
    ("Local Out P", "laplace"),
    ("Local Obj P", "laplace"),
    ("Local Grad P", "gaussian"),
    ("MPC Out P", "laplace"),
    ("MPC Grad P", "gaussian"),
)


# -- validation -------------------------------------------------------------------------------------------
def _positive(name: str, value: float, fix: str) -> float:
    return positive_finite(value, name, fix)


def _count(name: str, value: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ParameterError(explain(name, value, "an integer >= 1", fix))
    return int(value)


def _lipschitz(G: float) -> float:
    return _positive("G", G, "pass the loss's Lipschitz constant, e.g. G=1 for logistic loss on the unit ball")


def _lam(lam: float) -> float:
    return _positive("lambda", lam, "pass a positive regularisation (strong convexity), e.g. lam=1e-3")


def _eps(eps: float) -> float:
    return _positive("epsilon", eps, "pass the privacy budget as a positive float, e.g. epsilon=0.5")


def _delta(delta: float) -> float:
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise ParameterError(explain("delta", delta, "0 < delta < 1", "pass e.g. delta=1e-5 (below 1/n)"))
    return d


def _n(n: int, name: str = "n(1)") -> int:
    return _count(name, n, "every party needs at least one record; pass the smallest party's record count")


def _m(m: int) -> int:
    return _count("m", m, "pass the number of parties, e.g. m=100")


def _iterations(T: int) -> int:
    return _count("T", T, "pass the number of gradient-descent iterations, e.g. T=1500")


# -- sensitivities -----------------------------------------------------------------------------------------
def minimizer_sensitivity(G: float, n: int, lam: float) -> float:
    """l2 sensitivity ``2G / (n lam)`` of the minimiser of a ``lam``-strongly convex ERM over ``n`` records.

    Assumes a ``G``-Lipschitz loss, records in the unit ball, replace-one neighbours (Chaudhuri et al. 2011,
    Corollary 8). Also bounds every gradient-descent iterate started from a fixed point when the step size
    makes the update a contraction, which is why T-step local training may use it too.
    """
    return 2.0 * _lipschitz(G) / (_n(n, "n") * _lam(lam))


def averaged_minimizer_sensitivity(G: float, m: int, n_min: int, lam: float) -> float:
    """l2 sensitivity ``2G / (m n(1) lam)`` of the mean of ``m`` parties' minimisers (003 Theorem 3.1)."""
    return minimizer_sensitivity(G, n_min, lam) / _m(m)


def gradient_sensitivity(G: float, n: int) -> float:
    """l2 sensitivity ``2G / n`` of one party's mean gradient ``(1/n) sum_i grad loss(theta; x_i, y_i)``."""
    return 2.0 * _lipschitz(G) / _n(n, "n")


def averaged_gradient_sensitivity(G: float, m: int, n_min: int) -> float:
    """l2 sensitivity ``2G / (m n(1))`` of ``(1/m) sum_j (1/n_j) sum_i grad loss`` (003 Theorem 3.4 proof)."""
    return gradient_sensitivity(G, n_min) / _m(m)


def laplace_scale_for_l2(l2_sensitivity: float, eps: float, d: int) -> float:
    """Coordinate-wise Laplace scale ``sqrt(d) Delta_2 / eps`` that is eps-DP given only an l2 sensitivity.

    The Laplace mechanism needs the l1 sensitivity; ``||v||_1 <= sqrt(d) ||v||_2`` bounds it.
    """
    return math.sqrt(_count("d", d, "pass the model dimension")) * _positive(
        "l2_sensitivity", l2_sensitivity, "pass a finite sensitivity") / _eps(eps)


# -- zCDP (Bun-Steinke, as quoted in 003 section 2.1) ---------------------------------------------------
def epsilon_of_zcdp(rho: float, delta: float) -> float:
    """``rho + 2 sqrt(rho log(1/delta))``: the (eps, delta) of rho-zCDP by 003 Lemma 2.3."""
    r = _positive("rho", rho, "pass the zCDP parameter, e.g. rho=0.01")
    return r + 2.0 * math.sqrt(r * math.log(1.0 / _delta(delta)))


def zcdp_rho_for_epsilon(eps: float, delta: float) -> float:
    """The largest ``rho`` with ``epsilon_of_zcdp(rho, delta) <= eps``, solving the quadratic exactly.

    With ``L = log(1/delta)``: ``sqrt(rho) = sqrt(L + eps) - sqrt(L)``.
    """
    L = math.log(1.0 / _delta(delta))
    e = _eps(eps)
    root = e / (math.sqrt(L + e) + math.sqrt(L))  # = sqrt(L + eps) - sqrt(L), without cancellation
    return root * root


def gaussian_sigma_for_zcdp(l2_sensitivity: float, T: int, eps: float, delta: float) -> float:
    """sigma such that T Gaussian releases of sensitivity ``Delta`` are (eps, delta)-DP through zCDP.

    Each release is ``Delta^2 / (2 sigma^2)``-zCDP (Lemma 2.1), T compose additively (Lemma 2.2), and
    :func:`zcdp_rho_for_epsilon` converts exactly (Lemma 2.3): ``sigma = Delta sqrt(T / (2 rho))``.
    """
    delta2 = _positive("l2_sensitivity", l2_sensitivity, "pass a finite sensitivity")
    rho = zcdp_rho_for_epsilon(eps, delta)
    return delta2 * math.sqrt(_iterations(T) / (2.0 * rho))


# -- Table 1, exactly as printed ------------------------------------------------------------------------
def pathak_laplace_scale(G: float, n_min: int, lam: float, eps: float) -> float:
    """Pathak et al.: ``Lap(2G / (n(1) lam eps))`` added once to the average of the local minimisers."""
    return minimizer_sensitivity(G, n_min, lam) / _eps(eps)


def local_outp_laplace_scale(G: float, m: int, n_min: int, lam: float, eps: float) -> float:
    """Local Out P: ``Lap(2G / (sqrt(m) n(1) lam eps))``, Table 1's effective scale of the averaged noise.

    Each party adds ``Lap(2G / (n_j lam eps))`` to its own minimiser; averaging m independent copies divides
    the standard deviation by ``sqrt(m)``, which is how the table states it.
    """
    return minimizer_sensitivity(G, n_min, lam) / (math.sqrt(_m(m)) * _eps(eps))


def local_objp_laplace_scale(G: float, n_min: int, eps: float) -> float:
    """Local Obj P: ``Lap(2G / (n(1) eps))``, the scale of the linear perturbation ``b / n`` of the objective.

    This is Chaudhuri et al.'s objective perturbation with the full budget in the noise (``eps' = eps``);
    training uses their Algorithm 2, which may spend part of eps on an extra regulariser.
    """
    return 2.0 * _lipschitz(G) / (_n(n_min) * _eps(eps))


def local_gradp_sigma(G: float, m: int, n_min: int, eps: float, T: int) -> float:
    """Local Grad P: ``N(sqrt(2T) G / (sqrt(m) n(1) eps))`` as printed (rho = eps^2 zCDP; averaged noise)."""
    return math.sqrt(2.0 * _iterations(T)) * _lipschitz(G) / (math.sqrt(_m(m)) * _n(n_min) * _eps(eps))


def mpc_outp_laplace_scale(G: float, m: int, n_min: int, lam: float, eps: float) -> float:
    """MPC Out P: ``Lap(2G / (m n(1) lam eps))`` (003 Theorem 3.1), added inside the secure computation."""
    return averaged_minimizer_sensitivity(G, m, n_min, lam) / _eps(eps)


def mpc_gradp_sigma(G: float, m: int, n_min: int, eps: float, T: int) -> float:
    """MPC Grad P: ``N(sqrt(2T) G / (m n(1) eps))`` as printed in Table 1 (rho = eps^2 zCDP)."""
    return math.sqrt(2.0 * _iterations(T)) * _lipschitz(G) / (_m(m) * _n(n_min) * _eps(eps))


def mpc_gradp_sigma_theorem34(G: float, m: int, n_min: int, eps: float, delta: float, T: int) -> float:
    """MPC Grad P by 003 Theorem 3.4: ``sigma^2 = 8 G^2 T log(1/delta) / (m^2 n(1)^2 eps^2)``.

    Reaches ``eps + eps^2 / (4 log(1/delta))`` rather than eps (module docstring, note 2); training calibrates
    with :func:`gaussian_sigma_for_zcdp` instead.
    """
    numerator = math.sqrt(8.0 * _iterations(T) * math.log(1.0 / _delta(delta))) * _lipschitz(G)
    return numerator / (_m(m) * _n(n_min) * _eps(eps))
