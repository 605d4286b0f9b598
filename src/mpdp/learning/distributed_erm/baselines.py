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
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.grid import snap_to_grid
from mpdp.dp.mechanisms import LaplaceMechanism, ObjectivePerturbation, gamma_norm_noise
from mpdp.dp.samplers import discrete_gaussian, discrete_laplace
from mpdp.dp.sensitivities.erm import gradient_sensitivity, minimizer_sensitivity
from mpdp.errors import ParameterError, explain
from mpdp.learning.distributed_erm.common import (
    SERVER,
    GaussianCalibration,
    GradientPerturbation,
    calibrate_gradient_noise,
    gd_step,
    release_grid_bits,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup
from mpdp.learning.distributed_erm.spec import Method
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm

__all__ = ["average_at_server", "laplace_rows", "local_gradp_calibration", "local_gradp_party_role",
           "local_gradp_server", "objective_mechanism", "one_shot_party_role", "one_shot_rows", "output_laplace"]

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


def one_shot_rows(method: Method, problem: ERMProblem, epsilon: float, d: int) -> Any:
    """``(group, rng) -> released rows`` of Local Out P or Local Obj P (``method``)."""
    if method == Method.LOCAL_OUTP:
        def outp(group: PartyGroup, source: RandomSource) -> FloatArray:
            mech = output_laplace(problem, group.records, epsilon, d)
            return laplace_rows(mech, group.local_minimizers(problem), rng=source)

        return outp

    def objp(group: PartyGroup, source: RandomSource) -> FloatArray:
        n = group.records
        mech = objective_mechanism(problem, n, epsilon)
        b = gamma_norm_noise(d, mech.beta, group.size, rng=source)
        theta = group.local_minimizers(problem, lam=problem.lam + mech.extra_regularization, linear=b / n)
        out: FloatArray = np.ldexp(np.rint(np.ldexp(theta, _RELEASE_GRID_BITS)), -_RELEASE_GRID_BITS)
        return out

    return objp


# -- Local Obj P ------------------------------------------------------------------------------------------------
def objective_mechanism(problem: ERMProblem, n: int, epsilon: float) -> ObjectivePerturbation:
    """Local Obj P's mechanism for a party with ``n`` records (CMS11 Algorithm 2); its ``cost`` is the party's."""
    if problem.G > 1.0 + 1e-12:
        raise ParameterError(explain("G", problem.G, "G <= 1 (objective perturbation assumes |loss'| <= 1)",
                                     "use a 1-Lipschitz loss, e.g. HuberLoss(c=1.0) or LogisticLoss()"))
    return ObjectivePerturbation(epsilon=epsilon, n_samples=n, regularization=problem.lam,
                                 smoothness=problem.loss.smoothness)


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
