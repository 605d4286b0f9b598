"""Suite ``fm``: paper 000's vertical functional mechanism end to end on Adult, K = 3, per backend.

Targets (issue 8): logistic regression on Adult (d as encoded, K = 3, label at party 0) in <= 10 s with
``shares``, <= 60 s with ``ckks``, <= 10 min with ``paillier``. Baseline: the centralised functional mechanism
(one data holder, no cryptography) on the same records in the same process, so ``ratio`` is the price of the
secure computation. The note of each result gives the per-phase breakdown (seconds): ``local`` single-party
coefficients, ``cross`` secure cross-party products (slowest party), ``noise`` grid Laplace draws, ``solve``
the server's trimmed eigen-solve, and the accuracy reached. ``--quick`` uses a 5,000-record subsample.
``cpu`` is the process CPU time of the run (every party is a thread of this process): on a loaded machine it
is the better measure of the work done. Current figures: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import time
import warnings

from bench.harness import BenchResult
from mpdp.datasets import load_adult, train_test_split, vertical_by_sizes
from mpdp.learning.functional_mechanism.model import FMLogisticRegression
from mpdp.learning.functional_mechanism.objective import attribute_l1_bounds
from mpdp.learning.functional_mechanism.parties import BACKENDS
from mpdp.randomness import RandomSource


def run(quick: bool = False) -> list[BenchResult]:
    data = load_adult()
    rng = RandomSource.fresh()
    if quick:
        data, _ = train_test_split(data, 1 - 5000 / data.n, rng=rng.spawn("subsample"))
    train, test = train_test_split(data, 0.2, rng=rng.spawn("split"))
    part = vertical_by_sizes(train, parties=3)
    cols = [list(c) for c in part.columns]
    l1 = attribute_l1_bounds(train, part.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        base = FMLogisticRegression(1.0, row_l1=[float(sum(l1))], rng=rng.spawn("central"))
        base.fit(train.X[:, [c for group in cols for c in group]], train.y)
        base_seconds = time.perf_counter() - start
    results = []
    for backend in BACKENDS:
        model = FMLogisticRegression(1.0, partition=cols, backend=backend, row_l1=l1, rng=rng.spawn(backend))
        start, cpu = time.perf_counter(), time.process_time()
        model.fit(train.X, train.y)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        phases = ", ".join(f"{k}={v:.2f}" for k, v in model.phases_.items() if k in ("local", "cross", "noise",
                                                                                  "solve"))
        target = {"shares": 10, "ckks": 60, "paillier": 600}[backend]
        results.append(BenchResult(
            f"fm-logistic adult K=3 {backend}", train.n, seconds, "centralised FM", base_seconds,
            bytes=model.communication_.get("bytes"),
            note=f"{phases}; cpu={cpu:.1f} s (all threads; wall time suffers on a loaded machine); "
                 f"accuracy={model.score(test.X, test.y):.4f} at eps=1; target <= {target} s "
                 f"(d={train.d}, n={train.n})"))
    return results

