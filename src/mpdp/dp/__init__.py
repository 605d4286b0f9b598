"""Differential privacy: exact samplers, mechanisms, calibration, sensitivities and accounting.

Everything random takes ``rng=`` (an :class:`mpdp.randomness.RandomSource`; default fresh OS entropy) and is
vectorised over numpy. No floating-point noise is ever added to a private value (see :mod:`mpdp.dp.grid`).

Samplers (:mod:`mpdp.dp.samplers`, exact for rational parameters; see :mod:`mpdp.dp._exact` for why)
    ``bernoulli_exp(gamma, size)``       Bernoulli(exp(-gamma))
    ``geometric(gamma, size)``           P(k) ∝ exp(-gamma k), k >= 0
    ``discrete_laplace(scale, size)``    P(y) ∝ exp(-|y|/scale) on Z
    ``discrete_gaussian(sigma2, size)``  P(y) ∝ exp(-y^2/(2 sigma2)) on Z (> 10^6 samples/s)

Grid noise (:mod:`mpdp.dp.grid`): ``laplace_on_grid``, ``gaussian_on_grid``, ``snap_to_grid``,
``default_grid_bits``, ``grid_l1_sensitivity``, ``grid_l2_sensitivity``.

Mechanisms (:mod:`mpdp.dp.mechanisms`; keyword-only, validated, ``.cost`` is a :class:`PrivacyCost`,
``.release(value, rng=, ledger=, label=)`` charges the ledger before drawing noise)
    ``LaplaceMechanism(epsilon=, sensitivity=)``                       ε-DP, real values, grid release
    ``GaussianMechanism(sensitivity=, sigma=, delta=, dim=)``           ρ-zCDP and (ε, δ), grid release
    ``GaussianMechanism.calibrated(epsilon=, delta=, sensitivity=, method="analytic"|"classic"|"zcdp")``
    ``DiscreteLaplaceMechanism(epsilon=, sensitivity=int)``             ε-DP, integer values
    ``DiscreteGaussianMechanism(sensitivity=, sigma=, delta=)`` / ``.calibrated(...)``  integer values
    ``ExponentialMechanism(epsilon=, sensitivity=).select(utilities)``  exact selection
    ``ObjectivePerturbation(epsilon=, n_samples=, regularization=, smoothness=).noise(dim)``  CMS11
    ``gamma_norm_noise(dim, beta)``                                      density ∝ exp(-beta ||b||)

Calibration (:mod:`mpdp.dp.calibration`): ``laplace_scale``, ``classic_gaussian_sigma``,
``analytic_gaussian_sigma``, ``gaussian_delta``, ``gaussian_epsilon``, ``gaussian_rho``, and the input checks
``check_epsilon``, ``check_delta``, ``check_positive``.

Accounting (:mod:`mpdp.dp.accounting`): ``PrivacyCost``; zCDP: ``gaussian_zcdp``, ``pure_dp_to_zcdp``,
``compose_rho``, ``zcdp_epsilon(rho, delta, conversion="tight"|"bun_steinke")``, ``zcdp_rho_for``.

Sensitivities (:mod:`mpdp.dp.sensitivities`): one module per topic; model code never inlines a formula.
"""

from mpdp.dp.accounting import PrivacyCost
from mpdp.dp.grid import gaussian_on_grid, laplace_on_grid
from mpdp.dp.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ObjectivePerturbation,
    gamma_norm_noise,
)
from mpdp.dp.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace, geometric

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ObjectivePerturbation",
    "PrivacyCost",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "gamma_norm_noise",
    "gaussian_on_grid",
    "geometric",
    "laplace_on_grid",
]
