"""The exponential mechanism over a finite candidate set, sampled exactly."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp._exact import accept_exp_neg, as_rational
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.calibration import check_epsilon, check_positive
from mpdp.dp.mechanisms._base import prepare_release
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.numeric import real_array
from mpdp.randomness import RandomSource

__all__ = ["ExponentialMechanism"]

_MAX_BATCH = 1 << 14


@dataclass(frozen=True, kw_only=True)
class ExponentialMechanism:
    """ε-DP selection of one of ``n`` candidates with probability ∝ ``exp(ε u_i / (2Δu))``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        Sensitivity Δu of the utility (max change of any u_i between neighbours), > 0.
    monotonic : bool
        When every utility moves in the same direction between neighbours (e.g. counts), the factor 2 can be
        dropped: probabilities ∝ ``exp(ε u_i / Δu)`` (McSherry & Talwar 2007, Thm 6 remark).

    Security
    --------
    Sampling is exact: a candidate is proposed uniformly at random and kept with probability
    ``exp(-ε (u_max - u_i) / (2Δu))``, a rational exponent (utilities and ε at their exact binary values)
    decided by the exact comparison of :mod:`mpdp.dp._exact`. The first kept proposal is returned, so the
    selection probabilities are exactly proportional to ``exp(ε u_i / (2Δu))``; no floating-point softmax or
    Gumbel noise is involved. Expected proposals: ``n / Σ_i exp(-ε (u_max - u_i)/(2Δu)) <= n``.

    References
    ----------
    McSherry & Talwar, "Mechanism design via differential privacy", FOCS 2007.
    """

    epsilon: float
    sensitivity: float
    monotonic: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        if not isinstance(self.monotonic, bool):
            raise ParameterError(explain("monotonic", self.monotonic, "a bool", "pass monotonic=True or False"))

    @property
    def cost(self) -> PrivacyCost:
        """ε-DP; also ε-bounded-range, hence ε^2/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), where the
        monotonic variant is only credited the generic ε^2/2."""
        rho = self.epsilon**2 / 2 if self.monotonic else self.epsilon**2 / 8
        return PrivacyCost(epsilon=self.epsilon, delta=0.0, rho=rho, mechanism="exponential")

    def _gammas(self, utilities: Any) -> list[Fraction]:
        u = real_array(utilities, "utilities")
        if u.ndim != 1 or u.size == 0:
            raise DomainError(explain("utilities", utilities, "a non-empty 1-D array of scores",
                                      "pass one utility per candidate"))
        if not np.all(np.isfinite(u)):
            raise DomainError(explain("utilities", utilities, "finite scores", "replace NaN/inf utilities"))
        exact = [Fraction(float(x)) for x in u]
        top = max(exact)
        factor = as_rational(self.epsilon, "epsilon") / (
            as_rational(self.sensitivity, "sensitivity") * (1 if self.monotonic else 2)
        )
        return [(top - x) * factor for x in exact]

    def probabilities(self, utilities: Any) -> npt.NDArray[np.float64]:
        """Selection probabilities (floating point, for inspection and tests; sampling never uses them)."""
        g = np.array([float(x) for x in self._gammas(utilities)])
        w = np.exp(-g)
        return np.asarray(w / w.sum(), dtype=np.float64)

    def select(
        self,
        utilities: Any,
        *,
        rng: RandomSource | None = None,
        ledger: BudgetSpender | None = None,
        label: str = "exponential",
    ) -> int:
        """The index of the selected candidate; charges ``ledger`` first if given."""
        gammas = self._gammas(utilities)
        source = prepare_release(rng, ledger, self.cost, label, "ExponentialMechanism")
        return select_index(gammas, rng=source)


def select_index(gammas: list[Fraction], *, rng: RandomSource) -> int:
    """Index ``i`` with probability ∝ ``exp(-gammas[i])`` (all >= 0, at least one 0), exactly."""
    n = len(gammas)
    g_hat_all = np.array([float(g) for g in gammas], dtype=np.float64)
    batch = 16
    while True:
        proposals = rng.below(n, batch).astype(np.int64)
        g_hat = g_hat_all[proposals]
        words = rng.uint64(batch)
        chosen = [gammas[int(i)] for i in proposals]
        kept = accept_exp_neg(words, g_hat, 2.0**-52 * g_hat, chosen.__getitem__, rng)
        hits = np.flatnonzero(kept)
        if hits.size:
            return int(proposals[hits[0]])
        batch = min(_MAX_BATCH, batch * 2, max(16, 2 ** math.ceil(math.log2(n + 1))))
