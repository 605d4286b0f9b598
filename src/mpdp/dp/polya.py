"""Exact Pólya (negative binomial) samplers, and shares of a discrete Laplace split among parties.

The discrete Laplace is infinitely divisible: with ``q = exp(-gamma)``, a geometric variable
``P(G = k) = (1 - q) q^k`` is the negative binomial ``NB(1, q)``, and ``NB(r1, q) + NB(r2, q) = NB(r1 + r2, q)``
for independent summands. So ``P`` parties that each draw ``X_i - Y_i`` with ``X_i, Y_i ~ NB(1/P, q)`` produce
a sum ``NB(1, q) - NB(1, q)``, which is exactly the discrete Laplace ``P(z) ∝ q^|z|`` (Goryczka, Xiong and
Sunderam 2013; Balle, Bell, Gascón, Nissim 2020, the "Pólya" mechanism). This is the integer analogue of
``Lap(b) = sum_i (G_i - G'_i)`` with ``G ~ Gamma(1/P, b)``, on an integer grid, so no floating-point noise.

Algorithm (exact given ideal random bits)
-----------------------------------------
``NB(r, q)`` is compound Poisson (Quenouille 1949): ``X = L_1 + ... + L_N`` with ``N ~ Poisson(r lambda)``,
``lambda = -ln(1 - q)``, and i.i.d. logarithmic jumps ``P(L = k) = q^k / (k lambda)``, ``k >= 1``.

* ``N`` is drawn by inversion, ``N = #{n : U >= F(n)}`` for the Poisson CDF ``F``. ``F(n)`` is decreasing in the
  mean, so MPFR with directed rounding gives ``F_lo(n) <= F(n) <= F_hi(n)`` from an enclosure of
  ``r lambda`` (itself from ``gamma`` with directed rounding). A table of ``floor(F_lo 2^64)`` and
  ``ceil(F_hi 2^64)`` decides ``U < F(n)`` from U's first 64 bits for all but about ``2^-60`` of draws
  (vectorised); the rest extend U with more random bits and redo the comparison at doubled precision.
* ``L`` uses Kemp's (1981) mixture: with ``W = 1 - (1 - q)^U``, ``L - 1 | W`` is geometric,
  ``P(L - 1 >= m | W) = W^m``, so ``L = 1 + floor(ln V / ln W)`` for independent uniforms ``U, V``.
  ``T = ln V / ln W`` is monotone in ``U``, ``V`` and ``1 - q``, so interval arithmetic with directed rounding on
  the intervals of U and V known so far encloses ``T``; when the enclosure contains an integer, both uniforms
  get 64 more random bits and the precision doubles. ``T`` is a continuous random variable, so this ends with
  probability 1 (after one pass in all but about ``2^-50`` of draws).

The output is a deterministic function of the (infinite) random bit strings, decided exactly: no floating-point
approximation of any probability reaches it. The jump step runs one MPFR evaluation per jump in Python
(``r lambda`` jumps per sample on average, about ``r (ln(1/gamma) + 0.6)``), roughly 20 µs each.

References
----------
S. Goryczka, L. Xiong, V. Sunderam, "Secure multiparty aggregation with differential privacy: a comparative
study", EDBT/ICDT Workshops 2013 (geometric noise as a sum of Pólya differences). B. Balle, J. Bell, A. Gascón,
K. Nissim, "Private Summation in the Multi-Message Shuffle Model", CCS 2020, section 4 (Pólya mechanism).
A. W. Kemp, "Efficient generation of logarithmically distributed pseudo-random variables", Applied Statistics
30 (1981), algorithm LK. M. H. Quenouille, "A relation between the logarithmic, Poisson and negative binomial
series", Biometrics 5 (1949).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from mpdp.dp._exact import as_rational
from mpdp.dp.samplers import shape_and_count
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, Shape, resolve

__all__ = ["laplace_share", "negative_binomial"]

_WORD = 64
_TWO64 = 1 << _WORD


@lru_cache(maxsize=64)
def _contexts(prec: int) -> tuple[Any, Any]:
    """Round-down and round-up contexts. Note: Python operators (``-x``, ``x * y``) round to the *default*
    context (53 bits, to nearest), so every operation here goes through a context method; negation
    (``ctx.minus``) is exact at equal precision."""
    return (gmpy2.context(precision=prec, round=gmpy2.RoundDown),
            gmpy2.context(precision=prec, round=gmpy2.RoundUp))


def _exact(n: int, prec: int) -> Any:
    return gmpy2.mpfr(gmpy2.mpz(n), max(prec, abs(n).bit_length() + 1))


@lru_cache(maxsize=1024)
def _jump_constants(gamma: Fraction, prec: int) -> tuple[Any, Any]:
    """An enclosure ``[c_lo, c_hi]`` of ``c = 1 - q = -expm1(-gamma)`` (increasing in gamma)."""
    down, up = _contexts(prec)
    num, den = _exact(gamma.numerator, prec), _exact(gamma.denominator, prec)
    g_lo, g_hi = down.div(num, den), up.div(num, den)
    return down.minus(up.expm1(down.minus(g_lo))), down.minus(down.expm1(down.minus(g_hi)))


@lru_cache(maxsize=1024)
def _poisson_mean(r: Fraction, gamma: Fraction, prec: int) -> tuple[Any, Any]:
    """An enclosure of the Poisson mean ``r lambda = -r ln(1 - q)`` (decreasing in ``1 - q``)."""
    down, up = _contexts(prec)
    c_lo, c_hi = _jump_constants(gamma, prec)
    lam_lo, lam_hi = down.minus(up.log(c_hi)), down.minus(down.log(c_lo))
    rn, rd = _exact(r.numerator, prec), _exact(r.denominator, prec)
    return down.div(down.mul(lam_lo, rn), rd), up.div(up.mul(lam_hi, rn), rd)


def _poisson_cdf(r: Fraction, gamma: Fraction, prec: int, n_max: int) -> tuple[list[Any], list[Any]]:
    """``F_lo(n) <= F(n) <= F_hi(n)`` for ``n = 0 .. n_max`` (F decreases as the mean grows)."""
    down, up = _contexts(prec)
    mu_lo, mu_hi = _poisson_mean(r, gamma, prec)
    lows, highs = [], []
    t_lo, t_hi = down.exp(down.minus(mu_hi)), up.exp(down.minus(mu_lo))
    s_lo, s_hi = t_lo, t_hi
    for n in range(n_max + 1):
        if n:
            t_lo = down.div(down.mul(t_lo, mu_hi), n)
            t_hi = up.div(up.mul(t_hi, mu_lo), n)
            s_lo, s_hi = down.add(s_lo, t_lo), up.add(s_hi, t_hi)
        lows.append(s_lo)
        highs.append(s_hi)
    return lows, highs


class _PoissonTable:
    """64-bit thresholds deciding ``U < F(n)`` for the Poisson CDF, vectorised."""

    def __init__(self, r: Fraction, gamma: Fraction) -> None:
        self.r, self.gamma = r, gamma
        down, up = _contexts(192)
        lows_q: list[int] = []
        highs_q: list[int] = []
        n_max = 16
        while True:
            lows, highs = _poisson_cdf(r, gamma, 192, n_max)
            lows_q = [int(down.floor(down.mul_2exp(v, _WORD))) for v in lows]
            highs_q = [min(_TWO64 - 1, int(up.ceil(up.mul_2exp(v, _WORD)))) for v in highs]
            if lows_q[-1] >= _TWO64 - 1:
                break
            n_max *= 2
        self.lo = np.array(lows_q, dtype=np.uint64)
        self.hi = np.array(highs_q, dtype=np.uint64)

    def sample(self, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
        words = rng.uint64(n)
        sure = np.searchsorted(self.hi, words, side="right")  # #{n : F_hi(n) <= U}: surely U >= F(n)
        maybe = np.searchsorted(self.lo, words, side="right")  # #{n : F_lo(n) <= U}: possibly U >= F(n)
        counts = sure.astype(np.int64)
        # Undecided prefixes, and the top prefix (where the clamped thresholds cannot separate), go slow.
        for idx in np.flatnonzero((sure != maybe) | (maybe >= self.lo.size) | (words == np.uint64(_TWO64 - 1))):
            counts[idx] = self._slow(int(words[idx]), rng)
        return counts

    def _slow(self, value: int, rng: RandomSource) -> int:
        bits, prec = _WORD, 256
        while True:
            n, decided = self._walk(value, bits, prec)
            if decided:
                return n
            value = (value << _WORD) | int(rng.uint64(1)[0])
            bits += _WORD
            prec = max(2 * prec, bits + 128)

    def _walk(self, value: int, bits: int, prec: int) -> tuple[int, bool]:
        down, _ = _contexts(prec)
        u_lo = down.mul_2exp(_exact(value, prec), -bits)  # exact: prec > bits
        u_hi = down.mul_2exp(_exact(value + 1, prec), -bits)
        n_max = 64
        while True:
            lows, highs = _poisson_cdf(self.r, self.gamma, prec, n_max)
            for n, (f_lo, f_hi) in enumerate(zip(lows, highs, strict=True)):
                if u_hi <= f_lo:
                    return n, True  # U < F(n)
                if not u_lo >= f_hi:
                    return n, False  # U and F(n) not separated yet
            n_max *= 2


def _log_jump(u: int, v: int, bits: int, c_bounds: tuple[Any, Any], prec: int) -> int | None:
    """``1 + floor(ln V / ln(1 - c^U))`` if the intervals of U and V (``bits`` bits known) decide it."""
    down, up = _contexts(prec)
    # Endpoints of the intervals of U and V, exact: prec > bits.
    u0, u1 = down.mul_2exp(_exact(u, prec), -bits), down.mul_2exp(_exact(u + 1, prec), -bits)
    v0, v1 = down.mul_2exp(_exact(v, prec), -bits), down.mul_2exp(_exact(v + 1, prec), -bits)
    c_lo, c_hi = c_bounds
    # A = -ln V (decreasing in V); B = -ln(1 - c^U) (decreasing in U, increasing in c); T = A / B.
    a_lo, a_hi = down.minus(up.log(v1)), down.minus(down.log(v0))
    b_hi = down.minus(down.log(down.sub(1, up.pow(c_hi, u0))))
    b_lo = down.minus(up.log(up.sub(1, down.pow(c_lo, u1))))
    if not (b_lo > 0 and gmpy2.is_finite(a_hi)):
        return None
    t_lo, t_hi = down.div(a_lo, b_hi), up.div(a_hi, b_lo)
    f_lo, f_hi = down.floor(t_lo), down.floor(t_hi)
    return int(f_lo) + 1 if f_lo == f_hi else None


def _log_jumps(count: int, gamma: Fraction, rng: RandomSource) -> npt.NDArray[np.int64]:
    """``count`` exact draws of the logarithmic law ``P(L = k) = q^k / (k lambda)``, ``q = exp(-gamma)``."""
    out = np.empty(count, dtype=np.int64)
    words = rng.uint64((2, count))
    base = max(128, 2 * gamma.denominator.bit_length() + 96)
    c_bounds = _jump_constants(gamma, base)
    for i in range(count):
        u, v, bits, prec, bounds = int(words[0, i]), int(words[1, i]), _WORD, base, c_bounds
        while (jump := _log_jump(u, v, bits, bounds, prec)) is None:
            extra = rng.uint64(2)
            u, v = (u << _WORD) | int(extra[0]), (v << _WORD) | int(extra[1])
            bits += _WORD
            prec = max(2 * prec, bits + 128)
            bounds = _jump_constants(gamma, prec)
        if jump >= 1 << 62:
            raise ParameterError(explain("gamma", gamma, "a Pólya sample below 2^62", "use a coarser grid"))
        out[i] = jump
    return out


_TABLES: dict[tuple[Fraction, Fraction], _PoissonTable] = {}


def _table(r: Fraction, gamma: Fraction) -> _PoissonTable:
    table = _TABLES.get((r, gamma))
    if table is None:
        if len(_TABLES) > 64:
            _TABLES.clear()
        table = _TABLES[(r, gamma)] = _PoissonTable(r, gamma)
    return table


_MAX_MEAN_JUMPS = 1 << 20


def _check_jumps(r: Fraction, gamma: Fraction) -> None:
    """Refuse parameters whose Poisson mean ``r lambda`` (jumps per sample, and the CDF table's length) is
    beyond 2^20: ``lambda = -ln(1 - q) <= ln(1/gamma) + 1`` for ``gamma < 1`` and ``<= 1`` otherwise."""
    log_inverse = max(0, gamma.denominator.bit_length() - gamma.numerator.bit_length() + 1) * 0.6932
    if r * Fraction(log_inverse + 1) > _MAX_MEAN_JUMPS:
        raise ParameterError(explain("r", r, f"r (ln(1/gamma) + 1) <= 2^20 (jumps per sample), gamma = {gamma}",
                                     "use a smaller shape r; a Pólya share of many parties uses r = 1 / parties"))


def _nb(r: Fraction, gamma: Fraction, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
    _check_jumps(r, gamma)
    counts = _table(r, gamma).sample(n, rng)
    jumps = _log_jumps(int(counts.sum()), gamma, rng)
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, np.repeat(np.arange(n), counts), jumps)
    return out


def negative_binomial(r: Any, gamma: Any, size: Shape | None = None, *, rng: RandomSource | None = None) -> Any:
    """Exact Pólya draws ``P(X = k) = Γ(k + r) / (Γ(r) k!) (1 - q)^r q^k``, ``q = exp(-gamma)``, ``k >= 0``.

    Parameters
    ----------
    r : int, Fraction, float or str
        The shape, a rational > 0 (``r = 1`` is the geometric law).
    gamma : int, Fraction, float or str
        ``-ln q``, a rational > 0; the mean is ``r q / (1 - q)``.
    size : int or tuple, optional
        Output shape; ``None`` returns one ``int``.
    rng : RandomSource, optional
        Source of random bits (default: fresh OS entropy).
    """
    shape_r = as_rational(r, "r")
    g = as_rational(gamma, "gamma")
    dims, n = shape_and_count(size)
    values = _nb(shape_r, g, n, resolve(rng))
    return values.reshape(dims) if dims else int(values[0])


def laplace_share(scale: Any, parts: int, size: Shape | None = None, *,
                  rng: RandomSource | None = None) -> Any:
    """One party's share ``X - Y``, ``X, Y ~ NB(1/parts, exp(-1/scale))``, of a discrete Laplace split ``parts`` ways.

    The sum of ``parts`` independent shares is exactly ``DLap(scale)``: ``P(z) ∝ exp(-|z| / scale)``.
    ``scale`` is a rational > 0 in integer units. Returns int64 values.
    """
    b = as_rational(scale, "scale")
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= 1 << 20:
        raise ParameterError(explain("parts", parts, "an int in [1, 2^20]", "pass the number of noise contributors"))
    dims, n = shape_and_count(size)
    rng = resolve(rng)
    r, gamma = Fraction(1, parts), 1 / b
    values = _nb(r, gamma, n, rng) - _nb(r, gamma, n, rng)
    return values.reshape(dims) if dims else int(values[0])

