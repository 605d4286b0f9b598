"""Composition of recorded releases: basic (pure/approximate DP), zCDP, RDP and PLD.

:func:`compose` turns a list of :class:`~mpdp.dp.accounting.cost.PrivacyCost` into the (ε, δ) actually spent.

* ``"basic"``: ``(Σ ε_i, Σ δ_i)`` (Dwork et al. 2006). Always valid; tight for a few pure-DP releases.
* ``"zcdp"``: ``ρ = Σ ρ_i`` (Bun & Steinke 2016), converted at the target δ by the tight conversion. Costs
  without a ρ (approximate-DP releases) are composed by the basic rule and their δ taken out of the target.
  Subsampling is *not* amplified under zCDP (the ρ of an unsampled release is used: conservative).
* ``"rdp"``: Rényi DP through Google's ``dp-accounting`` (Mironov 2017; Poisson-subsampled Gaussian by
  Mironov, Talwar, Zhang 2019), on its default grid of orders. Gaussian and Laplace releases use their exact
  RDP curves (Gaussians subsampled when ``sampling_rate`` is set; dp-accounting has no subsampled-Laplace RDP,
  so a subsampled Laplace is charged as unsampled, conservatively); other releases with a ρ enter as ρ-zCDP
  events.
* ``"pld"``: privacy loss distributions through ``dp-accounting`` (Koskela et al. 2020; Doroshenko et al.
  2022), pessimistic discretisation 1e-4; releases without a noise model enter as their (ε, δ) dominating pair.

Every method returns the smaller of its own bound and the basic bound (both are valid upper bounds on the
same composition). The neighbouring relation is add-or-remove-one throughout (DP-SGD's convention).
The Gaussian curves are those of the continuous Gaussian; for discrete Gaussian noise the RDP/zCDP curves are
proven upper bounds (Canonne, Kamath, Steinke 2020), see :class:`~mpdp.dp.mechanisms.GaussianMechanism`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.accounting.zcdp import zcdp_epsilon
from mpdp.dp.calibration import check_delta
from mpdp.errors import ParameterError, PrecisionError, explain

if TYPE_CHECKING:  # dp_accounting (with scipy.signal and scipy.stats) is imported where it is used: ~1 s saved
    import dp_accounting  # for a process that only keeps a basic ledger, e.g. a deployed party
    from dp_accounting.pld import privacy_loss_distribution as pld

__all__ = ["METHODS", "Spent", "compose", "gaussian_like", "laplace_like"]

METHODS = ("basic", "zcdp", "rdp", "pld")
_GAUSSIANS = frozenset({"gaussian", "discrete_gaussian", "subsampled_gaussian"})
_LAPLACES = frozenset({"laplace", "discrete_laplace"})
_PLD_INTERVAL = 1e-4


@dataclass(frozen=True)
class Spent:
    """The (ε, δ) spent by a composition, and how it was computed."""

    epsilon: float
    delta: float
    method: str


def gaussian_like(cost: PrivacyCost) -> bool:
    """A release whose privacy is that of a (subsampled) Gaussian with ``noise_multiplier``."""
    return cost.mechanism in _GAUSSIANS and cost.noise_multiplier is not None


def laplace_like(cost: PrivacyCost) -> bool:
    return cost.mechanism in _LAPLACES and cost.noise_multiplier is not None


def _basic(costs: Sequence[PrivacyCost]) -> tuple[float, float]:
    return (math.fsum(c.epsilon * c.count for c in costs), math.fsum(c.delta * c.count for c in costs))


def _rho(cost: PrivacyCost) -> float | None:
    if gaussian_like(cost):
        z = float(cost.noise_multiplier or 0.0)
        return cost.count / (2 * z * z)
    if cost.rho is not None:
        return cost.rho * cost.count
    return None


def _dp_event(cost: PrivacyCost) -> dp_accounting.DpEvent | None:
    import dp_accounting

    event: dp_accounting.DpEvent
    if gaussian_like(cost):
        event = dp_accounting.GaussianDpEvent(float(cost.noise_multiplier or 0.0))
    elif laplace_like(cost):
        event = dp_accounting.LaplaceDpEvent(float(cost.noise_multiplier or 0.0))
    elif cost.rho is not None:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.ZCDpEvent(cost.rho), cost.count)
    else:
        return None
    if cost.sampling_rate is not None and cost.sampling_rate < 1 and gaussian_like(cost):
        # dp-accounting's RDP knows subsampling for Gaussians only; a subsampled Laplace is charged unsampled.
        event = dp_accounting.PoissonSampledDpEvent(cost.sampling_rate, event)
    return dp_accounting.SelfComposedDpEvent(event, cost.count)


def _pld(cost: PrivacyCost) -> pld.PrivacyLossDistribution:
    from dp_accounting.pld import common as pld_common
    from dp_accounting.pld import privacy_loss_distribution as pld

    q = cost.sampling_rate if cost.sampling_rate is not None else 1.0
    if gaussian_like(cost):
        one = pld.from_gaussian_mechanism(float(cost.noise_multiplier or 0.0), sampling_prob=q,
                                          value_discretization_interval=_PLD_INTERVAL)
    elif laplace_like(cost):
        one = pld.from_laplace_mechanism(float(cost.noise_multiplier or 0.0), sampling_prob=q,
                                         value_discretization_interval=_PLD_INTERVAL)
    else:
        one = pld.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(cost.epsilon, cost.delta),
                                          value_discretization_interval=_PLD_INTERVAL)
    return one.self_compose(cost.count) if cost.count > 1 else one


def compose(costs: Sequence[PrivacyCost], *, delta: float | None = None, method: str = "rdp") -> Spent:
    """The (ε, δ) spent by ``costs`` together.

    Parameters
    ----------
    costs : sequence of PrivacyCost
        The releases (each possibly standing for ``count`` identical ones).
    delta : float, optional
        Target δ in (0, 1) for the "zcdp", "rdp" and "pld" methods; ignored by "basic" (which reports Σδ).
    method : {"basic", "zcdp", "rdp", "pld"}
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ParameterError(explain("method", method, f"one of {METHODS}", "pass method='rdp'"))
    given: Any = costs
    if isinstance(given, PrivacyCost) or not isinstance(given, Sequence):
        raise ParameterError(explain("costs", type(costs).__name__, "a list of PrivacyCost",
                                     "pass [mechanism.cost, ...]"))
    for cost in costs:
        if not isinstance(cost, PrivacyCost):
            raise ParameterError(explain("costs", cost, "PrivacyCost items", "pass mechanism.cost values"))
    eps_b, delta_b = _basic(costs)
    if method == "basic" or not costs:
        return Spent(eps_b, delta_b, "basic")
    if delta is None:
        raise ParameterError(explain("delta", None, f"a target delta in (0, 1) for method={method!r}",
                                     "pass delta=1e-5, or use method='basic'"))
    target = check_delta(delta, allow_zero=False)
    best = eps_b if delta_b <= target else math.inf
    try:
        return Spent(min(best, _tighter(costs, target, method)), target, method)
    except (OverflowError, FloatingPointError, ZeroDivisionError) as exc:  # e.g. a noise multiplier of 1e150
        raise PrecisionError(explain(f"{method} accounting", f"costs beyond its floating-point range ({exc})",
                                     "noise multipliers and counts the accountant can evaluate",
                                     "use method='basic', or noise multipliers below 1e6")) from exc


def _tighter(costs: Sequence[PrivacyCost], target: float, method: str) -> float:
    """The ε of ``method`` ("zcdp", "rdp" or "pld") at ``target`` (inf where it cannot account a cost)."""
    best = math.inf
    if method == "zcdp":
        rhos = [_rho(c) for c in costs]
        rest = [c for c, r in zip(costs, rhos, strict=True) if r is None]
        eps_rest, delta_rest = _basic(rest)
        rho = math.fsum(r for r in rhos if r is not None)
        if delta_rest < target:
            candidate = eps_rest + (zcdp_epsilon(rho, target - delta_rest) if rho > 0 else 0.0)
            best = min(best, candidate)
    elif method == "rdp":
        events = [_dp_event(c) for c in costs]
        rest = [c for c, e in zip(costs, events, strict=True) if e is None]
        eps_rest, delta_rest = _basic(rest)
        if delta_rest < target:
            from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc

            accountant = rdp_acc.RdpAccountant()
            for event in events:
                if event is not None:
                    accountant.compose(event)
            best = min(best, eps_rest + float(accountant.get_epsilon(target - delta_rest)))
    else:  # pld
        total = _pld(costs[0])
        for cost in costs[1:]:
            total = total.compose(_pld(cost))
        best = min(best, float(total.get_epsilon_for_delta(target)))
    return best
