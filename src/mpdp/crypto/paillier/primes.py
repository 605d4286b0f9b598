"""Random primes for Paillier moduli, drawn from an injected :class:`~mpdp.randomness.RandomSource`.

A prime of ``bits`` bits is ``gmpy2.next_prime`` of a uniformly random odd ``bits``-bit integer whose two top
bits are set (so the product of two such primes has exactly ``2 bits`` bits). GMP's ``mpz_nextprime`` sieves
candidates and confirms with Baillie-PSW plus Miller-Rabin rounds; we re-check with ``gmpy2.is_prime`` at 40
rounds. Starting from a random point and taking the next prime is the usual incremental search: its mild bias
towards primes after long gaps is not known to help any factoring method (Brandt and Damgård, CRYPTO '92).

Primes are Blum primes (p = 3 mod 4) so that n is a Blum integer and -1 is a quadratic non-residue modulo each
factor; the fixed-base randomizer (:mod:`mpdp.crypto.paillier.randomizers`) takes its base h = -x^2 mod n from
the subgroup this choice makes large.
"""

from __future__ import annotations

from typing import Any

import gmpy2

from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = ["random_prime"]

_MR_ROUNDS = 40


def random_prime(bits: int, *, rng: RandomSource, blum: bool = True) -> Any:
    """A random prime of exactly ``bits`` bits with its two top bits set (and = 3 mod 4 when ``blum``).

    Returns a ``gmpy2.mpz``.
    """
    if not isinstance(bits, int) or bits < 16:
        raise ParameterError(explain("bits", bits, "an int >= 16", "ask for a prime of at least 16 bits"))
    nbytes = (bits + 7) // 8
    top = gmpy2.mpz(3) << (bits - 2)
    mask = (gmpy2.mpz(1) << bits) - 1
    while True:
        candidate = (gmpy2.mpz(int.from_bytes(rng.bytes(nbytes), "little")) & mask) | top | 1
        prime = gmpy2.next_prime(candidate)
        # next_prime may step past 2^bits; a Blum prime is needed half of the time: draw again otherwise.
        if prime.bit_length() != bits or (blum and prime % 4 != 3):
            continue
        if gmpy2.is_prime(prime, _MR_ROUNDS):
            return prime
