"""Gaussian mean-field variational inference over unconstrained parameters, and the Adam optimiser.

The variational posterior is ``q(theta) = N(mu, diag(exp(2 omega)))`` over the unconstrained parameters of
:class:`~mpdp.learning.dpvi.mixture.MixtureModel` (ADVI, Kucukelbir et al. 2017). One Monte Carlo sample
per step, reparameterised ``theta = mu + exp(omega) * eta`` with ``eta ~ N(0, I)`` (paper 002, section 2.2.1
and Eqs. 9-12), gives the ELBO gradients

    d ELBO / d mu    = g
    d ELBO / d omega = g * eta * exp(omega) + 1,

where ``g`` is the gradient w.r.t. ``theta`` of ``log p(X | theta) + log p(T(theta)) + log |J_T(theta)|`` and
``+ 1`` is the gradient of the Gaussian entropy ``sum omega``. DPVI (Jälkö et al. 2017) privatises only the
data term of ``g``: the noisy sum of clipped per-example gradients (scaled by ``1 / q`` for a minibatch drawn
at rate ``q``); everything else is data-independent and is added in the clear, and the ``omega`` gradient is
a post-processing of the same noisy ``g`` (``theta`` and ``eta`` are shared by the whole minibatch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource

__all__ = ["Adam", "AdamSettings", "MeanFieldGaussian"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class AdamSettings:
    """Adam (Kingma and Ba 2015) step size and moment decay rates; ascent on the ELBO."""

    learning_rate: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ParameterError(explain("learning_rate", self.learning_rate, "a finite number > 0", "pass e.g. 0.01"))
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ParameterError(explain(name, value, "a number in [0, 1)", f"pass e.g. {name}=0.9"))
        if not self.eps > 0:
            raise ParameterError(explain("eps", self.eps, "a number > 0", "pass e.g. 1e-8"))


class Adam:
    """Adam on a list of parameter arrays (updated in place, ascending)."""

    def __init__(self, shapes: list[tuple[int, ...]], settings: AdamSettings) -> None:
        self.settings = settings
        self.m = [np.zeros(s) for s in shapes]
        self.v = [np.zeros(s) for s in shapes]
        self.t = 0

    def ascend(self, params: list[FloatArray], grads: list[FloatArray]) -> None:
        s = self.settings
        self.t += 1
        c1, c2 = 1 - s.beta1**self.t, 1 - s.beta2**self.t
        for p, g, m, v in zip(params, grads, self.m, self.v, strict=True):
            if g.shape != p.shape:
                raise ShapeMismatchError(explain("gradient", g.shape, f"{p.shape}", "pass one gradient per array"))
            m *= s.beta1
            m += (1 - s.beta1) * g
            v *= s.beta2
            v += (1 - s.beta2) * g * g
            p += s.learning_rate * (m / c1) / (np.sqrt(v / c2) + s.eps)


class MeanFieldGaussian:
    """``q(theta) = N(mu, diag(exp(2 omega)))``; mutable state of an optimisation (copy with :meth:`copy`)."""

    def __init__(self, mu: FloatArray, omega: FloatArray) -> None:
        mu = np.array(mu, dtype=np.float64)
        omega = np.array(omega, dtype=np.float64)
        if mu.ndim != 1 or omega.shape != mu.shape:
            raise ShapeMismatchError(explain("(mu, omega)", (mu.shape, omega.shape), "two vectors of one length",
                                             "pass matching vectors"))
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(omega))):
            raise ParameterError(explain("(mu, omega)", "NaN or inf", "finite vectors", "reinitialise"))
        self.mu = mu
        self.omega = omega

    @classmethod
    def initial(cls, dim: int, *, rng: RandomSource, mu_scale: float = 0.5, std: float = 0.1) -> MeanFieldGaussian:
        """``mu ~ N(0, mu_scale^2)`` (breaks the symmetry between components), ``exp(omega) = std``.

        Drawn from public randomness: the initial posterior is data-independent.
        """
        if not (mu_scale >= 0 and std > 0):
            raise ParameterError(explain("(mu_scale, std)", (mu_scale, std), "mu_scale >= 0, std > 0", "e.g. 0.5, 0.1"))
        return cls(mu_scale * standard_normal(dim, rng=rng), np.full(dim, math.log(std)))

    @property
    def dim(self) -> int:
        return int(self.mu.size)

    def copy(self) -> MeanFieldGaussian:
        return MeanFieldGaussian(self.mu.copy(), self.omega.copy())

    def draw(self, rng: RandomSource) -> tuple[FloatArray, FloatArray]:
        """``(theta, eta)`` with ``theta = mu + exp(omega) eta`` and ``eta ~ N(0, I)`` from ``rng``."""
        eta = standard_normal(self.dim, rng=rng)
        return self.mu + np.exp(self.omega) * eta, eta

    def elbo_grads(self, g_theta: FloatArray, eta: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(d ELBO / d mu, d ELBO / d omega)`` from the gradient ``g_theta`` at ``theta(eta)``."""
        if g_theta.shape != self.mu.shape or eta.shape != self.mu.shape:
            raise ShapeMismatchError(explain("(g_theta, eta)", (g_theta.shape, eta.shape), f"{self.mu.shape} each",
                                             "pass the gradient at the sampled theta and its eta"))
        return g_theta, g_theta * eta * np.exp(self.omega) + 1.0
