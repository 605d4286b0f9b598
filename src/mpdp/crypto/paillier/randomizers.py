"""Where the cost of Paillier encryption goes: the n-th residue randomizer rho = r^n mod n^2.

Encrypting m is ``(1 + m n) rho mod n^2``; the first factor is one multiplication, so the speed of
encryption is the speed of drawing rho. Four sources, each an object with ``draw(count) -> list[mpz]``:

=======================  ==========================================  ==============================  ===========
source                   how rho is made                             who can use it                  assumption
=======================  ==========================================  ==============================  ===========
StandardRandomizer       r^n mod n^2, r uniform in Z*_n              anyone with the public key      DCR
CrtRandomizer            u^p mod p^2 and v^q mod q^2, joined by CRT  the key owner only              DCR
RandomizerPool           rho precomputed by another source, each     anyone                          the source's
                         handed out once
FixedBaseRandomizer      h_s^alpha, alpha < 2^ceil(k/2), by a        anyone; opt-in                  DCR + short
                         fixed-base table                                                            exponent
=======================  ==========================================  ==============================  ===========

Security of each
----------------
*CRT (owner).* For r uniform in Z*_n, r^n mod p^2 depends only on r mod p and is a uniform element of the
order-(p-1) subgroup H_p of Z*_{p^2}: u -> u^p mod p^2 maps Z*_p one-to-one onto H_p, and x -> x^q permutes H_p
because gcd(q, p - 1) = 1. So (u^p mod p^2, v^q mod q^2) with u, v uniform has exactly the distribution of
r^n mod (p^2, q^2): the ciphertexts are identically distributed to standard ones, with exponents half as long
and moduli half as wide (about 3x faster here).

*Pool.* Randomizers are precomputed offline and each is used once; reusing a randomizer would reveal the
difference of two plaintexts, so the pool never hands one out twice.

*Fixed base (opt-in).* The fast-encryption variant of Damgård, Jurik and Nielsen ("A generalization of Paillier's
public-key system with applications to electronic voting", Int. J. Inf. Secur. 9, 2010; Jurik's PhD thesis,
Aarhus 2003): h = -x^2 mod n for random x, h_s = h^n mod n^2, rho = h_s^alpha
with alpha uniform in [0, 2^ceil(k/2)) for a k-bit n. With a fixed base, a precomputed table of
h_s^(d 2^(w i)) turns each rho into ceil(k/2)/w multiplications (w = 8: 128 at k = 2048, ~15x faster than
r^n). Semantic security then needs, beyond DCR, that h_s^alpha with such a *short* alpha is indistinguishable
from a uniform element of <h_s> (a short-exponent assumption in the group of n-th residues, in the spirit of
Koshiba-Kurosawa's short-exponent discrete log); no reduction to DCR alone is known. Use it only where that
extra assumption is acceptable, and say so.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import gmpy2
import numpy as np

from mpdp.crypto.paillier.keys import PaillierPrivateKey, PaillierPublicKey
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["CrtRandomizer", "FixedBaseRandomizer", "Randomizer", "RandomizerPool", "StandardRandomizer"]


@runtime_checkable
class Randomizer(Protocol):
    """A source of fresh n-th residues rho for one public key."""

    public_key: PaillierPublicKey
    #: The hardness assumption ciphertexts made with this source rest on ("DCR" or stronger).
    assumption: str

    def draw(self, count: int) -> list[Any]:
        """``count`` fresh, independent randomizers (never handed out before)."""
        ...


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ParameterError(explain("count", count, "a non-negative int", "pass e.g. draw(100)"))


def _units(rng: RandomSource, modulus: Any, count: int) -> list[Any]:
    """``count`` uniform nonzero residues below ``modulus`` (0 has probability ~2^-1000 and is redrawn)."""
    out = [gmpy2.mpz(v) for v in rng.randbelow_many(int(modulus), count) if v]
    while len(out) < count:
        out.extend(gmpy2.mpz(v) for v in rng.randbelow_many(int(modulus), count - len(out)) if v)
    return out


class StandardRandomizer:
    """rho = r^n mod n^2 with r uniform in Z_n \\ {0}: textbook Paillier (and ``phe``). Assumption: DCR."""

    assumption = "DCR"

    def __init__(self, public_key: PaillierPublicKey, *, rng: RandomSource | None = None) -> None:
        self.public_key = public_key
        self._rng = resolve(rng)

    def draw(self, count: int) -> list[Any]:
        _check_count(count)
        n, n2 = self.public_key.n, self.public_key.n2
        return [gmpy2.powmod(r, n, n2) for r in _units(self._rng, n, count)]


class CrtRandomizer:
    """The key owner's randomizer: rho mod p^2 and mod q^2 from half-size exponentiations, joined by CRT.

    Identically distributed to :class:`StandardRandomizer` (see the module docstring). Assumption: DCR.
    """

    assumption = "DCR"

    def __init__(self, private_key: PaillierPrivateKey, *, rng: RandomSource | None = None) -> None:
        self.public_key = private_key.public_key
        self._key = private_key
        self._rng = resolve(rng)

    def draw(self, count: int) -> list[Any]:
        _check_count(count)
        key = self._key
        us = _units(self._rng, key.p, count)
        vs = _units(self._rng, key.q, count)
        return [
            key.crt_combine(gmpy2.powmod(u, key.p, key.p2), gmpy2.powmod(v, key.q, key.q2))
            for u, v in zip(us, vs, strict=True)
        ]


class RandomizerPool:
    """Randomizers precomputed ahead of time (``fill``), each handed out exactly once.

    ``draw`` takes from the pool and, when it runs dry, computes the rest with the underlying source (counted
    in ``misses``), so a protocol never stalls and never reuses a randomizer. Assumption: the source's.
    """

    def __init__(self, source: Randomizer, size: int = 0) -> None:
        _check_count(size)
        self.source = source
        self.public_key = source.public_key
        self.assumption = source.assumption
        self._pool: list[Any] = []
        self.misses = 0
        if size:
            self.fill(size)

    def fill(self, size: int) -> None:
        """Top the pool up to ``size`` randomizers (the offline phase)."""
        _check_count(size)
        if size > len(self._pool):
            self._pool.extend(self.source.draw(size - len(self._pool)))

    @property
    def available(self) -> int:
        return len(self._pool)

    def draw(self, count: int) -> list[Any]:
        _check_count(count)
        take = min(count, len(self._pool))
        out = self._pool[len(self._pool) - take :]
        del self._pool[len(self._pool) - take :]
        if take < count:
            self.misses += count - take
            out.extend(self.source.draw(count - take))
        return out


class FixedBaseRandomizer:
    """Opt-in DJN short-exponent randomizer rho = h_s^alpha from a fixed-base table (see module docstring).

    Parameters
    ----------
    public_key:
        The key to make randomizers for.
    rng:
        Source of the base (unless ``base`` is given) and of every exponent alpha.
    window:
        Table window in bits (1..12). Each randomizer costs ceil(exponent_bits / window) multiplications
        modulo n^2; the table holds ceil(exponent_bits / window) * (2^window - 1) elements (8: 16 MB at 2048
        bits, built in about 0.2 s).
    exponent_bits:
        Length of alpha; default ceil(k / 2) for a k-bit modulus (DJN's choice). Below 2 * 128 is refused.
    base:
        h_s, if the key owner publishes one; default: derived here from a random x as (-x^2)^n mod n^2.

    Security
    --------
    Rests on DCR *and* the short-exponent assumption stated in the module docstring. Not a default anywhere.
    """

    assumption = "DCR + DJN short-exponent"

    def __init__(
        self,
        public_key: PaillierPublicKey,
        *,
        rng: RandomSource | None = None,
        window: int = 8,
        exponent_bits: int | None = None,
        base: int | None = None,
    ) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= 12:
            raise ParameterError(explain("window", window, "an int in 1..12", "use the default window=8"))
        bits = math.ceil(public_key.bits / 2) if exponent_bits is None else exponent_bits
        if isinstance(bits, bool) or not isinstance(bits, int) or bits < 256:
            raise ParameterError(explain("exponent_bits", bits, "an int >= 256", "leave it at the default"))
        self.public_key = public_key
        self.window = window
        self.exponent_bits = bits
        self._rng = resolve(rng)
        n, n2 = public_key.n, public_key.n2
        if base is None:
            x = _units(self._rng, n, 1)[0]
            base = gmpy2.powmod(n - x * x % n, n, n2)
        elif not public_key.in_range(base) or gmpy2.gcd(base, n) != 1:
            raise ParameterError(explain("base", "a value outside Z*_{n^2}", "h_s = (-x^2)^n mod n^2",
                                         "omit base to derive one"))
        self.base = gmpy2.mpz(base)
        self._digits = math.ceil(bits / window)
        # table[i][d] = h_s^(d * 2^(window * i)) for d in 0 .. 2^window - 1.
        table = []
        step = self.base
        for _ in range(self._digits):
            row = [gmpy2.mpz(1), step]
            for _ in range(2, 1 << window):
                row.append(row[-1] * step % n2)
            table.append(row)
            step = row[-1] * step % n2
        self._table = table

    def draw(self, count: int) -> list[Any]:
        _check_count(count)
        n2 = self.public_key.n2
        digits = self._exponent_digits(count)
        out = []
        for row in digits:
            acc = None
            for table_row, d in zip(self._table, row, strict=True):
                if d:
                    acc = table_row[d] if acc is None else acc * table_row[d] % n2
            out.append(gmpy2.mpz(1) if acc is None else acc)
        return out

    def _exponent_digits(self, count: int) -> list[list[int]]:
        """``count`` uniform exponents alpha in [0, 2^exponent_bits), as base-2^window digits (least first)."""
        w, k = self.window, self._digits
        total_bits = w * k
        nbytes = (total_bits + 7) // 8
        raw = np.frombuffer(self._rng.bytes(nbytes * count), dtype=np.uint8).reshape(count, nbytes)
        bits = np.unpackbits(raw, axis=1, bitorder="little")[:, :total_bits].astype(np.int64)
        bits[:, self.exponent_bits :] = 0  # alpha < 2^exponent_bits exactly
        weights = (1 << np.arange(w, dtype=np.int64))
        digits = bits.reshape(count, k, w) @ weights
        return digits.tolist()  # type: ignore[no-any-return]
