"""Paper 003's runs, written once: the parties, their order and roles, their random sources and their charges.

One run of a method (:class:`~mpdp.learning.distributed_erm.spec.Method`) is described by a :class:`Schedule`, the
public facts every party knows before it starts: the problem (loss, lambda), the method's perturbation settings,
the secure computation's set-up, the dimension and the runtime data parties, each a data party ``party{j}`` or (in
memory) a cohort ``parties{a}-{b}`` of equal-size data parties simulated together
(:func:`~mpdp.learning.distributed_erm.common.cohort_layout`), with their record counts. Every engine runs what
it says: the in-memory fits below (:func:`fit` and ``fit_mpc_gradp`` ..), ``mpdp run`` and ``mpdp launch``
through :mod:`~mpdp.learning.distributed_erm.deployment`, and (labels, calibration, charge) the Flower app:

* :attr:`Schedule.parties`: the canonical order: the data parties, then the aggregators ``agg0`` .. (and the
  ``dealer`` of the one-shot MPC methods), or the ``server`` of the local ones;
* :meth:`Schedule.role`: the one protocol run each party takes part in. A gradient method's rounds are inside
  it: each round the data parties' mean gradients at the current model are securely aggregated with noise added
  inside the secure computation (MPC Grad P) or sent in the clear with each party's own noise (Local Grad P),
  the noisy average is released, and every party takes the same step; the run stops after ``T`` rounds
  (``stop_after`` for the reproductions' partial runs). A one-shot method releases one average of the parties'
  (perturbed) minimisers;
* random sources: party ``p`` draws from ``root.spawn(p)``, ``root`` the run's seeded source descended by
  :func:`rng_path` (:func:`party_path` for an engine that draws a party's noise itself);
* :meth:`Schedule.cost`: what the ledger of a data party holding ``n`` records is charged before it sends
  anything, the whole run as one entry; every engine and the estimator charge through it
  (:meth:`Schedule.record_cost`, the largest, is a record's guarantee);
* :meth:`Schedule.privacy`: the guarantee a run reports, built from those charges.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting import BudgetSpender, PrivacyCost
from mpdp.dp.sensitivities.erm import averaged_gradient_sensitivity, gradient_sensitivity
from mpdp.errors import ParameterError, explain
from mpdp.learning.distributed_erm.baselines import (
    average_at_server,
    local_gradp_calibration,
    local_gradp_party_role,
    local_gradp_server,
    objective_mechanism,
    one_shot_party_role,
    one_shot_rows,
    output_laplace,
)
from mpdp.learning.distributed_erm.common import (
    SERVER,
    Accountant,
    DistributedFit,
    GaussianCalibration,
    GradientPerturbation,
    OutputPerturbation,
    PrivacySpent,
    calibrate_gradient_noise,
    charge,
    cohorts,
    per_size_class,
)
from mpdp.learning.distributed_erm.mpc import (
    DEALER,
    InMPCNoise,
    MPCSetup,
    gradp_aggregator_role,
    gradp_party_role,
    outp_aggregator_role,
    outp_party_role,
    output_epsilon,
    output_noise_scale,
    outsider_epsilon,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties, PartyGroup
from mpdp.learning.distributed_erm.spec import (
    ERMSettings,
    GradientSettings,
    Method,
    MPCGradientSettings,
    MPCOneShotSettings,
)
from mpdp.learning.spec.memory import ALGORITHM_LABEL
from mpdp.progress import SILENT, Progress
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.noise import MPC_LAPLACE_TV
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import run_protocol

__all__ = ["Perturbation", "Schedule", "fit", "fit_local_gradp", "fit_local_objp", "fit_local_outp",
           "fit_mpc_gradp", "fit_mpc_outp", "fit_pathak", "party_path", "perturbation_of", "rng_path", "setup_of"]

FloatArray = npt.NDArray[np.float64]
Perturbation = GradientPerturbation | OutputPerturbation


def rng_path(method: Method) -> tuple[str, ...]:
    """The labels by which a run's protocol root descends from the seeded root of ``mpdp run --seed``."""
    return (ALGORITHM_LABEL, method.value)


def party_path(method: Method, name: str) -> tuple[str, ...]:
    """The labels of party ``name``'s own random source (every draw it makes, its noise included)."""
    return (*rng_path(method), name)


def perturbation_of(method: Method, settings: ERMSettings, epsilon: float, delta: float, *,
                    record: tuple[int, ...] | None = None, stop_after: int | None = None) -> Perturbation:
    """The method's perturbation settings from its spec's options and the run's budget."""
    if not method.gradient:
        return OutputPerturbation(epsilon=epsilon)
    if not isinstance(settings, GradientSettings):
        raise ParameterError(explain(f"settings of {method}", type(settings).__name__, "its spec's GradientSettings",
                                     "build them with the spec (spec.settings_from)"))
    return GradientPerturbation(epsilon=epsilon, delta=delta, T=settings.T, eta=settings.eta,
                                accountant=cast(Accountant, settings.accountant), record=record, stop_after=stop_after)


def setup_of(settings: ERMSettings) -> MPCSetup:
    """The secure computation's set-up from the spec's options (the aggregators of the MPC methods)."""
    if isinstance(settings, MPCOneShotSettings | MPCGradientSettings):
        return MPCSetup(aggregators=settings.aggregators)
    return MPCSetup()


@dataclass(frozen=True)
class Schedule:
    """One run's public description (module docstring). ``clients`` maps each runtime data party, in run order,
    to the data parties it stands for; ``records`` to the records each of them holds."""

    method: Method
    problem: ERMProblem
    perturbation: Perturbation
    setup: MPCSetup
    clients: Mapping[str, int]
    records: Mapping[str, int]
    d: int

    def __post_init__(self) -> None:
        if not self.clients or set(self.clients) != set(self.records):
            raise ParameterError(explain("clients", dict(self.clients), "at least one data party, each with its "
                                         "record count", "describe every data party of the run"))
        if self.method.gradient:
            self.gradient_settings.check_step(self.problem)

    @property
    def gradient_settings(self) -> GradientPerturbation:
        if not isinstance(self.perturbation, GradientPerturbation):
            raise ParameterError(explain(f"perturbation of {self.method}", type(self.perturbation).__name__,
                                         "GradientPerturbation", "pass the gradient method's settings"))
        return self.perturbation

    @property
    def names(self) -> list[str]:
        return list(self.clients)

    @property
    def m(self) -> int:
        return int(sum(self.clients.values()))

    @property
    def n_min(self) -> int:
        """``n(1)``: the smallest data party's record count (public; every calibration uses it)."""
        return min(self.records.values())

    @property
    def sizes(self) -> tuple[int, ...]:
        """Every data party's record count, in run order."""
        return tuple(n for name, count in self.clients.items() for n in [self.records[name]] * count)

    @property
    def parties(self) -> tuple[str, ...]:
        """The canonical order: the data parties, then the aggregators (and dealer) or the server."""
        if self.method.local:
            return (*self.names, SERVER)
        return (*self.names, *self.setup.names) + (() if self.method.gradient else (DEALER,))

    def first(self, name: str) -> int:
        """The index of the first data party that runtime data party ``name`` stands for."""
        before = 0
        for client, count in self.clients.items():
            if client == name:
                return before
            before += count
        raise ParameterError(explain("data party", name, f"one of {self.names}", "use the plan's party names"))

    @cached_property
    def calibration(self) -> GaussianCalibration:
        """The Gaussian noise of a gradient method, calibrated for ``n(1)`` (MPC Grad P on the shares' grid)."""
        if self.method == Method.LOCAL_GRADP:
            return self.local_calibration(self.n_min)
        return calibrate_gradient_noise(gradient_sensitivity(self.problem.G, self.n_min), self.d,
                                        self.gradient_settings, grid_bits=self.setup.fmt.frac_bits)

    @cached_property
    def _local_calibrations(self) -> dict[int, GaussianCalibration]:
        return {}

    def local_calibration(self, n: int) -> GaussianCalibration:
        """Local Grad P's noise of a party with ``n`` records (each party calibrates to its own sensitivity)."""
        known = self._local_calibrations
        if n not in known:
            known[n] = local_gradp_calibration(self.problem, n, self.d, self.gradient_settings)
        return known[n]

    @cached_property
    def laplace_scale(self) -> float:
        """The Laplace scale (sum's units) the aggregators of MPC Out P or Pathak add."""
        return output_noise_scale(self.method, self.problem, self.m, self.n_min, self.d, self.perturbation.epsilon,
                                  self.setup)

    def role(self, name: str, group: PartyGroup | None, progress: Progress = SILENT) -> Any:
        """The role party ``name`` plays (``group``: its records, for a data party); ``progress``: where the
        party that takes the gradient steps (the server, or the opening aggregator) shows them."""
        problem, setup, d, names = self.problem, self.setup, self.d, self.names
        if name in self.clients:
            if group is None:
                raise ParameterError(explain(f"records of {name}", None, "its party group", "give it its rows"))
            if self.method == Method.MPC_GRADP:
                spec = setup.spec_for(dict(self.clients), d, problem.G)
                return gradp_party_role(problem, spec, group, self.gradient_settings)
            if self.method.mpc:
                return outp_party_role(problem, setup.spec_for(dict(self.clients), d, problem.G / problem.lam), group)
            if self.method == Method.LOCAL_GRADP:
                return local_gradp_party_role(problem, group, self.local_calibration(group.records),
                                              self.gradient_settings)
            return one_shot_party_role(group, one_shot_rows(self.method, problem, self.perturbation.epsilon, d))
        if name not in self.parties:
            raise ParameterError(explain("party", name, f"one of {list(self.parties)}", "use the plan's party names"))
        if name == SERVER:
            if self.method == Method.LOCAL_GRADP:
                return local_gradp_server(names, self.m, d, self.gradient_settings, progress)
            return average_at_server(names, self.m, "release")
        if name == DEALER:
            return TrustedDealer(DEALER, parties=setup.names)
        if self.method == Method.MPC_GRADP:
            spec = setup.spec_for(dict(self.clients), d, problem.G)
            noise = InMPCNoise("gaussian", self.calibration.sigma)
            return gradp_aggregator_role(problem, spec, setup, noise, self.gradient_settings, self.m, names, progress)
        spec = setup.spec_for(dict(self.clients), d, problem.G / problem.lam)
        return outp_aggregator_role(spec, self.laplace_scale, names)

    def model(self, results: Mapping[str, Any]) -> tuple[FloatArray, tuple[int, ...], FloatArray]:
        """``(theta, recorded iterations, iterates)`` from the parties' results: a gradient method's first data
        party, the server (``agg0`` for the MPC methods) of a one-shot one."""
        if self.method.gradient:
            final, iterates = results[self.holder]
            return (np.asarray(final, dtype=np.float64), self.gradient_settings.recorded,
                    np.asarray(iterates, dtype=np.float64))
        theta = np.asarray(results[self.holder], dtype=np.float64)
        return theta, (), theta[None, :]

    @property
    def holder(self) -> str:
        """The party whose result is the released model (:meth:`model`)."""
        if self.method.gradient:
            return self.names[0]
        return SERVER if self.method.local else self.setup.names[0]

    def cost(self, n: int) -> PrivacyCost:
        """The charge of a data party holding ``n`` records, the whole run as one entry: the ``(epsilon,
        delta)`` its records get (and their zCDP where the mechanism has one)."""
        eps, method = self.perturbation.epsilon, self.method
        if method.gradient:
            calibration = self.local_calibration(n) if method == Method.LOCAL_GRADP else self.calibration
            return calibration.run_cost(gradient_sensitivity(self.problem.G, n), self.d)
        if method == Method.LOCAL_OBJP:
            return objective_mechanism(self.problem, n, eps).cost
        if method == Method.LOCAL_OUTP:
            return PrivacyCost(epsilon=eps, delta=0.0, rho=eps * eps / 2, mechanism="laplace")
        # in-MPC Laplace: its sampler's distance from the exact discrete Laplace is added to delta
        return PrivacyCost(epsilon=output_epsilon(method, self.problem, self.m, n, self.n_min, self.d, eps, self.setup),
                           delta=self.d * MPC_LAPLACE_TV, mechanism="laplace")

    def record_cost(self) -> PrivacyCost:
        """A record's guarantee: the largest charge of any data party (the estimator's and analyst's view)."""
        costs = [self.cost(n) for n in sorted(set(self.records.values()))]
        return max(costs, key=lambda c: (c.epsilon, c.delta))

    def privacy(self) -> PrivacySpent:
        """What the run reports: a record's guarantee, every size class's charge, the calibration."""
        costs = {n: self.cost(n) for n in set(self.records.values())}
        worst = self.record_cost()
        return PrivacySpent(epsilon=worst.epsilon, delta=worst.delta,
                            per_party=per_size_class(self.sizes, lambda n: costs[n].epsilon), details=self.details())

    def details(self) -> dict[str, Any]:
        """The calibration: noise scales, rho, the epsilon by each accountant."""
        d, m, n1, setup = self.d, self.m, self.n_min, self.setup
        if self.method == Method.MPC_GRADP:
            cal = self.calibration
            return {**cal.as_dict(), "sigma_per_aggregator_of_average": cal.sigma / m,
                    "sigma_of_average": cal.sigma * math.sqrt(setup.aggregators) / m,
                    "epsilon_outsiders": outsider_epsilon(cal, setup, d),
                    "sensitivity_of_average": averaged_gradient_sensitivity(self.problem.G, m, n1),
                    "frac_bits": setup.frac_bits, "aggregators": setup.aggregators}
        if self.method == Method.LOCAL_GRADP:
            cal = self.calibration
            return {**cal.as_dict(), "sigma_per_party_n1": cal.sigma, "sigma_of_average_n1": cal.sigma / math.sqrt(m)}
        eps = self.perturbation.epsilon
        if self.method == Method.LOCAL_OBJP:
            mech = objective_mechanism(self.problem, n1, eps)
            return {"epsilon_prime_n1": mech.epsilon_prime, "extra_regularization_n1": mech.extra_regularization,
                    "noise_norm_scale_n1": 1.0 / mech.beta}
        if self.method == Method.LOCAL_OUTP:
            return {"laplace_scale_n1": output_laplace(self.problem, n1, eps, d).scale,
                    "l1_factor_sqrt_d": math.sqrt(d)}
        b_mean = self.laplace_scale / m
        return {"laplace_scale_of_average": b_mean, "laplace_scale_paper_scalar": b_mean / math.sqrt(d),
                "l1_factor_sqrt_d": math.sqrt(d), "frac_bits": setup.frac_bits, "aggregators": setup.aggregators}


def fit(method: Method, problem: ERMProblem, parties: HorizontalParties, perturbation: Perturbation, *,
        rng: RandomSource | None = None, ledger: BudgetSpender | None = None, cohort_size: int | None = None,
        setup: MPCSetup | None = None) -> DistributedFit:
    """Run ``method`` with every party in this process: the data parties in cohorts of at most ``cohort_size``
    (:func:`~mpdp.learning.distributed_erm.common.cohorts`), each party's :meth:`Schedule.role` one role of
    :func:`~mpdp.runtime.run_protocol`. A record's guarantee (:meth:`Schedule.record_cost`) is charged on
    ``ledger`` before any party starts."""
    groups = cohorts(parties, cohort_size)
    schedule = Schedule(method, problem, perturbation, setup or MPCSetup(), {c.name: c.group.size for c in groups},
                        {c.name: c.group.records for c in groups}, parties.d)
    charge(ledger, schedule.record_cost(), f"003/{method}")
    roles: dict[str, Any] = {c.name: schedule.role(c.name, c.group) for c in groups}
    roles.update({p: schedule.role(p, None) for p in schedule.parties if p not in roles})
    start = time.perf_counter()
    run = run_protocol(roles, rng=resolve(rng))
    seconds = time.perf_counter() - start
    theta, iterations, iterates = schedule.model(run.results)
    return DistributedFit(method, theta, iterations, iterates, schedule.privacy(), run.communication(), seconds)


def fit_mpc_gradp(problem: ERMProblem, parties: HorizontalParties, settings: GradientPerturbation, *,
                  rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                  cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """MPC Grad P: T rounds of securely averaged gradients + Gaussian noise added inside the secure computation.

    The sum of the parties' mean gradients has l2 sensitivity ``2G / n(1)`` (``2G / (m n(1))`` for the average);
    ``sigma`` is calibrated for it over T rounds by ``settings.accountant`` (the rounding to the shares' grid is
    added to the sensitivity). Each round every aggregator adds an exact discrete Gaussian ``N_Z(0, sigma^2)``
    (on the grid ``2^-f``) to its additive share of the sum before the shares are combined, so the opened sum
    carries ``A`` independent copies and every coalition of up to ``A - 1`` aggregators, with any number of data
    parties, still faces one copy it does not know: the claimed (eps, delta) holds against all of them, and
    outsiders (who know none) get more privacy (``details["epsilon_outsiders"]``). The price is ``sqrt(A)`` in
    the noise's std (``details["sigma_of_average"]``) compared with a single copy.

    Why not a single copy from the in-MPC rejection sampler (:func:`mpdp.protocols.noise.mpc_discrete_gaussian`):
    its fixed-point ``exp`` makes each coordinate only approximately discrete-Gaussian, priced at ``+2e-5`` in
    epsilon and ``+2.3e-7`` in delta per coordinate and release; over T = 1,500 releases of d = 100 coordinates
    that is ``+0.03`` in epsilon and ``+0.03`` in delta, far beyond the paper's delta = 1e-3. The per-aggregator
    exact Gaussians cost ``sqrt(2)`` in std (two aggregators) and nothing in the guarantee.
    """
    return fit(Method.MPC_GRADP, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size,
               setup=setup)


def fit_mpc_outp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                 rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                 cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """MPC Out P: securely averaged local minimisers + in-MPC Laplace noise for ``2G/(m n(1) lam)``, one reveal.

    The sum of the m minimisers has l2 sensitivity ``2G / (n(1) lam)`` (one party's minimiser moves that much,
    Chaudhuri et al. Corollary 8); the noise on the sum is calibrated to ``sqrt(d)`` times that in l1, hence
    ``sqrt(d) 2G / (m n(1) lam eps)`` on the average (:mod:`~mpdp.learning.distributed_erm.mpc`). Per party,
    records of a party with ``n_j`` records are about ``eps n(1) / n_j``-DP
    (:func:`~mpdp.learning.distributed_erm.mpc.output_epsilon`).
    """
    return fit(Method.MPC_OUTP, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size,
               setup=setup)


def fit_pathak(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
               rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
               cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """Pathak et al.: MPC Out P's pipeline with noise ``2G / (n(1) lam eps)`` on the average (m times more).

    Pathak et al. bound the average's sensitivity by one party's, ``2G / (n(1) lam)``, forgetting the 1/m; the
    sum is therefore treated as ``m`` times as sensitive (and, as everywhere, ``sqrt(d)`` for the l1 bound).
    """
    return fit(Method.PATHAK, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size,
               setup=setup)


def fit_local_outp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                   rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                   cohort_size: int | None = None) -> DistributedFit:
    """Local Out P: every party releases its own Laplace-perturbed minimiser; the aggregator averages.

    Accuracy: the averaged noise has per-coordinate std ``sqrt(2) sqrt(d) 2G / (sqrt(m) n lam eps)`` for equal
    party sizes n (Table 1's ``2G / (sqrt(m) n(1) lam eps)`` times the l1 factor ``sqrt(d)``).
    """
    return fit(Method.LOCAL_OUTP, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size)


def fit_local_objp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                   rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                   cohort_size: int | None = None) -> DistributedFit:
    """Local Obj P: every party releases its objective-perturbed minimiser (CMS11 Algorithm 2); average."""
    return fit(Method.LOCAL_OBJP, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size)


def fit_local_gradp(problem: ERMProblem, parties: HorizontalParties, settings: GradientPerturbation, *,
                    rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                    cohort_size: int | None = None) -> DistributedFit:
    """Local Grad P: T rounds; each party sends its own noisy mean gradient, the aggregator averages.

    Party j's noise is calibrated to its sensitivity ``2G / n_j`` over T releases (``settings.accountant``);
    every party reaches the same (epsilon, delta). Accuracy: the averaged gradient's noise has per-coordinate
    std ``sigma_j / sqrt(m)`` for equal sizes (Table 1's Local Grad P column, with the sound calibration).
    """
    return fit(Method.LOCAL_GRADP, problem, parties, settings, rng=rng, ledger=ledger, cohort_size=cohort_size)
