"""Privacy accounting of DPVI on vertically partitioned data: towards the analyst and towards each party.

Paper 002, section 5. Every step releases a sum of per-record gradients clipped to ``C`` (sensitivity ``C``
under add/remove-one, :mod:`mpdp.dp.sensitivities.dpvi`) plus discrete Gaussian noise of total standard
deviation ``z C`` on the grid ``2^-b``:

* **Analyst** (Theorem 5.1/5.2): ``T`` steps of the Poisson-subsampled mechanism at rate ``q`` (each record
  joins a step with probability at most ``q``, within ``2^-64``, see
  :meth:`~mpdp.learning.dpvi.training.BatchPlan.batches`; the loss grows with the rate, so accounting at ``q``
  bounds it); with ``batching="disjoint"`` each epoch partitions the records, so a record meets one step per
  epoch and an epoch costs one unsampled release (parallel composition): ``epochs`` releases at ``q = 1``.
* **A data party** (VPDP, Theorems 5.3/5.4): it knows the minibatch indices, so there is no amplification by
  subsampling (``q = 1``; every Poisson step counts, or one step per epoch with disjoint batches); and with
  ``noise="parties"`` it knows its own noise share, so only the other ``P - 1`` shares (``P - 1 - c`` with
  ``c`` colluders) protect the records from it. With a trusted noise party it knows no share.

Accountants
-----------
``"ddg"`` (default, sound for the noise actually added): the distributed discrete Gaussian analysis of
Kairouz, Liu and Steinke (2021) (:func:`mpdp.dp.accounting.ddg_epsilon`; one contributor for a trusted party or
a single data holder), with Poisson subsampling by Zhu and Wang's general RDP bound. ``"gaussian"``: the
continuous subsampled-Gaussian RDP accountant (Mironov et al. 2019), which is what paper 002 and most DP-SGD
libraries use; it treats the discrete noise as continuous, which is not proven for subsampled discrete
Gaussians, so mpdp does not default to it. The paper's ``eps = 1`` costs more noise under ``"ddg"``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from mpdp.dp.accounting import ddg_epsilon, dpsgd_epsilon
from mpdp.dp.accounting.accountant import smallest_noise_multiplier
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.calibration import check_delta, check_epsilon
from mpdp.dp.sensitivities.dpvi import clipped_sum_sensitivity
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.learning.dpvi.training import BatchPlan

__all__ = ["ACCOUNTANTS", "Privacy", "analyst_cost", "analyst_epsilon", "calibrate_noise_multiplier", "party_cost",
           "party_epsilon"]

ACCOUNTANTS = ("ddg", "gaussian")


@dataclass(frozen=True)
class Privacy:
    """What a DPVI fit spent: ``epsilon`` towards the analyst at ``delta``, and per data party (VPDP)."""

    epsilon: float
    delta: float
    noise_multiplier: float
    per_party: dict[str, float]
    accountant: str
    steps: int
    sampling_rate: float
    batching: str
    noise: str


def analyst_cost(privacy: Privacy) -> PrivacyCost:
    """What the analyst's ledger is charged for a fit: the guarantee towards an outside analyst (Theorems
    5.1/5.2), the run's total for the records of every party."""
    return PrivacyCost(epsilon=privacy.epsilon, delta=privacy.delta, mechanism=f"dpvi-{privacy.accountant}")


def party_cost(privacy: Privacy, party: str) -> PrivacyCost:
    """What data party ``party``'s own ledger is charged for a fit: the guarantee towards the parties (VPDP,
    Theorems 5.3/5.4), which has no subsampling amplification and can exceed :func:`analyst_cost`. Every engine
    charges it: a deployed party (its deployment's ``cost``), the in-memory report and the estimator's
    ``party_ledgers``."""
    return PrivacyCost(epsilon=privacy.per_party[party], delta=privacy.delta,
                       mechanism=f"dpvi-vpdp-{privacy.accountant}")


def _check_accountant(accountant: str) -> None:
    if accountant not in ACCOUNTANTS:
        raise ParameterError(explain("accountant", accountant, f"one of {ACCOUNTANTS}", "pass accountant='ddg'"))


def _releases(plan: BatchPlan, *, indices_known: bool) -> tuple[int, float]:
    """(number of composed releases, sampling rate) for one record."""
    if plan.batching == "disjoint":
        return plan.epochs, 1.0
    return plan.steps, 1.0 if indices_known else plan.sampling_rate


@functools.lru_cache(maxsize=4096)
def _epsilon(z: float, contributors: int, releases: int, rate: float, delta: float, dim: int, clip: float,
             grid_bits: int, accountant: str, snapped: bool = False) -> float:
    """Cached: calibration, the estimators and the experiments ask for the same values many times."""
    # the noise std is z C (in grid units z C 2^b); snapping a float sum to the grid adds sqrt(dim) units
    sigma_units = z * clip * 2.0**grid_bits
    units = clipped_sum_sensitivity(clip) * 2.0**grid_bits + (math.sqrt(dim) if snapped else 0.0)
    if accountant == "gaussian":
        return float(dpsgd_epsilon(noise_multiplier=sigma_units / units, sampling_rate=rate, steps=releases,
                                   delta=delta))
    return float(ddg_epsilon(local_sigma=sigma_units / math.sqrt(contributors), n_parties=contributors,
                             l2_sensitivity=units, dim=dim, delta=delta, steps=releases, sampling_rate=rate))


def analyst_epsilon(*, noise_multiplier: float, plan: BatchPlan, delta: float, dim: int, clip: float,
                    grid_bits: int, noise_contributors: int = 1, accountant: str = "ddg",
                    snapped: bool = False) -> float:
    """Epsilon towards an outside analyst (paper 002, Theorems 5.1/5.2).

    ``noise_contributors`` is how many independent discrete Gaussians make up the noise (``P`` when the
    parties add it, 1 for a trusted noise party or a single data holder). ``snapped``: the released sum was a
    float snapped to the grid (the non-partitioned baseline), which adds ``sqrt(dim)`` grid units to the
    sensitivity; the MPC's release is on the grid already, its rounding inside the clip margin.
    """
    _check_accountant(accountant)
    if noise_multiplier <= 0:
        return math.inf
    releases, rate = _releases(plan, indices_known=False)
    return _epsilon(noise_multiplier, noise_contributors, releases, rate, check_delta(delta, allow_zero=False), dim,
                    clip, grid_bits, accountant, snapped)


def party_epsilon(*, noise_multiplier: float, plan: BatchPlan, delta: float, dim: int, clip: float, grid_bits: int,
                  parties: int, noise: str, colluders: int = 0, indices_known: bool = True,
                  accountant: str = "ddg") -> float:
    """VPDP epsilon towards one data party (paper 002, Theorems 5.3/5.4), with ``colluders`` others."""
    _check_accountant(accountant)
    if noise_multiplier <= 0:
        return math.inf
    if noise == "trusted":
        z, contributors = noise_multiplier, 1
    elif noise == "parties":
        unknown = parties - 1 - colluders
        if unknown < 1:
            raise DomainError(explain("colluders", colluders, f"fewer than {parties - 1}",
                                      "a coalition that knows every noise share has no guarantee; use a trusted noise "
                                      "party"))
        # each share has variance (z C)^2 / P; the unknown ones sum to (z C)^2 (P - 1 - c) / P
        z, contributors = noise_multiplier * math.sqrt(unknown / parties), unknown
    else:
        raise ParameterError(explain("noise", noise, "'parties' or 'trusted'", "pass noise='parties'"))
    releases, rate = _releases(plan, indices_known=indices_known)
    return _epsilon(z, contributors, releases, rate, check_delta(delta, allow_zero=False), dim, clip, grid_bits,
                    accountant)


def calibrate_noise_multiplier(*, epsilon: float, delta: float, plan: BatchPlan, dim: int, clip: float,
                               grid_bits: int, noise_contributors: int = 1, accountant: str = "ddg",
                               snapped: bool = False, tolerance: float = 1e-3) -> float:
    """The smallest noise multiplier (to relative ``tolerance``, rounded up) giving the analyst ``epsilon``."""
    eps = check_epsilon(epsilon)

    def epsilon_of(z: float) -> float:
        return analyst_epsilon(noise_multiplier=z, plan=plan, delta=delta, dim=dim, clip=clip, grid_bits=grid_bits,
                               noise_contributors=noise_contributors, accountant=accountant, snapped=snapped)

    return smallest_noise_multiplier(epsilon_of, eps, start=(0.3, 2.0), floor=1e-3, ceiling=1e5,
                                     tolerance=tolerance, fix="raise epsilon or delta, or train for fewer epochs")
