"""Suite ``runtime``: the random source and the wire codec.

Baselines: ``os.urandom`` for raw randomness (the OS CSPRNG), and numpy's ``tobytes``/``frombuffer`` for
the codec (the cost of copying the same bytes with no framing or checks).
"""

from __future__ import annotations

import os

import numpy as np

from bench.harness import BenchResult, time_call
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode, run_protocol


def run(quick: bool = False) -> list[BenchResult]:
    rng = RandomSource.fresh()
    n = 10**6 if quick else 10**7
    results = []
    seconds, _ = time_call(lambda: rng.uint64(n))
    base, _ = time_call(lambda: np.frombuffer(os.urandom(8 * n), dtype=np.uint64))
    results.append(BenchResult("ring Z_2^64 draws", n, seconds, "os.urandom", base, bytes=8 * n))
    p = (1 << 61) - 1
    seconds, _ = time_call(lambda: rng.below(p, n))
    results.append(BenchResult("uniform Z_p draws (p=2^61-1)", n, seconds, "os.urandom", base))
    seconds, _ = time_call(lambda: rng.random(n))
    results.append(BenchResult("uniform floats [0,1)", n, seconds, "os.urandom", base))
    big = (1 << 2048) - 159
    m = 1000 if quick else 10000
    seconds, _ = time_call(lambda: rng.randbelow_many(big, m))
    results.append(BenchResult("uniform Z_n draws, 2048-bit n", m, seconds))

    array = rng.uint64(n)
    wire = encode({"share": array})
    seconds, _ = time_call(lambda: decode(encode({"share": array})))
    base, _ = time_call(lambda: np.frombuffer(array.tobytes(), dtype=np.uint64).copy())
    results.append(BenchResult("codec round trip, uint64 array", n, seconds, "tobytes+frombuffer", base,
                               bytes=len(wire)))

    rounds = 100

    def ping_pong() -> None:
        def alice(comm):  # type: ignore[no-untyped-def]
            for _ in range(rounds):
                comm.send("bob", 1, label="ping")
                comm.recv("bob", label="pong")

        def bob(comm):  # type: ignore[no-untyped-def]
            for _ in range(rounds):
                comm.recv("alice", label="ping")
                comm.send("alice", 1, label="pong")

        run_protocol({"alice": alice, "bob": bob})

    seconds, _ = time_call(ping_pong)
    results.append(BenchResult("in-memory message latency (ping-pong)", 2 * rounds, seconds,
                               note="per_s = messages per second between two threads"))
    return results
