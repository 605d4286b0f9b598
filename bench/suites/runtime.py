"""Suite ``runtime``: the random source, the wire codec and the cost of one message.

Baselines: ``os.urandom`` for raw randomness (the OS CSPRNG), and numpy's ``tobytes``/``frombuffer`` for
the codec (the cost of copying the same bytes with no framing or checks).

The MPC opening rows measure what each of the ~40 messages a party sends per DPVI step costs: an opening
``{"id": 16-byte sharing id, "v": [two (2, 100, 10) uint64 arrays]}`` in Comm's envelope, encoded and decoded
(``encode_envelope`` + ``decode_envelope``, what ``Comm.send``/``Comm.recv`` call), and sent then received
through ``Comm`` over the in-memory transport in one thread (codec, sequence and label checks, counters,
queue; no waiting). Instruction counts per message under callgrind: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import os

import numpy as np

from bench.harness import BenchResult, time_call
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, InMemoryTransport, decode, encode, run_protocol
from mpdp.runtime.codec import decode_envelope, encode_envelope


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

    results += _opening(rng, 2000 if quick else 20000)

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


def _opening(rng: RandomSource, count: int) -> list[BenchResult]:
    """One MPC opening message: encoded and decoded, and sent and received through Comm (see the docstring)."""
    shares = [rng.uint64(2000).reshape(2, 100, 10) for _ in range(2)]
    body = {"id": rng.bytes(16), "v": shares}
    wire = encode_envelope(7, 12, "mpc.mul", body)

    def codec() -> None:
        for _ in range(count):
            decode_envelope(encode_envelope(7, 12, "mpc.mul", body))

    def copies() -> None:
        for _ in range(count):
            [np.frombuffer(s.tobytes(), dtype=np.uint64).copy() for s in shares]

    seconds, _ = time_call(codec)
    base, _ = time_call(copies)
    results = [BenchResult("codec: MPC opening, encode + decode", count, seconds, "tobytes+frombuffer", base,
                           bytes=len(wire), note="per_s = openings per second (2 x (2, 100, 10) uint64 + id)")]
    transport = InMemoryTransport(("alice", "bob"))
    alice = Comm(transport.endpoint("alice"), transport.parties, rng=rng)
    bob = Comm(transport.endpoint("bob"), transport.parties, rng=rng)

    def messages() -> None:
        for _ in range(count):
            alice.send("bob", body, label="mpc.mul")
            bob.recv("alice", label="mpc.mul")

    seconds, _ = time_call(messages)
    results.append(BenchResult("Comm send + recv of an MPC opening (in-memory)", count, seconds,
                               "tobytes+frombuffer", base, bytes=len(wire),
                               note="one thread: the CPU cost of a message on both sides, without waiting"))
    return results
