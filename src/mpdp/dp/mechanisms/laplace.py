"""The Laplace mechanism (released on a grid) and the discrete Laplace mechanism, both pure ε-DP."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpdp.dp._exact import as_rational
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.calibration import check_epsilon, check_positive
from mpdp.dp.grid import default_grid_bits, grid_l1_sensitivity, snap_to_grid
from mpdp.dp.mechanisms._base import grid_release, integer_array, integer_release, prepare_release
from mpdp.dp.samplers import discrete_laplace
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = ["DiscreteLaplaceMechanism", "LaplaceMechanism"]


def _pure_cost(epsilon: float, mechanism: str, noise_multiplier: float) -> PrivacyCost:
    return PrivacyCost(epsilon=epsilon, delta=0.0, rho=epsilon * epsilon / 2, mechanism=mechanism,
                       noise_multiplier=noise_multiplier)


@dataclass(frozen=True, kw_only=True)
class LaplaceMechanism:
    """ε-DP release of a real vector with L1 sensitivity ``sensitivity``, by Laplace noise on a grid.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        L1 sensitivity of the query, > 0 (a zero-sensitivity query needs no noise).
    grid_bits : int, optional
        The release grid is ``2^-grid_bits``; default about ``2^40`` steps per noise scale
        (:func:`mpdp.dp.grid.default_grid_bits`).

    Security
    --------
    The value is snapped to the grid and discrete Laplace noise of scale ``(floor(Δ 2^k) + d) / ε`` grid units
    is added exactly (:mod:`mpdp.dp.grid`), so the output is ε-DP exactly for neighbouring inputs whose
    values differ by at most Δ in L1, with no floating-point attack surface (Mironov 2012).

    Accuracy
    --------
    Per coordinate the noise has variance ``≈ 2 b^2`` with ``b = Δ/ε · (1 + d 2^-k/Δ)``; with the default grid
    the inflation factor is below ``1 + d 2^-39 / ε`` and below ``1 + d 2^-19`` (the grid has at least ``2^19``
    steps per unit of Δ, :func:`mpdp.dp.grid.default_grid_bits`). Any finite ε > 0 is sampled exactly: at tiny ε
    the scale in grid units exceeds int64 and the noise is drawn, added and rounded on Python integers.

    References
    ----------
    Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006;
    Canonne, Kamath, Steinke 2020 (exact discrete Laplace sampling).
    """

    epsilon: float
    sensitivity: float
    grid_bits: int | None = None

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        sens = check_positive(self.sensitivity, "sensitivity",
                              "pass the L1 sensitivity (> 0); a zero-sensitivity query needs no noise")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", sens)
        if not math.isfinite(sens / eps):
            raise ParameterError(explain("sensitivity / epsilon", f"{sens} / {eps}", "a noise scale below 1.8e308",
                                         "use a larger epsilon or rescale the query: the noise would not fit a float"))
        if self.grid_bits is None:
            object.__setattr__(self, "grid_bits", default_grid_bits(sens / eps, sens))

    @property
    def scale(self) -> float:
        """Nominal Laplace scale ``Δ1 / ε``."""
        return self.sensitivity / self.epsilon

    @property
    def cost(self) -> PrivacyCost:
        """ε-DP, hence ``ε^2/2``-zCDP."""
        return _pure_cost(self.epsilon, "laplace", self.scale / self.sensitivity)

    def grid_scale(self, dim: int) -> Fraction:
        """The exact discrete Laplace scale, in grid units, used for a ``dim``-coordinate release."""
        k = int(self.grid_bits or 0)
        return Fraction(grid_l1_sensitivity(self.sensitivity, k, dim)) / as_rational(self.epsilon, "epsilon")

    def effective_scale(self, dim: int = 1) -> float:
        """The Laplace scale actually applied (grid inflation included), in the units of the value."""
        return float(self.grid_scale(dim)) * 2.0 ** -int(self.grid_bits or 0)

    def release(
        self,
        value: Any,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "laplace",
    ) -> Any:
        """The noisy value (same shape, float64 on the grid); charges ``ledger`` first if given."""
        k = int(self.grid_bits or 0)
        units = snap_to_grid(value, k)
        source = prepare_release(rng, ledger, self.cost, label, "LaplaceMechanism")
        noise = discrete_laplace(self.grid_scale(max(units.size, 1)), units.shape, rng=source)
        return grid_release(units, noise, k)


@dataclass(frozen=True, kw_only=True)
class DiscreteLaplaceMechanism:
    """ε-DP release of an integer vector with integer L1 sensitivity, by exact discrete Laplace noise.

    The noise scale is the exact rational ``Δ1 / ε`` (ε taken at its exact binary value), so the guarantee is
    exactly ε-DP. Inputs must already be integers (a float input is refused, never rounded silently).

    References
    ----------
    Ghosh, Roughgarden, Sundararajan 2009 (geometric mechanism); Canonne, Kamath, Steinke 2020 (sampling).
    """

    epsilon: float
    sensitivity: int

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        if isinstance(self.sensitivity, bool) or not isinstance(self.sensitivity, int | np.integer) or (
            self.sensitivity < 1
        ):
            raise ParameterError(
                explain("sensitivity", self.sensitivity, "an int >= 1 (L1 sensitivity of an integer query)",
                        "pass e.g. sensitivity=1 for counts")
            )
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", int(self.sensitivity))

    @property
    def scale(self) -> Fraction:
        """Exact discrete Laplace scale ``Δ1 / ε``."""
        return Fraction(self.sensitivity) / as_rational(self.epsilon, "epsilon")

    @property
    def cost(self) -> PrivacyCost:
        return _pure_cost(self.epsilon, "discrete_laplace", 1 / self.epsilon)

    def release(
        self,
        value: Any,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "discrete_laplace",
    ) -> Any:
        """The noisy integers (same shape; int64, or Python ints where a value leaves int64), computed exactly;
        charges ``ledger`` first if given."""
        x = integer_array(value)
        source = prepare_release(rng, ledger, self.cost, label, "DiscreteLaplaceMechanism")
        return integer_release(x, discrete_laplace(self.scale, x.shape, rng=source))
