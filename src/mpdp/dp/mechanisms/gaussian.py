"""The Gaussian mechanism (released on a grid) and the discrete Gaussian mechanism."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpdp.dp._exact import as_rational
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.accounting.zcdp import zcdp_epsilon, zcdp_rho_for
from mpdp.dp.calibration import (
    analytic_gaussian_sigma,
    check_delta,
    check_epsilon,
    check_positive,
    classic_gaussian_sigma,
    gaussian_epsilon,
    gaussian_rho,
)
from mpdp.dp.grid import default_grid_bits, grid_l2_sensitivity, snap_to_grid
from mpdp.dp.mechanisms._base import check_dim, grid_release, integer_array, integer_release, prepare_release
from mpdp.dp.samplers import discrete_gaussian
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource

__all__ = ["CALIBRATIONS", "DiscreteGaussianMechanism", "GaussianMechanism"]

CALIBRATIONS = ("analytic", "classic", "zcdp")


def _sigma_for(method: str, *, epsilon: float, delta: float, sensitivity: float) -> float:
    if not isinstance(method, str):
        raise ParameterError(explain("method", method, f"one of {CALIBRATIONS}", "pass method='analytic'"))
    if method == "analytic":
        return analytic_gaussian_sigma(sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    if method == "classic":
        return classic_gaussian_sigma(sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    if method == "zcdp":
        rho = zcdp_rho_for(epsilon=epsilon, delta=delta)
        return sensitivity / math.sqrt(2 * rho)
    raise ParameterError(explain("method", method, f"one of {CALIBRATIONS}", "pass method='analytic'"))


@dataclass(frozen=True, kw_only=True)
class GaussianMechanism:
    """Release of a real vector with L2 sensitivity Δ by Gaussian noise of std ``sigma``, on a grid.

    Construct directly from ``sigma`` or with :meth:`calibrated` from an (ε, δ) target.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the query, > 0.
    sigma : float
        Noise standard deviation, > 0.
    delta : float
        The δ in (0, 1) at which :attr:`epsilon` is reported.
    dim : int
        Number of coordinates released (default 1): snapping to the grid adds ``sqrt(dim) 2^-k`` to the L2
        sensitivity, and the reported costs include it. A release with more coordinates is refused.
    grid_bits : int, optional
        Release grid ``2^-grid_bits``; default about ``2^40`` steps per σ.

    Security
    --------
    The noise is an exact discrete Gaussian on the grid (:mod:`mpdp.dp.grid`), immune to floating-point
    attacks. Its Rényi divergences are bounded by the continuous Gaussian's with the grid-inflated
    sensitivity (Canonne, Kamath, Steinke 2020, Prop 5, per coordinate), so :attr:`rho` is a proven ρ-zCDP
    guarantee. :attr:`epsilon` is the exact (ε, δ) curve of the *continuous* Gaussian with that sensitivity
    (Balle & Wang 2018); the discrete noise on a grid 2^40 times finer than σ has the same privacy profile
    up to terms of relative order 2^-40 (CKS 2020, Sec. 2.3). Use ``method="zcdp"`` when a guarantee that is
    proven for the discrete noise end to end is required: its ε comes from ρ by the tight conversion.

    Accuracy
    --------
    Each coordinate gets variance at most σ^2 (the discrete Gaussian's variance is below σ^2, CKS Prop 19).

    References
    ----------
    Dwork & Roth 2014, App. A; Balle & Wang, "Improving the Gaussian mechanism", ICML 2018;
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
    """

    sensitivity: float
    sigma: float
    delta: float
    dim: int = 1
    grid_bits: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_positive(
            self.sensitivity, "sensitivity", "pass the L2 sensitivity (> 0); a zero-sensitivity query needs no noise"))
        object.__setattr__(self, "sigma", check_positive(self.sigma, "sigma"))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        object.__setattr__(self, "dim", check_dim(self.dim))
        gaussian_rho(sigma=self.sigma, sensitivity=self.sensitivity)  # refuses a sigma whose square underflows
        if self.grid_bits is None:
            object.__setattr__(self, "grid_bits", default_grid_bits(self.sigma, self.sensitivity))

    @classmethod
    def calibrated(
        cls,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float,
        method: str = "analytic",
        dim: int = 1,
        grid_bits: int | None = None,
    ) -> GaussianMechanism:
        """The mechanism with the smallest σ meeting (ε, δ) under ``method`` ("analytic", "classic", "zcdp").

        The calibration uses the grid-inflated sensitivity, so the reported :attr:`epsilon` is at most ``epsilon``.
        """
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta, allow_zero=False)
        sens = check_positive(sensitivity, "sensitivity")
        d = check_dim(dim)
        nominal = _sigma_for(method, epsilon=eps, delta=dlt, sensitivity=sens)
        k = default_grid_bits(nominal, sens) if grid_bits is None else grid_bits
        effective = grid_l2_sensitivity(sens, k, d) * 2.0**-k
        sigma = _sigma_for(method, epsilon=eps, delta=dlt, sensitivity=effective)
        mech = cls(sensitivity=sens, sigma=sigma, delta=dlt, dim=d, grid_bits=k)
        # The reported epsilon is evaluated from sigma again; at tiny epsilon it carries ~1e-16 of absolute
        # rounding noise (delta depends on epsilon only in its last digits) and may land an ulp-level step above
        # the target. Widen sigma by relative 2^-30, 2^-29, ... until it does not: at most a 1e-9-level change.
        step = 2.0**-30
        while mech.epsilon > eps and step < 1:
            mech = cls(sensitivity=sens, sigma=mech.sigma * (1 + step), delta=dlt, dim=d, grid_bits=k)
            step *= 2
        return mech

    @property
    def effective_sensitivity(self) -> float:
        """L2 sensitivity after snapping ``dim`` coordinates to the grid (``Δ + sqrt(dim) 2^-k``)."""
        k = int(self.grid_bits or 0)
        return grid_l2_sensitivity(self.sensitivity, k, self.dim) * 2.0**-k

    @property
    def rho(self) -> float:
        """Proven ρ-zCDP of one release."""
        s = self.effective_sensitivity
        return s * s / (2 * self.sigma * self.sigma)

    @property
    def epsilon(self) -> float:
        """ε at :attr:`delta`: the smaller of the exact Gaussian curve and the zCDP conversion."""
        exact = gaussian_epsilon(sigma=self.sigma, sensitivity=self.effective_sensitivity, delta=self.delta)
        return min(exact, zcdp_epsilon(self.rho, self.delta))

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self.epsilon, delta=self.delta, rho=self.rho, mechanism="gaussian",
                           noise_multiplier=self.sigma / self.effective_sensitivity)

    def release(
        self,
        value: Any,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "gaussian",
    ) -> Any:
        """The noisy value (same shape, float64 on the grid); charges ``ledger`` first if given."""
        k = int(self.grid_bits or 0)
        units = snap_to_grid(value, k)
        if units.size > self.dim:
            raise ShapeMismatchError(
                explain("value", f"{units.size} coordinates", f"at most dim={self.dim}",
                        f"construct the mechanism with dim={units.size} (the grid adds sqrt(dim) 2^-k to Δ)")
            )
        source = prepare_release(rng, ledger, self.cost, label, "GaussianMechanism")
        s = as_rational(self.sigma, "sigma") * Fraction(2) ** k
        return grid_release(units, discrete_gaussian(s * s, units.shape, rng=source), k)


@dataclass(frozen=True, kw_only=True)
class DiscreteGaussianMechanism:
    """Release of an integer vector by exact discrete Gaussian noise N_Z(0, σ^2) per coordinate.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the integer-valued query, > 0.
    sigma : float
        Scale parameter σ (the noise pmf is ∝ exp(-y^2 / (2σ^2)); σ^2 taken at its exact binary value).
    delta : float
        The δ in (0, 1) at which :attr:`epsilon` is reported.

    Security
    --------
    ρ = Δ^2 / (2σ^2)-zCDP (CKS 2020, Prop 5 and Thm 15 for vectors); :attr:`epsilon` is converted from ρ
    by the tight conversion (CKS Prop 12), a proven guarantee.

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
    """

    sensitivity: float
    sigma: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "sigma", check_positive(self.sigma, "sigma"))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        gaussian_rho(sigma=self.sigma, sensitivity=self.sensitivity)  # refuses a sigma whose square underflows

    @classmethod
    def calibrated(cls, *, epsilon: float, delta: float, sensitivity: float) -> DiscreteGaussianMechanism:
        """The smallest σ whose zCDP guarantee converts (tightly) to (ε, δ)."""
        sens = check_positive(sensitivity, "sensitivity")
        rho = zcdp_rho_for(epsilon=check_epsilon(epsilon), delta=check_delta(delta, allow_zero=False))
        return cls(sensitivity=sens, sigma=math.nextafter(sens / math.sqrt(2 * rho), math.inf), delta=delta)

    @property
    def sigma2(self) -> Fraction:
        s = as_rational(self.sigma, "sigma")
        return s * s

    @property
    def rho(self) -> float:
        return self.sensitivity**2 / (2 * self.sigma**2)

    @property
    def epsilon(self) -> float:
        return zcdp_epsilon(self.rho, self.delta)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self.epsilon, delta=self.delta, rho=self.rho, mechanism="discrete_gaussian",
                           noise_multiplier=self.sigma / self.sensitivity)

    def release(
        self,
        value: Any,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "discrete_gaussian",
    ) -> Any:
        """The noisy integers (same shape; int64, or Python ints where a value leaves int64), computed exactly;
        charges ``ledger`` first if given."""
        x = integer_array(value)
        source = prepare_release(rng, ledger, self.cost, label, "DiscreteGaussianMechanism")
        return integer_release(x, discrete_gaussian(self.sigma2, x.shape, rng=source))
