"""Exact comparisons of a uniform random number with exp(-gamma), for rational gamma.

Every exact sampler in :mod:`mpdp.dp.samplers` reduces to one question asked many times: given a uniform
U in [0, 1) made of random bits, is ``U < exp(-gamma)`` for a rational ``gamma >= 0``? This module answers it
exactly, fast in the common case and exactly in every case:

1. **Fast path (vectorised).** Only the first 53 bits of U are drawn, so ``U`` lies in the interval
   ``[k, k + 1) * 2^-53`` for an integer ``k``. We compute a bracket ``[p_lo, p_hi]`` that provably contains
   ``p = exp(-gamma)`` and decide ``U < p`` when the interval of U lies entirely below ``p_lo`` or entirely
   at or above ``p_hi``. The bracket is computed **without libm**: only IEEE-754 ``+ - * /``, which the standard
   rounds correctly, and a table of ``exp(-i/64)`` rounded to nearest by MPFR (which guarantees correct
   rounding). ``exp(-g) = exp(-i/256) * exp(-f)`` with ``i = floor(256 g)`` and ``0 <= f < 1/256``, and
   ``exp(-f)`` is a degree-5 Taylor polynomial evaluated by Horner's rule. Error budget (u = 2^-53): Taylor
   remainder <= (1/256)^6 / 6! < 2^-57; Horner rounding <= gamma_10 * e^(1/256) ~ 10.1 u (Higham, Thm 5.3),
   coefficients 1/j! rounded <= 1.01 u, table entry, product and bracket arithmetic <= 4 u: below 16 u
   = 2^-49 in total. The bracket uses a relative half-width of ``2^-44`` (32 times the proven error) plus
   twice the caller's bound on the absolute error of its floating-point ``gamma`` (``|e^x - 1| <= 2|x|`` for
   ``|x| <= 2^-20``).
2. **Slow path (exact, rare).** When the 53-bit interval of U meets the bracket (probability about 2^-43),
   the same U is extended with further random bits and compared with ``floor(p * 2^bits)`` computed by MPFR
   with directed rounding (``exp`` of an upward-rounded ``gamma`` rounded down, and vice versa), doubling the
   precision until both bounds floor to the same integer. ``exp(-gamma)`` is irrational for rational
   ``gamma > 0`` (Lindemann), so each extension resolves with probability 1 - 2^-64 and the loop ends.

Either way the decision equals ``U < p`` for the real number U whose bits are drawn, so the Bernoulli outcome
has probability exactly ``p`` given ideal random bits: no approximation of ``p`` reaches the output.

The module also builds threshold tables ``T_v = floor(exp(-v s) * 2^53)`` for geometric sampling by
counting ``U < exp(-v s)``; the counting is exact for the same reason (ties go to the slow path).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = [
    "PREFIX_BITS",
    "LazyUniform",
    "accept_exp_neg",
    "as_rational",
    "exp_neg_bracket53",
    "floor_exp_neg",
    "geometric_thresholds",
]

PREFIX_BITS = 53
_TWO53 = float(1 << PREFIX_BITS)
# Bracket half-width, relative: about 28x the proven error of the libm-free exp below.
_EXP_REL = 2.0**-44
# Beyond this gamma, exp(-gamma) < 2^-57: only an upper bound is needed (k >= 1 already rejects).
_G_MAX = 40.0
# A caller's error bound on gamma larger than this disables the fast path for that element.
_ERR_MAX = 2.0**-20

_TABLE_STEPS = 256
_TAYLOR_DEGREE = 5


def as_rational(value: Any, name: str, *, positive: bool = True, allow_zero: bool = False) -> Fraction:
    """The exact rational value of ``value`` (int, Fraction, finite float, decimal string).

    Floats are taken at their exact binary value (``Fraction(0.1) != Fraction(1, 10)``); pass a string such
    as ``"0.1"`` or a :class:`~fractions.Fraction` for an exact decimal.
    """
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            value = float(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError
        result = Fraction(value)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise ParameterError(
            explain(name, value, "a finite rational number (int, float, Fraction or decimal string)",
                    f"pass e.g. {name}=1.0 or {name}=Fraction(1, 2)")
        ) from exc
    if positive and (result < 0 or (result == 0 and not allow_zero)):
        expected = "a number >= 0" if allow_zero else "a number > 0"
        raise ParameterError(explain(name, value, expected, f"pass a {expected[2:]}"))
    return result


# -- MPFR: floor(exp(-gamma) * 2^bits), exactly ----------------------------------------------------------


def _exact_mpfr(n: int) -> Any:
    """``n`` as an mpfr with enough precision to hold it exactly."""
    return gmpy2.mpfr(gmpy2.mpz(n), max(2, abs(n).bit_length() + 1))


@lru_cache(maxsize=65536)
def floor_exp_neg(gamma: Fraction, bits: int) -> int:
    """``floor(exp(-gamma) * 2^bits)`` exactly, for rational ``gamma >= 0``.

    MPFR rounds every operation in the requested direction, so ``lo <= exp(-gamma) <= hi``; the precision is
    doubled until ``floor(lo * 2^bits) == floor(hi * 2^bits)``, which must happen because ``exp(-gamma)`` is
    irrational for ``gamma > 0``.
    """
    if gamma == 0:
        return 1 << bits
    num = _exact_mpfr(gamma.numerator)
    den = _exact_mpfr(gamma.denominator)
    prec = bits + 64
    while True:
        up = gmpy2.context(precision=prec, round=gmpy2.RoundUp)
        down = gmpy2.context(precision=prec, round=gmpy2.RoundDown)
        lo = down.exp(-up.div(num, den))
        hi = up.exp(-down.div(num, den))
        flo = int(down.floor(down.mul_2exp(lo, bits)))
        fhi = int(up.floor(up.mul_2exp(hi, bits)))
        if flo == fhi:
            return flo
        prec *= 2


class LazyUniform:
    """A uniform U in [0, 1) known by its first ``bits`` bits; further bits are drawn only when needed."""

    __slots__ = ("bits", "rng", "value")

    def __init__(self, value: int, bits: int, rng: RandomSource) -> None:
        self.value = value
        self.bits = bits
        self.rng = rng

    def less_than_exp_neg(self, gamma: Fraction) -> bool:
        """Exactly ``U < exp(-gamma)``."""
        while True:
            threshold = floor_exp_neg(gamma, self.bits)
            if self.value < threshold:
                return True
            if self.value > threshold:
                return False
            # U * 2^bits and exp(-gamma) * 2^bits share their integer part: look at 64 more bits of U.
            self.value = (self.value << 64) | int(self.rng.uint64(1)[0])
            self.bits += 64


# -- fast path: a provable bracket for exp(-g) without libm -----------------------------------------------


@lru_cache(maxsize=1)
def _exp_table() -> npt.NDArray[np.float64]:
    """``exp(-i/256) * 2^53`` for ``i = 0 .. 40*256``, each rounded to nearest by MPFR (correct rounding)."""
    ctx = gmpy2.context(precision=53, round=gmpy2.RoundToNearest)
    size = int(_G_MAX) * _TABLE_STEPS + 1
    values = [float(ctx.mul_2exp(ctx.exp(gmpy2.mpfr(-i) / _TABLE_STEPS), PREFIX_BITS)) for i in range(size)]
    table = np.array(values, dtype=np.float64)
    table.setflags(write=False)
    return table


# Taylor coefficients 1/j!, each correctly rounded (Fraction -> float rounds to nearest).
_TAYLOR = [float(Fraction(1, math.factorial(j))) for j in range(_TAYLOR_DEGREE + 1)]


def exp_neg_bracket53(
    g_hat: npt.NDArray[np.float64], g_err: npt.NDArray[np.float64] | float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Bounds ``lo <= exp(-g) * 2^53 <= hi`` for every real ``g >= 0`` with ``|g - g_hat| <= g_err``.

    Precondition: ``g_hat >= 0`` or NaN. Elements whose ``g_err`` exceeds 2^-20 or whose ``g_hat`` is NaN
    get the trivial bracket ``[0, 2^53]``.
    """
    g = np.fmin(g_hat, _G_MAX)  # fmin: NaN -> _G_MAX (and flagged below)
    x = g * float(_TABLE_STEPS)  # exact: scaling by a power of two
    i = np.floor(x)
    neg = (i - x) * (1.0 / _TABLE_STEPS)  # = -f exactly: x - floor(x) is representable; power-of-two scaling
    poly = neg * _TAYLOR[_TAYLOR_DEGREE] + _TAYLOR[_TAYLOR_DEGREE - 1]
    for coeff in reversed(_TAYLOR[: _TAYLOR_DEGREE - 1]):
        poly = poly * neg + coeff
    p = _exp_table()[i.astype(np.intp)] * poly
    width = p * (_EXP_REL + 2.0 * np.asarray(g_err))
    lo = p - width
    hi = p + width
    clamped = ~(g_hat <= _G_MAX)  # also true for NaN
    if clamped.any():
        lo[clamped] = 0.0  # only the upper bound still holds for a clamped g
    bad = ~(np.asarray(g_err) <= _ERR_MAX) | np.isnan(g_hat)
    if bad.any():
        bad = np.broadcast_to(bad, hi.shape)
        lo[bad] = 0.0
        hi[bad] = _TWO53
    return lo, hi


def accept_exp_neg(
    words: npt.NDArray[np.uint64],
    g_hat: npt.NDArray[np.float64],
    g_err: npt.NDArray[np.float64] | float,
    exact_gamma: Callable[[int], Fraction],
    rng: RandomSource,
) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-gamma_i)) outcomes, one per element, using the top 53 bits of ``words``.

    ``g_hat`` is a float approximation of the true rational ``gamma_i = exact_gamma(i)`` with
    ``|g_hat - gamma_i| <= g_err``. The low 11 bits of each word are not used, so callers may spend them on
    other independent choices (a sign, a low-order uniform).
    """
    prefix = words >> np.uint64(64 - PREFIX_BITS)
    k = prefix.astype(np.float64)  # exact: < 2^53
    lo, hi = exp_neg_bracket53(g_hat, g_err)
    accept = (k + 1.0) <= lo  # U < (k + 1) 2^-53 <= p
    reject = k >= hi  # U >= k 2^-53 >= p
    for idx in np.flatnonzero(~(accept | reject)):
        lazy = LazyUniform(int(prefix[idx]), PREFIX_BITS, rng)
        accept[idx] = lazy.less_than_exp_neg(exact_gamma(int(idx)))
    return accept


# -- geometric thresholds ---------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def geometric_thresholds(step: Fraction) -> npt.NDArray[np.uint64]:
    """Ascending table of ``floor(exp(-v * step) * 2^53)`` for ``v = K, K-1, ..., 1``, with the first entry 0.

    ``K`` is the first ``v`` whose threshold is 0. Counting the thresholds above a 53-bit prefix gives the
    number of ``v >= 1`` with ``U < exp(-v step)``, i.e. a geometric variable with ratio ``exp(-step)``.
    """
    if step <= 0:
        raise ParameterError(explain("step", step, "a rational > 0", "internal: pass a positive step"))
    values = []
    v = 1
    while True:
        threshold = floor_exp_neg(step * v, PREFIX_BITS)
        values.append(threshold)
        if threshold == 0:
            break
        v += 1
    table = np.array(values[::-1], dtype=np.uint64)
    table.setflags(write=False)
    return table
