"""Fixed-point encoding of real numbers into the rings Z_2^l.

A real ``x`` is encoded as the residue of ``round(x * 2^f)`` modulo ``2^l`` (two's complement), where ``f`` is
the number of fractional bits. The resolution is ``2^-f``; the encoding error is at most ``2^-(f+1)``.

Capacity
--------
The secret-sharing protocols built on these rings (truncation, comparison, ring extension in
:mod:`mpdp.protocols.mpc`) are *exact* for raw integers ``v`` with ``|v| <= 2^(l-2)``: they add
``2^(l-2)`` and rely on the sum staying below ``2^(l-1)`` (shown exhaustively in a 10-bit ring by the
tests). Hence

* every encoded value must satisfy ``|x| < max_value = 2^(l-2-f)``;
* a product computed at double scale before truncation must satisfy ``|x y| < product_capacity =
  2^(l-2-2f)``; the split multiplication of paper 002 (:func:`mpdp.protocols.mpc.arithmetic.mul_split`)
  lifts that to ``|x y| < max_value`` at the cost of one extra truncation round.

Encoding refuses NaN, infinities and magnitudes at or beyond ``max_value`` with
:class:`~mpdp.errors.EncodingOverflowError`, never wrapping around.

Presets
-------
``FAST`` = Z_2^64 with f = 20 (resolution 9.5e-7, values below 2^42, products below 2^22): the fast path for
ordinary arithmetic and inner products. ``HIGH_PRECISION`` = Z_2^128 with f = 48 (resolution 3.6e-15,
values below 2^78, products below 2^30): the ring of the high-precision functions (exp, reciprocal,
division, square roots), which need absolute errors near 1e-14 to hold a 1e-6 relative error at exp(-16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring import Ring, RingArray, ring_for_bits
from mpdp.errors import EncodingOverflowError, ParameterError, PrecisionError, explain
from mpdp.numeric import real_array

__all__ = ["FAST", "HIGH_PRECISION", "FixedPointFormat"]


@dataclass(frozen=True)
class FixedPointFormat:
    """A fixed-point format: ring Z_2^``ring_bits`` and ``frac_bits`` fractional bits.

    Parameters
    ----------
    ring_bits:
        8 to 64 (one machine word; 64 is the fast path) or 128 (two words, high precision).
    frac_bits:
        Fractional bits f, with ``0 <= f`` and ``2 f + 4 <= ring_bits`` so that at least a product of
        magnitude below 4 fits before truncation.
    """

    ring_bits: int = 64
    frac_bits: int = 20

    def __post_init__(self) -> None:
        if not isinstance(self.ring_bits, int) or not (8 <= self.ring_bits <= 64 or self.ring_bits == 128):
            raise ParameterError(
                explain("ring_bits", self.ring_bits, "an int in [8, 64] or 128",
                        "use 64 for the fast path or 128 for high precision")
            )
        if not isinstance(self.frac_bits, int) or self.frac_bits < 0 or 2 * self.frac_bits + 4 > self.ring_bits:
            raise PrecisionError(
                explain("frac_bits", self.frac_bits, f"0 <= f <= {(self.ring_bits - 4) // 2} for a "
                        f"{self.ring_bits}-bit ring (a product at scale 2^(2f) must fit)",
                        "lower frac_bits or use ring_bits=128")
            )

    # -- derived ------------------------------------------------------------------------------------------
    @cached_property
    def ring(self) -> Ring:
        return ring_for_bits(self.ring_bits)

    @property
    def scale(self) -> float:
        return float(2**self.frac_bits)

    @property
    def resolution(self) -> float:
        """The value of one unit in the last place, 2^-f."""
        return 2.0**-self.frac_bits

    @property
    def raw_capacity_bits(self) -> int:
        """Raw integers handled exactly by the protocols satisfy ``|v| < 2^raw_capacity_bits`` (= l - 2)."""
        return self.ring_bits - 2

    @property
    def max_value(self) -> float:
        """Encoded values must satisfy ``|x| < max_value = 2^(l-2-f)``."""
        return 2.0 ** (self.ring_bits - 2 - self.frac_bits)

    @property
    def product_capacity(self) -> float:
        """An ordinary product (double scale before truncation) needs ``|x y| < 2^(l-2-2f)``."""
        return 2.0 ** (self.ring_bits - 2 - 2 * self.frac_bits)

    def raw_bound_ok(self, bound: float, scale_bits: int) -> bool:
        """True when values of magnitude at most ``bound`` at scale 2^scale_bits stay within capacity."""
        return math.isfinite(bound) and bound * 2.0**scale_bits <= 2.0**self.raw_capacity_bits

    @cached_property
    def bound_limits(self) -> dict[int, float]:
        """Per scale ``s`` (``|s| <= 512``), the largest bound :meth:`raw_bound_ok` accepts: ``2^(l-2-s)``.

        ``raw_bound_ok(b, s) == (-inf < b <= bound_limits[s])`` for every float ``b`` (scaling by a power of
        two is exact; NaN and inf fail both): one dict lookup and a comparison for the checks every shared value
        makes (:class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint`). Other scales: call :meth:`raw_bound_ok`.
        """
        return {s: 2.0 ** (self.raw_capacity_bits - s) for s in range(-512, 513)}

    # -- encoding -----------------------------------------------------------------------------------------
    def encode(self, x: Any, *, scale_bits: int | None = None, name: str = "x") -> RingArray:
        """Ring residues of ``round(x * 2^f)``; refuses NaN, inf and ``|x| >= max_value``."""
        s = self.frac_bits if scale_bits is None else scale_bits
        values = real_array(x, name)
        if values.size:
            # min and max: two passes without temporaries (NaN propagates through both, inf shows in one); the
            # ufuncs' reductions called directly (ndarray.min/max go through numpy's Python-level wrappers)
            lo, hi = float(np.minimum.reduce(values, axis=None)), float(np.maximum.reduce(values, axis=None))
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise EncodingOverflowError(
                    explain(name, "NaN or infinite entries", "finite numbers", "clean or clip the data before encoding")
                )
            limit = 2.0 ** (self.raw_capacity_bits - s)
            worst = max(-lo, hi)
            if worst >= limit:
                raise EncodingOverflowError(
                    explain(name, f"max |x| = {worst:.6g}", f"|x| < {limit:.6g} for {self}",
                            "scale the data down, or use a format with more integer bits (ring_bits=128)")
                )
        raw = values * 2.0**s
        raw = np.rint(raw, out=raw) if isinstance(raw, np.ndarray) else np.rint(raw)  # in place: no 2nd temporary
        return self.ring.from_rounded_float(raw)

    def decode(self, a: RingArray, *, scale_bits: int | None = None) -> npt.NDArray[np.float64]:
        """Float values of residues at scale 2^f (or 2^scale_bits)."""
        s = self.frac_bits if scale_bits is None else scale_bits
        return self.ring.to_float(a) * 2.0**-s

    def encode_constant(self, c: float, scale_bits: int | None = None) -> int:
        """A public real constant as the exact integer ``round(c * 2^scale)``."""
        s = self.frac_bits if scale_bits is None else scale_bits
        if isinstance(c, bool) or not isinstance(c, int | float | np.integer | np.floating):
            raise ParameterError(explain("constant", c, "a real number", "pass a float"))
        try:
            value = float(c) * 2.0**s
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise EncodingOverflowError(explain("constant", c, "a finite number", "pass a finite constant"))
        return round(value)

    def __str__(self) -> str:
        return f"FixedPointFormat(ring_bits={self.ring_bits}, frac_bits={self.frac_bits})"


FAST = FixedPointFormat(ring_bits=64, frac_bits=20)
HIGH_PRECISION = FixedPointFormat(ring_bits=128, frac_bits=48)
