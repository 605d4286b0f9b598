"""What paper 003's six methods share: settings, results, and how party groups become runtime parties.

Every method runs as a protocol over :mod:`mpdp.runtime`: the data parties (stacked in vectorised groups,
see :mod:`mpdp.learning.distributed_erm.problem`) are split into *cohorts*, one runtime party each, and talk to an
aggregator (``server``) and, for the MPC methods, to the parties of the secure computation. A cohort of one
data party is a real party; a cohort of many is the vectorised simulation the house rules allow: its
messages carry one row per data party, each row computed from that party's records alone.

Settings are frozen dataclasses validated at construction (the issue's bad-input list: ``T < 1``, epsilon
or delta out of range). :class:`DistributedFit` is what every method returns: the final model, the models
after the recorded iterations, the privacy actually spent (overall, per party-size class, and the details
of the calibration), traffic and wall time.

References
----------
Paper 003 (Jayaraman et al., NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`) sections 3.1, 3.2 and 4.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting import BudgetSpender, PrivacyCost, compose, zcdp_epsilon
from mpdp.dp.calibration import analytic_gaussian_sigma, gaussian_epsilon
from mpdp.dp.grid import default_grid_bits, grid_l2_sensitivity
from mpdp.dp.sensitivities.erm import gaussian_sigma_for_zcdp
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties, PartyGroup

__all__ = [
    "Cohort",
    "DistributedFit",
    "GaussianCalibration",
    "GradientPerturbation",
    "OutputPerturbation",
    "PrivacySpent",
    "calibrate_gradient_noise",
    "charge",
    "cohort_layout",
    "cohort_name",
    "cohorts",
    "curve_iterations",
    "gd_step",
    "laplace_cost",
    "per_size_class",
    "release_grid_bits",
    "size_classes",
]

FloatArray = npt.NDArray[np.float64]
Accountant = Literal["zcdp", "tight"]
SERVER = "server"


def _check_epsilon(epsilon: float) -> float:
    e = float(epsilon)
    if not (math.isfinite(e) and e > 0):
        raise DomainError(explain("epsilon", epsilon, "a finite privacy budget > 0", "pass e.g. epsilon=0.5"))
    return e


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise DomainError(explain("delta", delta, "0 < delta < 1", "pass e.g. delta=1e-3 (below 1/n is usual)"))
    return d


@dataclass(frozen=True)
class OutputPerturbation:
    """Settings of the one-shot methods (Pathak, Local Out P, Local Obj P, MPC Out P): pure epsilon-DP."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))


@dataclass(frozen=True)
class GradientPerturbation:
    """Settings of the iterative methods (Local Grad P, MPC Grad P).

    Parameters
    ----------
    epsilon, delta:
        The (epsilon, delta)-DP target of the whole training run.
    T:
        Gradient-descent iterations (>= 1); every iteration releases one noisy gradient.
    eta:
        Step size; the paper's experiments use 1 (its theory 1/L). Must satisfy ``eta * L <= 2`` for the
        iteration to be a descent method on an ``L``-smooth objective (checked against the problem at fit time).
    accountant:
        ``"zcdp"`` calibrates sigma by the paper's route (Gaussian zCDP, composition, Lemma 2.3 conversion,
        solved exactly); ``"tight"`` calibrates by the exact privacy curve of T composed Gaussians (a
        Gaussian with ``sqrt(T)`` times the sensitivity, Balle and Wang 2018), which needs less noise. Both
        epsilons are reported whichever calibrates.
    record:
        Iterations whose model is kept in :attr:`DistributedFit.iterates` (default: every iteration).
    stop_after:
        Run only the first ``stop_after`` of the T iterations the noise is calibrated for (default: all T).
        The model is then the intermediate iterate, which is at most (epsilon, delta)-DP (003 Corollary 3.5
        gives ``sqrt(t/T) epsilon`` under zCDP); the full (epsilon, delta) is what is charged and reported.
    """

    epsilon: float
    delta: float
    T: int
    eta: float = 1.0
    accountant: Accountant = "zcdp"
    record: tuple[int, ...] | None = None
    stop_after: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", _check_delta(self.delta))
        if isinstance(self.T, bool) or not isinstance(self.T, int | np.integer) or self.T < 1:
            raise DomainError(explain("T", self.T, "an integer number of iterations >= 1", "pass e.g. T=1500"))
        object.__setattr__(self, "T", int(self.T))
        if not (math.isfinite(self.eta) and self.eta > 0):
            raise ParameterError(explain("eta", self.eta, "a finite step size > 0", "pass e.g. eta=1.0"))
        if self.accountant not in ("zcdp", "tight"):
            raise ParameterError(explain("accountant", self.accountant, "'zcdp' or 'tight'",
                                         "pass accountant='zcdp' (the paper's) or 'tight'"))
        if self.record is not None:
            rec = tuple(sorted({int(t) for t in self.record}))
            if not rec or rec[0] < 1 or rec[-1] > self.T:
                raise ParameterError(explain("record", self.record, f"iterations within 1..{self.T}",
                                             "pass e.g. record=(1, 10, 100)"))
            object.__setattr__(self, "record", rec)
        if self.stop_after is not None and not (1 <= int(self.stop_after) <= self.T):
            raise ParameterError(explain("stop_after", self.stop_after, f"None or 1..{self.T}",
                                         "stop within the calibrated number of iterations"))

    @property
    def iterations(self) -> int:
        """Iterations actually run."""
        return self.T if self.stop_after is None else int(self.stop_after)

    @property
    def recorded(self) -> tuple[int, ...]:
        """Recorded iterations that are actually run."""
        rec = tuple(range(1, self.T + 1)) if self.record is None else self.record
        return tuple(t for t in rec if t <= self.iterations)

    def check_step(self, problem: ERMProblem) -> None:
        if self.eta * problem.L > 2.0:
            raise ParameterError(explain("eta", self.eta, f"eta * L <= 2 (L = {problem.L:.4g} for this loss)",
                                         f"pass eta <= {2.0 / problem.L:.4g}"))


@dataclass(frozen=True)
class PrivacySpent:
    """The guarantee a fit actually reached.

    ``epsilon``/``delta`` is the guarantee claimed for the released output (every data record): the largest
    party's charge; ``per_party`` maps a party-size class (:func:`size_classes`, e.g. ``"party0..party2 (30 rows
    each)"``) to the epsilon those parties are charged, smaller for parties above ``n(1)`` where the noise is
    calibrated to ``n(1)``; ``details`` holds the calibration (noise scale, rho, the epsilon by each accountant).
    """

    epsilon: float
    delta: float
    per_party: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class DistributedFit:
    """A trained model and how it was obtained."""

    method: str
    theta: FloatArray
    iterations: tuple[int, ...]
    iterates: FloatArray
    privacy: PrivacySpent
    communication: dict[str, int]
    seconds: float


@dataclass(frozen=True)
class Cohort:
    """A runtime party standing for consecutive data parties of one size group."""

    name: str
    group: PartyGroup


#: Data parties per simulated runtime party by default: a cohort's (1024, d ~ 100) arrays of shares stay in a
#: core's 1 MiB L2 cache (measured: ~30% less CPU per round than 4,096 for 50,000 parties), and several cohorts
#: let the vectorised work of one round spread over the machine's cores.
DEFAULT_COHORT = 1024


def cohort_name(first: int, size: int) -> str:
    """A runtime party standing for data parties ``first .. first + size - 1``: ``party{j}`` for one data party
    (its own name), ``parties{first}-{last}`` for a cohort."""
    return f"party{first}" if size == 1 else f"parties{first}-{first + size - 1}"


def cohort_layout(sizes: Sequence[int], max_size: int | None = None) -> list[tuple[str, int, int]]:
    """``(name, first, count)`` of each runtime party for data parties of record counts ``sizes`` (in run order):
    consecutive parties of equal size form a group, cut into cohorts of at most ``max_size`` (default
    :data:`DEFAULT_COHORT`) data parties each. :func:`cohorts` cuts the same way."""
    if max_size is not None and (isinstance(max_size, bool) or max_size < 1):
        raise ParameterError(explain("max_size", max_size, "None or an int >= 1", "pass e.g. max_size=1"))
    step = DEFAULT_COHORT if max_size is None else int(max_size)
    out: list[tuple[str, int, int]] = []
    first = 0
    while first < len(sizes):
        stop = first
        while stop < len(sizes) and sizes[stop] == sizes[first]:
            stop += 1
        for start in range(first, stop, step):
            count = min(stop, start + step) - start
            out.append((cohort_name(start, count), start, count))
        first = stop
    return out


def cohorts(parties: HorizontalParties, max_size: int | None = None) -> list[Cohort]:
    """Split the party groups into cohorts of at most ``max_size`` data parties (default :data:`DEFAULT_COHORT`),
    named by :func:`cohort_name`."""
    if max_size is not None and (isinstance(max_size, bool) or max_size < 1):
        raise ParameterError(explain("max_size", max_size, "None or an int >= 1", "pass e.g. max_size=1"))
    out: list[Cohort] = []
    for group in parties:
        step = DEFAULT_COHORT if max_size is None else int(max_size)
        for start in range(0, group.size, step):
            stop = min(group.size, start + step)
            sub = PartyGroup(first=group.first + start, X=group.X[start:stop], y=group.y[start:stop])
            out.append(Cohort(cohort_name(sub.first, sub.size), sub))
    return out


def charge(ledger: BudgetSpender | None, cost: PrivacyCost, label: str) -> None:
    """Record the whole run's cost on ``ledger`` before anything is released (a crash never under-reports)."""
    if ledger is not None:
        ledger.spend(cost, label=label)


def laplace_cost(epsilon: float, scale: float, l1_sensitivity: float) -> PrivacyCost:
    """The cost of one pure eps-DP Laplace release (``eps^2/2``-zCDP)."""
    return PrivacyCost(epsilon=epsilon, delta=0.0, rho=epsilon * epsilon / 2, mechanism="laplace",
                       noise_multiplier=scale / l1_sensitivity)


def size_classes(sizes: Sequence[int]) -> dict[int, str]:
    """A readable name for each distinct party size: the data parties of that size (``party{j}`` in run order,
    runs of consecutive parties as ``party{a}..party{b}``) and their row count, e.g.
    ``{53: "party0 (53 rows)", 54: "party1..party2 (54 rows each)"}``, smallest size first."""
    members: dict[int, list[int]] = {}
    for j, n in enumerate(sizes):
        members.setdefault(int(n), []).append(j)
    out: dict[int, str] = {}
    for n in sorted(members):
        runs: list[list[int]] = []
        for j in members[n]:
            if runs and runs[-1][1] == j - 1:
                runs[-1][1] = j
            else:
                runs.append([j, j])
        names = ", ".join(f"party{a}" if a == b else f"party{a}..party{b}" for a, b in runs)
        rows = f"{n} row{'' if n == 1 else 's'}"
        out[n] = f"{names} ({rows}{' each' if len(members[n]) > 1 else ''})"
    return out


def per_size_class(sizes: Sequence[int], epsilon_of_size: Callable[[int], float]) -> dict[str, float]:
    """``{size class: epsilon}`` (:func:`size_classes` names them), largest epsilon (smallest parties) first."""
    return {name: epsilon_of_size(n) for n, name in size_classes(sizes).items()}


def curve_iterations(T: int) -> tuple[int, ...]:
    """The iterations whose model a run's curves show: about 60, log-spaced from 1 to T."""
    return tuple(int(t) for t in np.unique(np.rint(np.geomspace(1, T, min(T, 60)))))


def gd_step(theta: FloatArray, noisy_gradient: FloatArray, problem: ERMProblem, eta: float) -> FloatArray:
    """``theta - eta (g + lam theta)``: the regulariser's gradient is public and added in the clear."""
    out: FloatArray = theta - eta * (noisy_gradient + problem.lam * theta)
    return out


@dataclass(frozen=True)
class GaussianCalibration:
    """Gaussian noise for T releases of an l2 sensitivity ``sensitivity``, on the grid ``2^-grid_bits``.

    ``effective_sensitivity`` adds the grid's rounding (``sqrt(d) 2^-k``, :mod:`mpdp.dp.grid`). ``rho`` is the
    proven zCDP of all T releases; ``epsilon_zcdp`` its conversion by 003 Lemma 2.3 (Bun-Steinke);
    ``epsilon_zcdp_tight`` by the tighter Canonne-Kamath-Steinke conversion; ``epsilon_exact`` the exact
    curve of T composed Gaussians (Balle-Wang). ``epsilon`` is the one the chosen accountant claims.
    """

    sigma: float
    grid_bits: int
    sensitivity: float
    effective_sensitivity: float
    T: int
    delta: float
    accountant: Accountant
    rho: float
    epsilon_zcdp: float
    epsilon_zcdp_tight: float
    epsilon_exact: float

    @property
    def epsilon(self) -> float:
        return self.epsilon_zcdp if self.accountant == "zcdp" else self.epsilon_exact

    def epsilon_for(self, sensitivity: float, dim: int) -> float:
        """The claimed epsilon for records whose sensitivity is ``sensitivity`` (e.g. a larger party's)."""
        eff = grid_l2_sensitivity(sensitivity, self.grid_bits, dim) * 2.0 ** -self.grid_bits
        if self.accountant == "zcdp":
            return zcdp_epsilon(self.rho_for(sensitivity, dim), self.delta, conversion="bun_steinke")
        return gaussian_epsilon(sigma=self.sigma, sensitivity=eff * math.sqrt(self.T), delta=self.delta)

    def rho_for(self, sensitivity: float, dim: int) -> float:
        """The zCDP of the T releases for records whose sensitivity is ``sensitivity``."""
        eff = grid_l2_sensitivity(sensitivity, self.grid_bits, dim) * 2.0 ** -self.grid_bits
        return self.T * eff * eff / (2 * self.sigma ** 2)

    def run_cost(self, sensitivity: float, dim: int) -> PrivacyCost:
        """The whole run (T releases) as one charge, for records whose sensitivity is ``sensitivity``: the
        claimed ``(epsilon, delta)`` and its zCDP."""
        return PrivacyCost(epsilon=self.epsilon_for(sensitivity, dim), delta=self.delta,
                           rho=self.rho_for(sensitivity, dim), mechanism="gaussian")

    def step_cost(self) -> PrivacyCost:
        """One iteration's cost, ``count = T``: a ledger composes the T releases (zCDP, RDP or PLD)."""
        eff = self.effective_sensitivity
        return PrivacyCost(epsilon=gaussian_epsilon(sigma=self.sigma, sensitivity=eff, delta=self.delta),
                           delta=self.delta, rho=eff * eff / (2 * self.sigma * self.sigma), mechanism="gaussian",
                           noise_multiplier=self.sigma / eff, count=self.T)

    def as_dict(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "grid_bits": self.grid_bits, "sensitivity": self.sensitivity,
                "effective_sensitivity": self.effective_sensitivity, "T": self.T, "rho": self.rho,
                "accountant": self.accountant, "epsilon_zcdp": self.epsilon_zcdp,
                "epsilon_zcdp_tight_conversion": self.epsilon_zcdp_tight, "epsilon_exact": self.epsilon_exact}


def release_grid_bits(scale: float, value_bound: float) -> int:
    """Grid ``2^-k`` for releasing values ``|v| <= value_bound`` with noise of ``scale``: about 2^40 steps per
    scale (:func:`mpdp.dp.grid.default_grid_bits`), coarser when needed so that the value plus 2^10 noise scales
    stays below 2^60 grid steps (int64 with room)."""
    room = 60 - math.ceil(math.log2(value_bound + 1024.0 * scale))
    return min(default_grid_bits(scale), room)


def calibrate_gradient_noise(sensitivity: float, dim: int, settings: GradientPerturbation, *,
                             grid_bits: int | None = None, value_bound: float = 1.0) -> GaussianCalibration:
    """sigma for ``settings.T`` Gaussian releases of an l2 sensitivity, meeting ``(epsilon, delta)``.

    ``"zcdp"``: ``rho`` from 003 Lemma 2.3 solved exactly (not Theorem 3.4's approximation, which overshoots
    epsilon; see :mod:`mpdp.dp.sensitivities.erm`), ``sigma = Delta_eff sqrt(T / (2 rho))``. ``"tight"``:
    the smallest sigma whose T-fold composition (a Gaussian of sensitivity ``sqrt(T) Delta_eff``) is
    (epsilon, delta)-DP by the exact Gaussian curve. ``grid_bits`` is the release grid (the fixed-point
    format of the secure computation for MPC Grad P); default :func:`release_grid_bits` for values up to
    ``value_bound`` (a gradient's entries are at most G).
    """
    T, eps, delta = settings.T, settings.epsilon, settings.delta

    def sigma_for(sens: float) -> float:
        if settings.accountant == "zcdp":
            return gaussian_sigma_for_zcdp(sens, T, eps, delta)
        return analytic_gaussian_sigma(sensitivity=sens * math.sqrt(T), epsilon=eps, delta=delta)

    k = release_grid_bits(sigma_for(sensitivity), value_bound) if grid_bits is None else int(grid_bits)
    eff = grid_l2_sensitivity(sensitivity, k, dim) * 2.0 ** -k
    sigma = sigma_for(eff)
    while True:  # floating-point rounding may leave epsilon a few ulps above target: step sigma up
        rho = T * eff * eff / (2 * sigma * sigma)
        cal = GaussianCalibration(
            sigma=sigma, grid_bits=k, sensitivity=sensitivity, effective_sensitivity=eff, T=T, delta=delta,
            accountant=settings.accountant, rho=rho,
            epsilon_zcdp=zcdp_epsilon(rho, delta, conversion="bun_steinke"),
            epsilon_zcdp_tight=zcdp_epsilon(rho, delta, conversion="tight"),
            epsilon_exact=gaussian_epsilon(sigma=sigma, sensitivity=eff * math.sqrt(T), delta=delta),
        )
        # "tight" must also pass a PLD ledger (PrivacyLedger(method="pld")), whose discretisation is pessimistic
        # by ~1e-7 relative: the run is charged on such a ledger before anything is released.
        spent = max(cal.epsilon, compose([cal.step_cost()], delta=delta, method="pld").epsilon
                    if settings.accountant == "tight" else 0.0)
        if spent <= eps:
            return cal
        sigma *= 1.0 + max(1e-12, 2.0 * (spent / eps - 1.0))
