"""Privacy accounting: costs, composition (pure DP, zCDP, RDP/PLD), the crash-safe ledger, and the helpers
the learning modules call (DP-SGD steps, distributed discrete Gaussian, per-party VPDP).

Quick reference::

    dpsgd_epsilon(noise_multiplier=z, sampling_rate=q, steps=T, delta=1e-5)          # -> ε
    dpsgd_noise_multiplier(epsilon=1.0, delta=1e-5, sampling_rate=q, steps=T)        # -> z
    gaussian_zcdp(sensitivity=s, sigma=σ); zcdp_epsilon(rho, delta)                   # zCDP closed forms
    ddg_epsilon(local_sigma=σ, n_parties=n, l2_sensitivity=Δ, dim=d, delta=1e-5)     # KLS21
    vpdp_epsilon(noise_multiplier=z, sampling_rate=q, steps=T, delta=1e-5, n_parties=P, indices_known=True)
    compose([cost, ...], delta=1e-5, method="rdp")                                   # -> Spent(ε, δ)
    ledger = PrivacyLedger.open_or_create(path, epsilon=1, delta=1e-5, method="rdp", subject="party:a")
    ledger.spend(cost, label="step")                                                   # before releasing
"""

from mpdp.dp.accounting.accountant import dpsgd_cost, dpsgd_epsilon, dpsgd_noise_multiplier
from mpdp.dp.accounting.composition import METHODS, Spent, compose
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.accounting.distributed import ddg_cost, ddg_epsilon, ddg_rdp, ddg_tau
from mpdp.dp.accounting.ledger import LedgerEntry, PrivacyLedger
from mpdp.dp.accounting.vpdp import disjoint_epochs_epsilon, party_noise_multiplier, vpdp_epsilon
from mpdp.dp.accounting.zcdp import (
    compose_rho,
    gaussian_zcdp,
    pure_dp_to_zcdp,
    zcdp_epsilon,
    zcdp_rho_for,
)

__all__ = [
    "METHODS",
    "BudgetSpender",
    "LedgerEntry",
    "PrivacyCost",
    "PrivacyLedger",
    "Spent",
    "compose",
    "compose_rho",
    "ddg_cost",
    "ddg_epsilon",
    "ddg_rdp",
    "ddg_tau",
    "disjoint_epochs_epsilon",
    "dpsgd_cost",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "gaussian_zcdp",
    "party_noise_multiplier",
    "pure_dp_to_zcdp",
    "vpdp_epsilon",
    "zcdp_epsilon",
    "zcdp_rho_for",
]
