"""Named CKKS parameter sets with >= 128-bit security, chosen by multiplicative depth.

Security comes from the ring dimension N and the total bit length of the coefficient modulus q. The
HomomorphicEncryption.org standard (Albrecht et al., 2018; the table SEAL enforces as ``sec_level_type::tc128``)
allows, for 128-bit classical security with a ternary secret, at most

    N:          1024  2048  4096  8192  16384  32768
    log2 q:       27    54   109   218    438    881

A parameter set lists the coefficient-modulus primes [first, middle..., special]: each multiplication by a
plaintext (or ciphertext) is followed by a rescale that drops one middle prime, so the number of middle primes
is the *depth*. The middle primes have ``scale_bits`` bits (the encoding scale 2^scale_bits); the first prime
must also hold the integer part of every result: |result| < 2^(first - scale_bits - 1).

Accuracy (measured here with TenSEAL 0.3.18 for inputs |x|, |w| <= 1, with the rescale correction of
:class:`~mpdp.crypto.ckks.context.CkksContext`; the documented bounds are about 10x the largest error seen over
repeated runs, rounded up, and are what tests check). A dot product of length L has error at most
``dot floor + dot per sqrt(L) * sqrt(L)``; the floor is the key-switching noise of the rotation ladder.

==============  =====  ===================  =====  ===========  ========  =========  ================  =====
name            N      primes (bits)        depth  encrypt err  x*w err   dot floor  dot per sqrt(L)   slots
==============  =====  ===================  =====  ===========  ========  =========  ================  =====
ckks-8192-d1    8192   60, 40, 60           1      1e-7         2e-7      3e-5       5e-7              4096
ckks-8192-d2    8192   60, 40, 40, 60       2      1e-7         2e-7      3e-5       5e-7              4096
ckks-16384-d4   16384  60, 40 x 4, 60       4      2e-7         3e-7      7e-5       5e-7              8192
ckks-16384-d7   16384  60, 40 x 7, 60       7      2e-7         3e-7      7e-5       5e-7              8192
==============  =====  ===================  =====  ===========  ========  =========  ================  =====

Measured maxima behind them (N = 8192 / 16384): encryption 9e-9 / 1.9e-8; one product 1.2e-8 / 2.8e-8;
dot products of length 1 to 45,222, random or all-ones inputs, 3.0e-6 / 6.7e-6 in total (so 2.1e-6 / 4.9e-6 of
floor and at most 3.3e-8 / 4.7e-8 per sqrt(L)); a chain of ``depth`` products 1e-8 / 2.5e-8. Errors grow with
the operands' magnitude: scale the bounds by max|x| max|w|. ``python -m bench he`` re-measures them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mpdp.errors import MalformedMessageError, ParameterError, PrecisionError, explain

__all__ = ["PARAMETER_SETS", "SEAL_MAX_COEFF_BITS_128", "CkksParameters", "parameters_for_depth"]

#: Largest total coefficient-modulus bit length for 128-bit classical security, by ring dimension.
SEAL_MAX_COEFF_BITS_128 = {1024: 27, 2048: 54, 4096: 109, 8192: 218, 16384: 438, 32768: 881}


@dataclass(frozen=True)
class CkksParameters:
    """A CKKS parameter set: ring dimension, modulus chain, scale, and its documented precision.

    Parameters
    ----------
    name:
        A short public name (e.g. ``"ckks-8192-d2"``).
    poly_modulus_degree:
        Ring dimension N (a power of two in the security table); N / 2 values fit one ciphertext.
    coeff_mod_bit_sizes:
        Bit lengths of the primes [first, middle..., special]; their sum must not exceed the 128-bit bound.
    scale_bits:
        log2 of the encoding scale; every middle prime has this many bits.
    encrypt_error, mul_error, dot_error_floor, dot_error_per_sqrt_term:
        Documented absolute error bounds for inputs in [-1, 1] (see the module docstring).
    """

    name: str
    poly_modulus_degree: int
    coeff_mod_bit_sizes: tuple[int, ...]
    scale_bits: int
    encrypt_error: float
    mul_error: float
    dot_error_floor: float
    dot_error_per_sqrt_term: float

    def __post_init__(self) -> None:
        n = self.poly_modulus_degree
        if n not in SEAL_MAX_COEFF_BITS_128:
            raise ParameterError(explain("poly_modulus_degree", n, f"one of {sorted(SEAL_MAX_COEFF_BITS_128)}",
                                         "pick a named set with parameters_for_depth(depth)"))
        bits = tuple(self.coeff_mod_bit_sizes)
        if len(bits) < 3 or not all(isinstance(b, int) and 20 <= b <= 60 for b in bits):
            raise ParameterError(explain("coeff_mod_bit_sizes", bits, "at least 3 primes of 20..60 bits",
                                         "use e.g. (60, 40, 40, 60)"))
        if sum(bits) > SEAL_MAX_COEFF_BITS_128[n]:
            raise ParameterError(
                explain("coeff_mod_bit_sizes", f"{sum(bits)} bits in total at N = {n}",
                        f"<= {SEAL_MAX_COEFF_BITS_128[n]} bits for 128-bit security",
                        "drop a middle prime (less depth) or double N")
            )
        if any(b != self.scale_bits for b in bits[1:-1]) or bits[0] <= self.scale_bits or bits[-1] < bits[0]:
            raise ParameterError(
                explain("coeff_mod_bit_sizes", bits, f"middle primes of scale_bits = {self.scale_bits} bits and "
                        "first = special > scale_bits", "use e.g. (60, 40, 40, 60) with scale_bits=40")
            )

    @property
    def depth(self) -> int:
        """Multiplications (each followed by a rescale) a fresh ciphertext supports."""
        return len(self.coeff_mod_bit_sizes) - 2

    @property
    def slots(self) -> int:
        """Values per ciphertext: N / 2."""
        return self.poly_modulus_degree // 2

    @property
    def max_magnitude(self) -> float:
        """Results must stay below this in magnitude: 2^(first - scale_bits - 1)."""
        return float(2 ** (self.coeff_mod_bit_sizes[0] - self.scale_bits - 1))

    def dot_error_bound(self, length: int, x_bound: float = 1.0, w_bound: float = 1.0) -> float:
        """Documented absolute error of a length-``length`` dot product with |x| <= x_bound, |w| <= w_bound."""
        return (self.dot_error_floor + self.dot_error_per_sqrt_term * math.sqrt(max(1, length))) * x_bound * w_bound

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "poly_modulus_degree": self.poly_modulus_degree,
                "coeff_mod_bit_sizes": list(self.coeff_mod_bit_sizes), "scale_bits": self.scale_bits}

    @staticmethod
    def from_wire(wire: Any) -> CkksParameters:
        """The named set a peer declares; unknown names or altered fields are rejected."""
        if not isinstance(wire, dict) or set(wire) != {"name", "poly_modulus_degree", "coeff_mod_bit_sizes",
                                                        "scale_bits"}:
            raise MalformedMessageError(explain("CKKS parameters", wire, "a named parameter set", "reject it"))
        known = PARAMETER_SETS.get(wire["name"]) if isinstance(wire["name"], str) else None
        if known is None or known.to_wire() != wire:
            raise MalformedMessageError(explain("CKKS parameters", wire.get("name"), f"one of {list(PARAMETER_SETS)}",
                                                "both parties must use a named set of the same mpdp version"))
        return known


def _set(name: str, n: int, bits: tuple[int, ...], errors: tuple[float, float, float, float]) -> CkksParameters:
    return CkksParameters(name, n, bits, 40, *errors)


#: The vetted sets, cheapest first.
PARAMETER_SETS: dict[str, CkksParameters] = {
    p.name: p
    for p in (
        _set("ckks-8192-d1", 8192, (60, 40, 60), (1e-7, 2e-7, 3e-5, 5e-7)),
        _set("ckks-8192-d2", 8192, (60, 40, 40, 60), (1e-7, 2e-7, 3e-5, 5e-7)),
        _set("ckks-16384-d4", 16384, (60, 40, 40, 40, 40, 60), (2e-7, 3e-7, 7e-5, 5e-7)),
        _set("ckks-16384-d7", 16384, (60, *([40] * 7), 60), (2e-7, 3e-7, 7e-5, 5e-7)),
    )
}


def parameters_for_depth(depth: int) -> CkksParameters:
    """The cheapest named set supporting ``depth`` plaintext/ciphertext multiplications."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ParameterError(explain("depth", depth, "an int >= 0", "count the multiplications, e.g. depth=1"))
    for params in PARAMETER_SETS.values():
        if params.depth >= depth:
            return params
    deepest = max(p.depth for p in PARAMETER_SETS.values())
    raise PrecisionError(
        explain("depth", depth, f"<= {deepest} for the vetted 128-bit sets",
                "restructure the computation (fewer sequential multiplications) or refresh via the key owner")
    )
