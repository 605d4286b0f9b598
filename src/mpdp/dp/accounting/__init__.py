"""Privacy accounting: costs, composition (pure DP, zCDP, RDP/PLD) and the crash-safe ledger."""

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.accounting.zcdp import (
    compose_rho,
    gaussian_zcdp,
    pure_dp_to_zcdp,
    zcdp_epsilon,
    zcdp_rho_for,
)

__all__ = [
    "BudgetSpender",
    "PrivacyCost",
    "compose_rho",
    "gaussian_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_epsilon",
    "zcdp_rho_for",
]
