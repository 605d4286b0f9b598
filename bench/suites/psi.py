"""Suite ``psi``: private record alignment (ECDH PSI over ristretto255) between two parties.

* Group operations one by one (hash to the group, exponentiation) on one thread and on every core: the
  cost model, since the protocol's time is about ``(n_a + n_b)`` hashes plus ``2 (n_a + n_b)``
  exponentiations, spread over the cores.
* ``n x n`` ids, half overlapping, end to end (parties as threads in memory, each using every core for its
  group operations), against openmined-psi (``private_set_intersection``, P-256 in BoringSSL,
  single-threaded, the client learning the intersection) on the same sets in the same run when it is
  installed, else against a plain single-thread P-256 ECDH PSI written here with ``cryptography``.
  ``n`` counts the ids of both parties, so ``per_s`` is ids aligned per second.
* 1,000,000 x 1,000,000 half overlapping (full run only), each party in its own forked process; the note
  gives the peak resident memory of the larger party. Target: <= 90 s, <= 2 GB per party. The baseline is
  not rerun at that size (openmined-psi takes minutes); its throughput at the smaller size is the reference.

``--quick``: 10,000 x 10,000 only.
"""

from __future__ import annotations

import hashlib
import os
import resource
import time

from bench.harness import BenchResult
from mpdp.crypto.ristretto import default_workers, exponentiate, hash_to_group, random_scalar
from mpdp.protocols.alignment import Alignment, AlignmentParty, AlignmentSpec, simulate_alignment
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def _sets(n: int) -> tuple[list[str], list[str]]:
    """Two id columns of ``n`` e-mail-like ids each, half of them common."""
    a = [f"user{i:09d}@example.org" for i in range(n)]
    b = [f"user{i:09d}@example.org" for i in range(n // 2, n + n // 2)]
    return a, b


def _openmined(a: list[str], b: list[str]) -> tuple[float, int] | None:
    try:
        import private_set_intersection.python as psi
    except ImportError:
        return None
    start = time.perf_counter()
    client = psi.client.CreateWithNewKey(True)
    server = psi.server.CreateWithNewKey(True)
    setup = server.CreateSetupMessage(1e-9, len(a), b, psi.DataStructure.RAW)
    response = server.ProcessRequest(client.CreateRequest(a))
    found = client.GetIntersection(setup, response)
    return time.perf_counter() - start, len(found)


def _p256_psi(a: list[str], b: list[str]) -> tuple[float, int]:
    """A plain two-party ECDH PSI on P-256, one thread: hash by try-and-increment (x = SHA-256(id, counter)
    decompressed by OpenSSL), exponentiation as ECDH (x-coordinates: x(k (±P)) is the same for both signs)."""
    from cryptography.hazmat.primitives.asymmetric import ec

    curve = ec.SECP256R1()

    def hash_point(item: str) -> ec.EllipticCurvePublicKey:
        for counter in range(256):
            x = hashlib.sha256(counter.to_bytes(1, "big") + item.encode()).digest()
            try:
                return ec.EllipticCurvePublicKey.from_encoded_point(curve, b"\x02" + x)
            except ValueError:
                continue
        raise RuntimeError("no point found")  # probability 2^-256

    def power(key: ec.EllipticCurvePrivateKey, point: ec.EllipticCurvePublicKey) -> bytes:
        return key.exchange(ec.ECDH(), point)

    def lift(x: bytes) -> ec.EllipticCurvePublicKey:
        return ec.EllipticCurvePublicKey.from_encoded_point(curve, b"\x02" + x)

    start = time.perf_counter()
    ka, kb = ec.generate_private_key(curve), ec.generate_private_key(curve)
    a1 = [power(ka, hash_point(x)) for x in a]
    b1 = [power(kb, hash_point(y)) for y in b]
    a2 = [power(kb, lift(x)) for x in a1]
    b2 = {power(ka, lift(y)) for y in b1}
    found = sum(1 for x in a2 if x in b2)
    return time.perf_counter() - start, found


def _baseline(a: list[str], b: list[str]) -> tuple[str, float, int]:
    measured = _openmined(a, b)
    if measured is not None:
        return "openmined-psi 2.x (P-256, 1 thread)", *measured
    return "P-256 ECDH PSI (cryptography, 1 thread)", *_p256_psi(a, b)


def _operations(count: int) -> list[BenchResult]:
    rng = RandomSource.seeded("bench-psi-ops")
    key = random_scalar(rng)
    messages = [f"user{i:09d}@example.org".encode() for i in range(count)]
    out = []
    for workers in sorted({1, default_workers()}):
        start, cpu = time.perf_counter(), time.process_time()
        points = hash_to_group(messages, domain=b"bench", workers=workers)
        out.append(BenchResult(f"hash to ristretto255, {workers} thread(s)", count, time.perf_counter() - start,
                               cpu_seconds=time.process_time() - cpu))
        start, cpu = time.perf_counter(), time.process_time()
        exponentiate(points, key, workers=workers)
        out.append(BenchResult(f"ristretto255 exponentiation, {workers} thread(s)", count,
                               time.perf_counter() - start, cpu_seconds=time.process_time() - cpu))
    return out


def _end_to_end(n: int) -> BenchResult:
    a, b = _sets(n)
    start, cpu = time.perf_counter(), time.process_time()
    result, run = simulate_alignment({"alice": a, "bob": b}, rng=RandomSource.seeded("bench-psi"))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    if result["alice"].size != n // 2:
        raise RuntimeError(f"alignment found {result['alice'].size} common ids, expected {n // 2}")
    name, base_seconds, found = _baseline(a, b)
    if found != n // 2:
        raise RuntimeError(f"{name} found {found} common ids, expected {n // 2}")
    c = run.communication()
    return BenchResult(f"PSI {n:,} x {n:,}, half common, in memory", 2 * n, seconds, baseline=name,
                       baseline_seconds=base_seconds, cpu_seconds=cpu_seconds, bytes=c["bytes"],
                       note=f"{c['messages']} messages, {c['rounds']} rounds; {default_workers()} threads per party; "
                            f"load {os.getloadavg()[0]:.2f}")


def _million(reference: BenchResult) -> BenchResult:
    n = 1_000_000
    a, b = _sets(n)
    spec = AlignmentSpec(parties=("alice", "bob"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = run_protocol({"alice": AlignmentParty("alice", a, spec), "bob": AlignmentParty("bob", b, spec)},
                       rng=RandomSource.seeded("bench-psi-1m"), processes=True, timeout=3600.0)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    size = Alignment.from_wire(run.results["alice"]).size  # a forked party's result comes back in wire form
    if size != n // 2:
        raise RuntimeError(f"alignment found {size} common ids, expected {n // 2}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    c = run.communication()
    ref_per_s = reference.n / reference.baseline_seconds if reference.baseline_seconds else None
    return BenchResult(f"PSI {n:,} x {n:,}, half common, forked parties", 2 * n, seconds,
                       reference=reference.baseline, reference_per_s=ref_per_s, bytes=c["bytes"],
                       cpu_seconds=cpu_seconds,
                       note=f"peak RSS of the larger party {peak_mb:.0f} MB; both parties' CPU {cpu_seconds:.0f} s "
                            f"(/ {default_workers()} cores = {cpu_seconds / default_workers():.0f} s on idle cores); "
                            f"{c['messages']} messages, {c['rounds']} rounds; target <= 90 s; "
                            f"load {os.getloadavg()[0]:.2f}")


def run(quick: bool = False) -> list[BenchResult]:
    results: list[BenchResult] = _operations(5_000 if quick else 50_000)
    results.append(_end_to_end(10_000 if quick else 100_000))
    if not quick:
        results.append(_million(results[-1]))
    return results
