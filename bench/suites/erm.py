"""Suite ``erm``: paper 003's distributed ERM at scale (MPC Grad P with real secure aggregation, in-MPC noise).

Target (issue 11): MPC Grad P with m = 50,000 parties of one record each, T = 1,500 iterations, real secure
aggregation and noise generated inside the secure computation, in at most 5 minutes on this machine.

Workload: the synthetic ridge task of ``003-fig2`` (50,000 training records, 95 features + intercept = 96
coordinates; Huber-capped ridge, G = 1, lambda = 1e-3, eta = 1, eps = 0.5, delta = 1e-3). The 50,000 parties
run as vectorised cohorts of 1,024 (one row per party in every message) talking to two aggregators.

Besides wall time the note reports the process's CPU time (all threads) and the load average: on a shared
machine the wall time depends on what else runs, the CPU time much less.

Baseline: the same T iterations of plain (non-private, single-process) full-batch gradient descent in numpy, in
the same run, so the ratio shows the price of the protocol (shares, messages, in-MPC noise) per iteration.
Quick mode: m = 5,000 and T = 100.
"""

from __future__ import annotations

import os
import time

import numpy as np

from bench.harness import BenchResult
from mpdp.datasets.synthetic import sparse_linear_regression
from mpdp.learning import erm
from mpdp.learning.distributed_erm.common import GradientPerturbation, gd_step
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.learning.distributed_erm.rounds import fit_mpc_gradp
from mpdp.randomness import RandomSource


def run(quick: bool = False) -> list[BenchResult]:
    m, T = (5_000, 100) if quick else (50_000, 1_500)
    rng = RandomSource.fresh()
    data = sparse_linear_regression(m, 95, 1.0, rng=rng.spawn("data")).data
    X = erm.add_intercept(data.unit_ball())
    y = data.y
    problem = ERMProblem(erm.HuberLoss(c=1.0), lam=1e-3)
    parties = HorizontalParties.from_rows(X, y, [np.array([i]) for i in range(m)], task="regression")
    settings = GradientPerturbation(epsilon=0.5, delta=1e-3, T=T, eta=1.0, record=(T,))

    load_before = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    fit = fit_mpc_gradp(problem, parties, settings, rng=rng.spawn("fit"))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu

    def plain() -> np.ndarray:
        objective = erm.Objective(problem.loss, X, y, lam=0.0)
        theta = np.zeros(X.shape[1])
        for _ in range(T):
            theta = gd_step(theta, objective.data_gradient(theta), problem, 1.0)
        return theta

    base_start = time.perf_counter()
    plain()
    baseline = time.perf_counter() - base_start
    gap = erm.Objective(problem.loss, X, y, lam=problem.lam)
    star = erm.solve(gap).value
    verdict = "n/a (quick)" if quick else ("met" if seconds <= 300 else "MISSED")
    cpu_verdict = "n/a (quick)" if quick else ("within" if cpu <= 300 else "over")
    note = (f"m={m} one-record parties, T={T}, d={X.shape[1]}, 2 aggregators; target <= 300 s for m=50,000, "
            f"T=1,500: {verdict} ({seconds:.1f} s wall, {cpu:.1f} s CPU of all threads: {cpu_verdict} 300 s; "
            f"1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on "
            f"{os.cpu_count()} cores); optimality gap "
            f"{gap.value(fit.theta) - star:.3g}; sigma of the averaged gradient "
            f"{fit.privacy.details['sigma_of_average']:.3g}; eps spent {fit.privacy.epsilon:.4g} (zCDP), "
            f"{fit.privacy.details['epsilon_exact']:.4g} (exact curve)")
    return [BenchResult(f"MPC Grad P, m={m}, T={T}", T, seconds, "plaintext numpy GD", baseline,
                        bytes=fit.communication["bytes"], note=note)]
