"""Suite ``mpc``: the secret-sharing engine on 10^5 values at 2 and 3 computing parties (+ a dealer).

Operations: fixed-point multiplication and secure comparison in Z_2^64 (f = 20), a 512 x 512 matrix
product in Z_2^64, and exp / reciprocal / division / square root in Z_2^128 (f = 48) over their documented
domains (exp on [-16, 16], reciprocal, division and sqrt with divisors/arguments log-uniform on
[2^-10, 2^16]). Baseline: the same operation in plaintext numpy float64, timed in the same run.

Each party runs in its own thread over the in-memory transport; ``seconds`` is the wall time of the
operation in party 0 between two synchronising openings (inputs already shared, outputs not yet opened),
so it includes the dealer's work and every message. ``bytes`` is the traffic between computing parties
during the operation (all parties, both directions); the note adds bytes per element, the dealer's bytes
(corrections, to party 0 only) and the communication rounds. Errors are measured against float64 on the
revealed results: absolute for mul/matmul/comparison (expected below 2^-20 = 9.5e-7), relative for the
high-precision functions (target 1e-6).

The host has 2 cores shared by every party thread (and, during development, by other jobs): the timings
are noisy and pessimistic for a deployment with one machine per party. The note therefore also gives the
CPU time of the whole process (all parties and the dealer) during the operation, which other jobs on
the machine disturb much less. Run with ``OPENBLAS_NUM_THREADS=1``: party threads calling a multithreaded
BLAS at once oversubscribe the cores (the matrix product slows down several times).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.harness import BenchResult, time_call
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION, FixedPointFormat
from mpdp.protocols.mpc import MPCSession, SharedFixedPoint, TrustedDealer
from mpdp.protocols.mpc.comparison import ltz
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

NAMES = ("alice", "bob", "carol")


def _measure(parties: int, fmt: FixedPointFormat, inputs: dict[str, tuple[np.ndarray, float]],
             op: Callable[[dict[str, SharedFixedPoint]], SharedFixedPoint]) -> dict[str, Any]:
    """Run ``op`` on shared inputs; returns seconds, revealed output, online bytes, dealer bytes, rounds."""
    owners = list(NAMES[:parties])

    def role(comm: Any) -> dict[str, Any]:
        with MPCSession.with_dealer(comm, fmt=fmt) as s:
            shared = {}
            for i, (key, (values, bound)) in enumerate(inputs.items()):
                owner = owners[i % parties]
                shared[key] = s.input(owner, values if comm.name == owner else None, bound=bound)
            s.public(np.zeros(1)).reveal()  # synchronise
            sent, rounds = comm.traffic.bytes_sent - comm.traffic.sent_to.get("dealer", 0), comm.traffic.rounds
            start, cpu = time.perf_counter(), time.process_time()
            out = op(shared)
            s.public(np.zeros(1)).reveal()  # synchronise: every party has finished the operation
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            online = comm.traffic.bytes_sent - comm.traffic.sent_to.get("dealer", 0) - sent
            rounds = comm.traffic.rounds - rounds
            return {"seconds": seconds, "cpu": cpu, "out": out.reveal(), "online": online, "rounds": rounds}

    roles: dict[str, Any] = {n: role for n in owners}
    roles["dealer"] = TrustedDealer()
    run = run_protocol(roles, rng=RandomSource.fresh(), timeout=600)
    first = run.results[owners[0]]
    return {"seconds": first["seconds"], "cpu": first["cpu"], "out": first["out"], "rounds": first["rounds"],
            "online": sum(run.results[n]["online"] for n in owners),
            "dealer": run.traffic["dealer"].bytes_sent}


def _result(name: str, n: int, m: dict[str, Any], baseline: str, base_s: float, ref: np.ndarray,
            relative: bool) -> BenchResult:
    err = np.abs(m["out"] - ref)
    rel = float(np.max(err / np.abs(ref))) if relative else None
    note = (f"{m['online'] / n:.0f} B/element online, dealer {m['dealer'] / n:.0f} B/element, "
            f"{m['rounds']} rounds, {m['cpu']:.3f} s CPU of all parties ({n / max(m['cpu'], 1e-9):.3g}/CPU-s)")
    return BenchResult(name, n, m["seconds"], baseline, base_s, max_abs_error=float(np.max(err)),
                       max_rel_error=rel, bytes=int(m["online"]), note=note)


def run(quick: bool = False) -> list[BenchResult]:
    n = 10_000 if quick else 100_000
    side = 128 if quick else 512
    rng = np.random.default_rng(2026)
    x = rng.uniform(-100, 100, n)
    y = rng.uniform(-100, 100, n)
    e = rng.uniform(-16, 16, n)
    e[:2] = [-16.0, 16.0]
    d = 2.0 ** rng.uniform(-10, 16, n)
    d[:2] = [2.0**-10, 2.0**16]
    a = 2.0 ** rng.uniform(-10, 16, n)
    ma, mb = rng.uniform(-1, 1, (side, side)), rng.uniform(-1, 1, (side, side))
    fx, fy = FAST.decode(FAST.encode(x)), FAST.decode(FAST.encode(y))
    fma, fmb = FAST.decode(FAST.encode(ma)), FAST.decode(FAST.encode(mb))
    hp = HIGH_PRECISION
    he, hd, ha = (hp.decode(hp.encode(v)) for v in (e, d, a))
    results: list[BenchResult] = []
    for parties in (2, 3):
        tag = f"{parties}p"
        base, _ = time_call(lambda: x * y)
        m = _measure(parties, FAST, {"x": (x, 100.0), "y": (y, 100.0)}, lambda s: s["x"] * s["y"])
        results.append(_result(f"mul Z_2^64 f=20 [{tag}]", n, m, "numpy", base, fx * fy, False))

        base, _ = time_call(lambda: ma @ mb)
        m = _measure(parties, FAST, {"a": (ma, 1.0), "b": (mb, 1.0)}, lambda s: s["a"] @ s["b"])
        results.append(_result(f"matmul {side}x{side} Z_2^64 [{tag}]", side * side, m, "numpy", base,
                               fma @ fmb, False))

        base, _ = time_call(lambda: (x < 0).astype(float))
        m = _measure(parties, FAST, {"x": (x, 100.0)}, lambda s: ltz(s["x"]))
        results.append(_result(f"comparison x<0 Z_2^64 [{tag}]", n, m, "numpy", base, (fx < 0).astype(float),
                               False))

        base, _ = time_call(lambda: np.exp(e))
        m = _measure(parties, hp, {"e": (e, 16.0)}, lambda s: s["e"].exp())
        results.append(_result(f"exp [-16,16] Z_2^128 [{tag}]", n, m, "numpy", base, np.exp(he), True))

        base, _ = time_call(lambda: 1 / d)
        m = _measure(parties, hp, {"d": (d, 2.0**16)}, lambda s: s["d"].reciprocal())
        results.append(_result(f"reciprocal [2^-10,2^16] [{tag}]", n, m, "numpy", base, 1 / hd, True))

        base, _ = time_call(lambda: a / d)
        m = _measure(parties, hp, {"a": (a, 2.0**16), "d": (d, 2.0**16)}, lambda s: s["a"] / s["d"])
        results.append(_result(f"div [2^-10,2^16]^2 [{tag}]", n, m, "numpy", base, ha / hd, True))

        base, _ = time_call(lambda: np.sqrt(d))
        m = _measure(parties, hp, {"d": (d, 2.0**16)}, lambda s: s["d"].sqrt())
        results.append(_result(f"sqrt [2^-10,2^16] [{tag}]", n, m, "numpy", base, np.sqrt(hd), True))
    return results
