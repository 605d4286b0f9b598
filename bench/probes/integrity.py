"""What the integrity checks cost, against the work they guard: ``python -m bench.probes.integrity``.

Each line times one check and the operation it protects in the same run (best of a few, CPU seconds of this
process) and prints their ratio:

* CKKS: the SHA-256 digest of a received vector and its chunk checks (the TenSEAL parse and the scale, size and
  level checks), against ``CkksVector.from_wire`` as a whole and against encrypting the vector; the context id
  (SHA-256 of the 18.6 MB public material) against loading that material (``CkksContext.from_wire``);
  ``CkksContext.generate`` (keys plus the serialisation the id hashes) against TenSEAL's key generation alone.
* Paillier: the array digest per ciphertext against one CRT encryption (2048-bit key).
* DP: the exact (overflow-checked) addition of a release against drawing its noise, 10^6 int64 coordinates.

Figures: ``bench/RESULTS.md`` (integrity).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tenseal as ts

from mpdp.crypto.ckks import CkksContext, CkksVector, parameters_for_depth
from mpdp.crypto.paillier import CrtRandomizer, FixedPoint, encrypt, generate_keypair
from mpdp.crypto.paillier.serialization import array_digest
from mpdp.dp.samplers import discrete_laplace
from mpdp.numeric import exact_add
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode


def _cpu(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _line(what: str, check: float, guarded: float, against: str) -> None:
    print(f"{what:<46} {check * 1e3:9.3f} ms   {against:<40} {guarded * 1e3:9.3f} ms   {100 * check / guarded:6.2f} %")


def main() -> int:
    params = parameters_for_depth(1)
    ctx = CkksContext.generate(params)
    x = np.linspace(-1, 1, 2 * params.slots)  # two chunks
    wire = decode(encode(CkksVector.encrypt(ctx.public(), x)))
    digest = _cpu(lambda: hashlib.sha256(b"".join(wire["chunks"])).digest(), 20)
    _line("CKKS vector digest (2 chunks)", digest, _cpu(lambda: CkksVector.from_wire(wire, ctx), 20),
          "CkksVector.from_wire")
    _line("CKKS vector digest (2 chunks)", digest, _cpu(lambda: CkksVector.encrypt(ctx, x), 5), "CkksVector.encrypt")
    public = ctx.public().to_wire()
    _line("CKKS context id (SHA-256 of the material)", _cpu(lambda: hashlib.sha256(public["context"]).digest()),
          _cpu(lambda: CkksContext.from_wire(public)), "CkksContext.from_wire")

    def raw_keys() -> None:
        raw = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=params.poly_modulus_degree,
                         coeff_mod_bit_sizes=list(params.coeff_mod_bit_sizes))
        raw.generate_galois_keys()

    _line("CkksContext.generate (keys + id)", _cpu(lambda: CkksContext.generate(params)), _cpu(raw_keys),
          "TenSEAL key generation alone")

    rng = RandomSource.seeded("integrity")
    pk, sk = generate_keypair(2048, rng=rng)
    values = np.linspace(-1, 1, 64)
    array = encrypt(pk, values, FixedPoint(16, 1.0), randomizer=CrtRandomizer(sk, rng=rng))
    flat = array.ciphertexts.reshape(-1).tolist()
    per_digest = _cpu(lambda: array_digest(["key", 1, 64, 0, 1, 16, 65536], flat), 20) / len(flat)
    per_encrypt = _cpu(lambda: encrypt(pk, values, FixedPoint(16, 1.0), randomizer=CrtRandomizer(sk, rng=rng)),
                       2) / len(flat)
    _line("Paillier array digest, per ciphertext", per_digest, per_encrypt, "CRT encryption, per value")

    data = rng.integers(-(10**9), 10**9, 10**6)
    noise = np.asarray(discrete_laplace(100, 10**6, rng=rng))
    _line("DP exact release sum, 10^6 int64", _cpu(lambda: exact_add(data, noise), 10),
          _cpu(lambda: discrete_laplace(100, 10**6, rng=rng), 3), "discrete_laplace(100) noise, 10^6")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
