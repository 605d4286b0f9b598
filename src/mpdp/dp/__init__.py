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

Accounting (:mod:`mpdp.dp.accounting`)
    ``PrivacyCost(epsilon=, delta=, rho=, mechanism=, noise_multiplier=, sampling_rate=, count=)``
    ``PrivacyLedger.open_or_create(path, epsilon=, delta=, method="basic"|"zcdp"|"rdp"|"pld", subject=)``
        ``.spend(cost, label=)`` (durable before it returns; BudgetExceededError, LedgerCorruptError),
        ``.spent``, ``.remaining_epsilon``, ``.entries``, ``.spent_by_label()``; ``path=None``: in memory
    ``compose(costs, delta=, method=)`` -> ``Spent(epsilon, delta, method)``
    ``dpsgd_epsilon(noise_multiplier=, sampling_rate=, steps=, delta=, method="rdp"|"pld"|"zcdp")``
    ``dpsgd_noise_multiplier(epsilon=, delta=, sampling_rate=, steps=)``, ``dpsgd_cost(...)``
    ``gaussian_zcdp(sensitivity=, sigma=)``, ``pure_dp_to_zcdp``, ``compose_rho``,
    ``zcdp_epsilon(rho, delta, conversion="tight"|"bun_steinke")``, ``zcdp_rho_for(epsilon=, delta=)``
    ``ddg_epsilon(local_sigma=, n_parties=, l2_sensitivity=, dim=, delta=, steps=, sampling_rate=)``,
        ``ddg_tau``, ``ddg_rdp``, ``ddg_cost`` (Kairouz-Liu-Steinke 2021 distributed discrete Gaussian)
    ``vpdp_epsilon(noise_multiplier=, sampling_rate=, steps=, delta=, n_parties=, noise="parties"|"trusted",
        colluders=, indices_known=)``, ``party_noise_multiplier``, ``disjoint_epochs_epsilon`` (paper 002)

Sensitivities (:mod:`mpdp.dp.sensitivities`): one module per topic; model code never inlines a formula.
:mod:`mpdp.dp.sensitivities.general` has counts, bounded sums/means, histograms, clipped gradient sums and
means, and ``l1_from_l2``.
"""

from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
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
    "PrivacyLedger",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "gamma_norm_noise",
    "gaussian_on_grid",
    "geometric",
    "laplace_on_grid",
]
