"""Objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011) and its gamma-norm noise.

CMS11 Algorithm 2 privately minimises ``J(f) = (1/n) Σ ℓ(y_i f^T x_i) + (Λ/2) ||f||^2`` by minimising instead
``J(f) + b^T f / n + (Δ/2) ||f||^2`` where ``b`` has density ``∝ exp(-(ε'/2) ||b||)``. Such a ``b`` is a uniform
direction times a norm ``||b|| ~ Gamma(d, 2/ε')`` (shape d, scale 2/ε'): in polar coordinates the density
``r^(d-1) exp(-β r)`` of the norm is the Gamma(d, 1/β) density.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.calibration import check_epsilon, check_positive
from mpdp.dp.mechanisms._base import check_dim, prepare_release
from mpdp.dp.samplers import discrete_gaussian
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["ObjectivePerturbation", "gamma_norm_noise"]

# Direction coordinates are discrete Gaussians with sigma = 2^30: the lattice is 2^30 times finer than the
# spread, so the normalised direction is uniform on the sphere up to a discretisation far below double precision.
_DIRECTION_SIGMA2 = 1 << 60


def gamma_norm_noise(
    dim: int, beta: float, size: int | None = None, *, rng: RandomSource | None = None
) -> npt.NDArray[np.float64]:
    """Vectors ``b`` in R^dim with density ``∝ exp(-beta ||b||)`` (shape ``(dim,)`` or ``(size, dim)``).

    Generation (see Security): norm ``R = (1/beta) Σ_{j<dim} E_j`` with ``E_j = -ln U_j`` i.i.d. Exp(1) (a
    Gamma(dim, 1/beta) variable), ``U_j`` 53-bit uniforms in (0, 1) from the CSPRNG (never 0, so no infinite
    log); direction ``g / ||g||`` with ``g`` a vector of exact discrete Gaussians of σ = 2^30.

    Security
    --------
    Every bit comes from the injected CSPRNG and no step divides by a random quantity near zero (``||g||`` is
    about ``2^30 sqrt(dim)``). The noise is continuous-valued by necessity: the privacy proof of objective
    perturbation is a change of variables on a density, which a lattice-valued ``b`` would not have. It is
    not released additively: it perturbs an objective whose minimiser, computed by an iterative solver with
    tolerance far above 2^-52, is what leaves the party, so the low-order-bit attack of Mironov (2012) on
    ``x + noise`` does not apply directly. Callers should still release the minimiser rounded to a grid
    coarser than the solver tolerance. The float evaluation of ``ln`` perturbs each E_j by a relative
    2^-52 at most; this is the residual (documented, not eliminated) floating-point effect.
    """
    d = check_dim(dim)
    b = check_positive(beta, "beta", "pass beta = epsilon'/2 (CMS11) or the rate of the norm")
    source = resolve(rng)
    count = 1 if size is None else size
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0 or count * d > 1 << 27:
        raise ParameterError(explain("size", size, "None or an int >= 0 (at most 2^27 values in all)",
                                     "pass e.g. size=10"))
    count = int(count)
    u = source.random_open((count, d))
    norms = -np.log(u).sum(axis=1) / b
    g = np.asarray(discrete_gaussian(_DIRECTION_SIGMA2, (count, d), rng=source), dtype=np.float64)
    lengths = np.linalg.norm(g, axis=1)
    zero = lengths == 0  # probability about (2^-30)^dim: redraw
    while zero.any():
        g[zero] = np.asarray(discrete_gaussian(_DIRECTION_SIGMA2, (int(zero.sum()), d), rng=source), dtype=np.float64)
        lengths = np.linalg.norm(g, axis=1)
        zero = lengths == 0
    out: npt.NDArray[np.float64] = g * (norms / lengths)[:, None]
    return out[0] if size is None else out


@dataclass(frozen=True, kw_only=True)
class ObjectivePerturbation:
    """Parameters and noise of CMS11 Algorithm 2 (objective perturbation) for regularised linear ERM.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, > 0.
    n_samples : int
        Number of records n in the objective.
    regularization : float
        Λ > 0, the coefficient of ``(Λ/2)||f||^2``.
    smoothness : float
        c >= |ℓ''| (1/4 for logistic loss, 1/(2h) for Huber SVM with bandwidth h).

    Notes
    -----
    Requires ``||x_i|| <= 1`` and ``|ℓ'| <= 1``. Then ``ε' = ε - ln(1 + 2c/(nΛ) + c^2/(n^2 Λ^2))``; if ``ε' > 0``
    no extra regulariser is needed, otherwise ``Δ = c / (n (e^(ε/4) - 1)) - Λ`` and ``ε' = ε/2``. The released
    minimiser of ``J(f) + b^T f/n + (Δ/2)||f||^2`` with ``b ~`` :meth:`noise` is ε-DP (CMS11, Thm 9).

    References
    ----------
    K. Chaudhuri, C. Monteleoni, A. Sarwate, "Differentially private empirical risk minimization", JMLR 2011.
    """

    epsilon: float
    n_samples: int
    regularization: float
    smoothness: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if isinstance(self.n_samples, bool) or not isinstance(self.n_samples, int | np.integer) or self.n_samples < 1:
            raise ParameterError(explain("n_samples", self.n_samples, "an int >= 1", "pass the number of records"))
        object.__setattr__(self, "n_samples", int(self.n_samples))
        object.__setattr__(self, "regularization", check_positive(self.regularization, "regularization"))
        object.__setattr__(self, "smoothness", check_positive(self.smoothness, "smoothness",
                                                              "pass c >= |loss''|, e.g. 0.25 for logistic loss"))

    @property
    def _slack(self) -> float:
        ratio = self.smoothness / (self.n_samples * self.regularization)
        return math.log1p(2 * ratio + ratio * ratio)

    @property
    def epsilon_prime(self) -> float:
        """ε' of CMS11 Algorithm 2."""
        eps_p = self.epsilon - self._slack
        return eps_p if eps_p > 0 else self.epsilon / 2

    @property
    def extra_regularization(self) -> float:
        """Δ of CMS11 Algorithm 2 (0 when ε' > 0 without it)."""
        if self.epsilon - self._slack > 0:
            return 0.0
        return self.smoothness / (self.n_samples * math.expm1(self.epsilon / 4)) - self.regularization

    @property
    def beta(self) -> float:
        """Rate of the noise density ``exp(-beta ||b||)``: ``ε'/2``."""
        return self.epsilon_prime / 2

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self.epsilon, delta=0.0, rho=self.epsilon**2 / 2, mechanism="objective_perturbation")

    def noise(
        self,
        dim: int,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "objective_perturbation",
    ) -> npt.NDArray[np.float64]:
        """The vector ``b`` for one private fit of a ``dim``-parameter model; charges ``ledger`` first."""
        source = prepare_release(rng, ledger, self.cost, label, "ObjectivePerturbation")
        return gamma_norm_noise(dim, self.beta, rng=source)
