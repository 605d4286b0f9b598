"""Suite ``audit``: the privacy audits of every release path (``mpdp audit --all``), timed.

Baseline (same process): drawing the same number of discrete Laplace noises in one vectorised call, the
floor of any audit's sampling; each row's ratio says how much the release path itself costs per sample.
The note gives the claim, the certified bound and whether the broken variant (quick budgets) is flagged.
"""

from __future__ import annotations

import time
import warnings
from fractions import Fraction

from bench.harness import BenchResult
from mpdp.audit.registry import AUDITS, build
from mpdp.dp.samplers import discrete_laplace
from mpdp.errors import PrivacyLeakWarning
from mpdp.randomness import RandomSource


def run(quick: bool = False) -> list[BenchResult]:
    results = []
    rng = RandomSource.seeded("bench-audit")
    for name, entry in AUDITS.items():
        case = build(name)
        samples = entry.quick_samples if quick else case.samples
        start_cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            real = case.run(samples=samples, rng=rng.spawn(name))
            broken = build(name, broken=True).run(samples=samples, rng=rng.spawn(name + "/broken"))
        cpu = time.process_time() - start_cpu
        start = time.perf_counter()
        discrete_laplace(Fraction(1), 2 * samples, rng=rng)
        base = time.perf_counter() - start
        note = (f"claimed {real.claimed_epsilon:.3f}, bound {real.lower_bound:.3f}; broken bound "
                f"{broken.lower_bound:.3f} ({'flagged' if broken.flagged else 'NOT flagged'})")
        results.append(BenchResult(f"audit {name} (real + broken)", 2 * samples, real.seconds + broken.seconds,
                                   "vectorised discrete Laplace draws", 2 * base, note=note, cpu_seconds=cpu))
    return results
