"""Paper 003's baselines where each party protects its own output: Local Out P, Local Obj P, Local Grad P.

Each data party makes its own differentially private release from its own records and sends it *in the
clear* to an aggregator (``server``), which averages; no secure computation is involved, so every message
must already be private. The noise of m parties then averages down only by ``sqrt(m)``, against ``m`` for
the MPC methods (:mod:`mpdp.learning.distributed_erm.mpc`, which also holds Pathak et al.'s baseline because
it shares MPC Out P's secure aggregation).

* **Local Out P** (Chaudhuri et al.'s output perturbation, per party): party j releases its minimiser plus
  Laplace noise for the l2 sensitivity ``2G / (n_j lam)``.
* **Local Obj P** (Chaudhuri et al.'s objective perturbation, Algorithm 2, per party): party j releases the
  minimiser of ``J_j(theta) + <b, theta> / n_j + (Delta / 2) ||theta||^2`` with ``||b|| ~ Gamma(d, 2/eps')``.
* **Local Grad P** (Shokri-Shmatikov style with zCDP accounting): every iteration party j releases its mean
  gradient plus Gaussian noise for the sensitivity ``2G / n_j``, calibrated over T iterations.

Soundness notes (where mpdp departs from the paper, and why)
------------------------------------------------------------
* Laplace noise is exact discrete Laplace on a grid (:class:`mpdp.dp.mechanisms.LaplaceMechanism`). The
  Laplace mechanism needs an l1 sensitivity; from the l2 bound we use ``sqrt(d) * 2G / (n_j lam)``. The paper's
  coordinate-wise ``Lap(2G / (n_j lam eps))`` is eps-DP only for d = 1 (:mod:`mpdp.dp.sensitivities.erm`).
  MPC Out P and Pathak get the same treatment, so the comparison is unchanged.
* Gaussian noise is exact discrete Gaussian on a grid; the grid's rounding is added to the sensitivity.
* Objective perturbation needs ``|loss'| <= 1`` (G <= 1) and a loss with ``|loss''| <= c``; the released
  minimiser is rounded to a ``2^-24`` grid, coarser than the solver's tolerance, as
  :func:`mpdp.dp.mechanisms.gamma_norm_noise` advises.

Security
--------
Each party's message is (epsilon, delta)-DP for its own records on its own; the aggregator and the other
parties may collude without learning more. Nothing protects a party's message beyond its own noise.

References
----------
Paper 003 (Jayaraman et al., NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`) section 4 (baselines) and
Table 1; K. Chaudhuri,
C. Monteleoni, A. Sarwate, JMLR 12 (2011), Algorithms 1-2; R. Shokri, V. Shmatikov, CCS 2015.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting import BudgetSpender
from mpdp.dp.grid import snap_to_grid
from mpdp.dp.mechanisms import LaplaceMechanism, ObjectivePerturbation, gamma_norm_noise
from mpdp.dp.samplers import discrete_gaussian, discrete_laplace
from mpdp.dp.sensitivities.erm import gradient_sensitivity, minimizer_sensitivity
from mpdp.errors import ParameterError, explain
from mpdp.learning.distributed_erm.common import (
    SERVER,
    DistributedFit,
    GaussianCalibration,
    GradientPerturbation,
    OutputPerturbation,
    PrivacySpent,
    calibrate_gradient_noise,
    charge,
    cohorts,
    gd_step,
    laplace_cost,
    per_size_class,
    release_grid_bits,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties, PartyGroup
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import Comm, run_protocol

__all__ = ["average_at_server", "fit_local_gradp", "fit_local_objp", "fit_local_outp", "laplace_rows",
           "local_gradp_calibration", "local_gradp_party_role", "local_gradp_server", "one_shot_party_role",
           "one_shot_rows", "output_laplace"]

FloatArray = npt.NDArray[np.float64]
_RELEASE_GRID_BITS = 24  # objective perturbation's released minimiser is rounded to 2^-24


# -- noise on rows (one row = one party's release) -------------------------------------------------------------
def output_laplace(problem: ERMProblem, n: int, epsilon: float, dim: int, *, scale: float = 1.0) -> LaplaceMechanism:
    """The Laplace mechanism releasing an average of minimisers whose l2 sensitivity is ``scale * 2G/(n lam)``.

    ``scale`` is ``1`` for one party's own minimiser (Local Out P), ``1/m`` for MPC Out P's average; the l1
    sensitivity handed to the mechanism is ``sqrt(dim)`` times the l2 one (module docstring).
    """
    l1 = math.sqrt(dim) * scale * minimizer_sensitivity(problem.G, n, problem.lam)
    # a minimiser satisfies lam ||theta|| <= G, so its entries (and their average) are at most G / lam
    return LaplaceMechanism(epsilon=epsilon, sensitivity=l1,
                            grid_bits=release_grid_bits(l1 / epsilon, problem.G / problem.lam))


def laplace_rows(mechanism: LaplaceMechanism, rows: FloatArray, *, rng: RandomSource) -> FloatArray:
    """Each row released by ``mechanism`` separately (rows are different parties' vectors), exactly on its grid.

    Equivalent to ``mechanism.release(row)`` for every row, vectorised: each row is snapped to the grid and
    gets its own discrete Laplace noise of the mechanism's scale for a ``d``-coordinate release.
    """
    k = int(mechanism.grid_bits or 0)
    units = snap_to_grid(rows, k)
    noise = np.asarray(discrete_laplace(mechanism.grid_scale(rows.shape[-1]), units.shape, rng=rng))
    out: FloatArray = np.ldexp((units + noise).astype(np.float64), -k)
    return out


def gaussian_rows(calibration: GaussianCalibration, rows: FloatArray, *, rng: RandomSource) -> FloatArray:
    """Each row plus its own exact discrete Gaussian noise of std ``calibration.sigma`` on the calibration grid."""
    k = calibration.grid_bits
    units = snap_to_grid(rows, k)
    s = Fraction(calibration.sigma) * Fraction(2) ** k
    noise = np.asarray(discrete_gaussian(s * s, units.shape, rng=rng))
    out: FloatArray = np.ldexp((units + noise).astype(np.float64), -k)
    return out


def average_at_server(names: list[str], m: int, label: str) -> Any:
    """The aggregator's role for a one-shot method: average every party's row, send the model back."""

    def role(comm: Comm) -> FloatArray:
        rows = comm.gather(names, label=label)
        total = sum((np.asarray(r, dtype=np.float64).sum(axis=0) for r in rows.values()),
                    np.zeros(np.asarray(next(iter(rows.values()))).shape[-1]))
        model: FloatArray = total / m
        comm.broadcast(model, label="model", to=names)
        return model

    return role


def one_shot_party_role(group: PartyGroup, make_rows: Any) -> Any:
    """A data party (or cohort) of Local Out P / Obj P: sends its released rows, receives the average."""
    def role(comm: Comm) -> FloatArray:
        comm.send(SERVER, make_rows(group, comm.rng), label="release")
        model: FloatArray = comm.recv(SERVER, label="model")
        return model

    return role


def one_shot_rows(method: str, problem: ERMProblem, epsilon: float, d: int) -> Any:
    """``(group, rng) -> released rows`` of Local Out P (``"local-outp"``) or Local Obj P (``"local-objp"``)."""
    if method == "local-outp":
        def outp(group: PartyGroup, source: RandomSource) -> FloatArray:
            mech = output_laplace(problem, group.records, epsilon, d)
            return laplace_rows(mech, group.local_minimizers(problem), rng=source)

        return outp

    def objp(group: PartyGroup, source: RandomSource) -> FloatArray:
        n = group.records
        mech = _objective_mechanism(problem, n, epsilon)
        b = gamma_norm_noise(d, mech.beta, group.size, rng=source)
        theta = group.local_minimizers(problem, lam=problem.lam + mech.extra_regularization, linear=b / n)
        out: FloatArray = np.ldexp(np.rint(np.ldexp(theta, _RELEASE_GRID_BITS)), -_RELEASE_GRID_BITS)
        return out

    return objp


def _one_shot(method: str, parties: HorizontalParties, make_rows: Any, *, rng: RandomSource | None,
              cohort_size: int | None) -> tuple[FloatArray, dict[str, int], float]:
    groups = cohorts(parties, cohort_size)
    names = [c.name for c in groups]
    roles: dict[str, Any] = {c.name: one_shot_party_role(c.group, make_rows) for c in groups}
    roles[SERVER] = average_at_server(names, parties.m, "release")
    start = time.perf_counter()
    run = run_protocol(roles, rng=resolve(rng))
    return run.results[SERVER], run.communication(), time.perf_counter() - start


# -- Local Out P ------------------------------------------------------------------------------------------------
def fit_local_outp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                   rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                   cohort_size: int | None = None) -> DistributedFit:
    """Local Out P: every party releases its own Laplace-perturbed minimiser; the aggregator averages.

    Accuracy: the averaged noise has per-coordinate std ``sqrt(2) sqrt(d) 2G / (sqrt(m) n lam eps)`` for equal
    party sizes n (Table 1's ``2G / (sqrt(m) n(1) lam eps)`` times the l1 factor ``sqrt(d)``).
    """
    d, eps = parties.d, settings.epsilon
    smallest = output_laplace(problem, parties.n_min, eps, d)
    charge(ledger, laplace_cost(eps, smallest.scale, smallest.sensitivity), "003/local-outp")

    rows = one_shot_rows("local-outp", problem, eps, d)
    theta, comm, seconds = _one_shot("local-outp", parties, rows, rng=rng, cohort_size=cohort_size)
    privacy = PrivacySpent(epsilon=eps, delta=0.0, per_party=per_size_class(parties.sizes, lambda n: eps),
                           details={"laplace_scale_n1": smallest.scale,
                                    "l1_factor_sqrt_d": math.sqrt(d)})
    return DistributedFit("local-outp", theta, (), theta[None, :], privacy, comm, seconds)


# -- Local Obj P ------------------------------------------------------------------------------------------------
def _objective_mechanism(problem: ERMProblem, n: int, epsilon: float) -> ObjectivePerturbation:
    if problem.G > 1.0 + 1e-12:
        raise ParameterError(explain("G", problem.G, "G <= 1 (objective perturbation assumes |loss'| <= 1)",
                                     "use a 1-Lipschitz loss, e.g. HuberLoss(c=1.0) or LogisticLoss()"))
    return ObjectivePerturbation(epsilon=epsilon, n_samples=n, regularization=problem.lam,
                                 smoothness=problem.loss.smoothness)


def fit_local_objp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                   rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                   cohort_size: int | None = None) -> DistributedFit:
    """Local Obj P: every party releases its objective-perturbed minimiser (CMS11 Algorithm 2); average."""
    d, eps = parties.d, settings.epsilon
    mechanisms = {n: _objective_mechanism(problem, n, eps) for n in set(parties.sizes)}
    charge(ledger, mechanisms[parties.n_min].cost, "003/local-objp")

    rows = one_shot_rows("local-objp", problem, eps, d)
    theta, comm, seconds = _one_shot("local-objp", parties, rows, rng=rng, cohort_size=cohort_size)
    smallest = mechanisms[parties.n_min]
    privacy = PrivacySpent(epsilon=eps, delta=0.0, per_party=per_size_class(parties.sizes, lambda n: eps),
                           details={"epsilon_prime_n1": smallest.epsilon_prime,
                                    "extra_regularization_n1": smallest.extra_regularization,
                                    "noise_norm_scale_n1": 1.0 / smallest.beta})
    return DistributedFit("local-objp", theta, (), theta[None, :], privacy, comm, seconds)


# -- Local Grad P -----------------------------------------------------------------------------------------------
def local_gradp_calibration(problem: ERMProblem, n: int, d: int, settings: GradientPerturbation) -> GaussianCalibration:
    """The noise of a party with ``n`` records in Local Grad P (its own sensitivity ``2G / n`` over T steps)."""
    return calibrate_gradient_noise(gradient_sensitivity(problem.G, n), d, settings, value_bound=problem.G)


def local_gradp_party_role(problem: ERMProblem, group: PartyGroup, cal: GaussianCalibration,
                           settings: GradientPerturbation) -> Any:
    """A data party (or cohort) of Local Grad P: sends its noisy mean gradients, steps on the average."""
    d = group.X.shape[-1]
    recorded = set(settings.recorded)

    def role(comm: Comm) -> tuple[FloatArray, FloatArray]:
        theta = np.zeros(d)
        trace = []
        for t in range(1, settings.iterations + 1):
            grads = group.local_gradients(problem, theta)
            comm.send(SERVER, gaussian_rows(cal, grads, rng=comm.rng), label="noisy-gradients")
            theta = gd_step(theta, comm.recv(SERVER, label="mean-gradient"), problem, settings.eta)
            if t in recorded:
                trace.append(theta)
        return theta, np.array(trace).reshape(len(trace), d)

    return role


def local_gradp_server(names: list[str], m: int, d: int, settings: GradientPerturbation) -> Any:
    """The aggregator of Local Grad P: averages the parties' noisy gradients in the clear each step."""
    def server(comm: Comm) -> None:
        for _ in range(settings.iterations):
            rows = comm.gather(names, label="noisy-gradients")
            mean = sum((np.asarray(r).sum(axis=0) for r in rows.values()), np.zeros(d)) / m
            comm.broadcast(mean, label="mean-gradient", to=names)

    return server


def fit_local_gradp(problem: ERMProblem, parties: HorizontalParties, settings: GradientPerturbation, *,
                    rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                    cohort_size: int | None = None) -> DistributedFit:
    """Local Grad P: T rounds; each party sends its own noisy mean gradient, the aggregator averages.

    Party j's noise is calibrated to its sensitivity ``2G / n_j`` over T releases (``settings.accountant``);
    every party reaches the same (epsilon, delta). Accuracy: the averaged gradient's noise has per-coordinate
    std ``sigma_j / sqrt(m)`` for equal sizes (Table 1's Local Grad P column, with the sound calibration).
    """
    settings.check_step(problem)
    d = parties.d
    calibrations = {n: local_gradp_calibration(problem, n, d, settings) for n in set(parties.sizes)}
    smallest = calibrations[parties.n_min]
    charge(ledger, smallest.step_cost(), "003/local-gradp")
    groups = cohorts(parties, cohort_size)
    names = [c.name for c in groups]
    roles: dict[str, Any] = {c.name: local_gradp_party_role(problem, c.group, calibrations[c.group.records], settings)
                             for c in groups}
    roles[SERVER] = local_gradp_server(names, parties.m, d, settings)
    start = time.perf_counter()
    run = run_protocol(roles, rng=resolve(rng))
    seconds = time.perf_counter() - start
    final, iterates = run.results[names[0]]
    privacy = PrivacySpent(
        epsilon=smallest.epsilon, delta=settings.delta,
        per_party=per_size_class(parties.sizes, lambda n: calibrations[n].epsilon),
        details={**smallest.as_dict(), "sigma_per_party_n1": smallest.sigma,
                 "sigma_of_average_n1": smallest.sigma / math.sqrt(parties.m)},
    )
    return DistributedFit("local-gradp", final, settings.recorded, iterates, privacy, run.communication(), seconds)
