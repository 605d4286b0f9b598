"""Parameters, domains and error bounds of the high-precision functions on shared fixed-point values.

Each function of :mod:`mpdp.protocols.mpc.functions` takes one of these frozen dataclasses. The dataclass
states the valid domain, the approximation (polynomial degree, iteration count, initial approximation)
and computes a *relative error bound* for a given :class:`~mpdp.crypto.fixed_point.FixedPointFormat` from
the approximation error and the truncation errors (each product rounds by less than ``u = 2^-f``).
The bounds are derived in the docstrings and checked by the tests against float64 references.

Normalisation by powers of two (reciprocal, division, square roots): for ``x`` in ``[2^L, 2^H]`` secure
comparisons find the bucket ``x in [2^(k-1), 2^k)``; then ``z = x 2^-k`` lies in ``[1/2, 1)``, where a
linear initial approximation and a few Newton-Raphson iterations converge quadratically from a known
starting error, and the result is rescaled by a public function of ``k`` selected with the bucket bits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import ParameterError, explain

__all__ = ["INV_SQRT_EIGHTH_POLYNOMIALS", "INV_SQRT_HALF_POLYNOMIALS", "INV_SQRT_POLYNOMIALS",
           "INV_SQRT_QUARTER_POLYNOMIALS", "INV_SQRT_TABLES", "WORD_TAIL", "ExpParams", "InvSqrtParams",
           "ReciprocalParams", "inv_sqrt_bucket_low", "inv_sqrt_chebyshev", "inv_sqrt_polynomial_error",
           "power_errors"]

WORD_TAIL = FixedPointFormat(ring_bits=64, frac_bits=30)
"""Where :func:`~mpdp.protocols.mpc.functions.exp` evaluates the higher Taylor terms of a wide-ring input."""


def power_errors(degree: int, radius: float, unit: float) -> list[float]:
    """Bounds ``e_k`` (in units ``unit``, the resolution) on the errors of the powers ``y^1 .. y^degree``
    computed as :func:`~mpdp.protocols.mpc.functions.power_ladder` does (``y^e = y^top y^(e-top)`` with ``top``
    the largest power of two below ``e``, each product rounded by less than one unit), from an exact ``y``
    with ``|y| <= h = radius``: ``e_1 = 0`` and, expanding ``(y^a + err_a)(y^b + err_b)``,
    ``e_(a+b) = h^a e_b + h^b e_a + e_a e_b unit + 1``.
    """
    errors = [0.0, 0.0]  # index 0 unused; y itself is exact
    top = 1
    while len(errors) <= degree:
        if len(errors) > 2 * top:
            top *= 2
        e = len(errors)
        a, b = top, e - top
        errors.append(radius**a * errors[b] + radius**b * errors[a] + errors[a] * errors[b] * unit + 1.0)
    return errors[1:]


def _check_int(name: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ParameterError(explain(name, value, f"an int in [{low}, {high}]", f"pass e.g. {name}={max(low, 1)}"))


@dataclass(frozen=True)
class ExpParams:
    """``exp(x)`` for ``x`` in ``[low, high]`` by range reduction and repeated squaring.

    ``exp(x) = exp(x / 2^m)^(2^m)``: ``y = x / 2^m`` lies in ``[-h, h]`` with ``h = max(|low|, high) / 2^m``;
    ``exp(y)`` is its Taylor polynomial of degree ``degree`` (powers computed in ``ceil(log2(degree))``
    rounds, combined with public coefficients ``1/k!``), then squared ``m = squarings`` times.

    Parameters
    ----------
    low, high:
        The domain. Inputs whose public bound exceeds it are checked securely (``strict``) or refused.
    squarings:
        ``m``; each squaring doubles the relative error accumulated so far.
    degree:
        Taylor degree on ``[-h, h]``.
    word_tail:
        For inputs in a ring wider than 64 bits (e.g. ``HIGH_PRECISION``) with ``h <= 1/2``: evaluate
        ``1 + y + y^2/2`` in the input's ring and the terms of degree 3 and more in Z_2^64 at 30 fractional
        bits (:data:`WORD_TAIL`), where a product costs a fraction of a 128-bit one. Their small
        coefficients and ``|y| <= 1/2`` keep the 2^-30 rounding far below the final error (see Accuracy).
    strict:
        When the public bound does not already guarantee the domain, compare securely and raise
        :class:`~mpdp.errors.DomainError` if any input lies outside (the parties learn that one bit).

    Accuracy
    --------
    With ``u = 2^-f``: the polynomial's relative error is at most
    ``E = h^(d+1) e^(2h) / (d+1)!``; evaluation adds ``(d + 3) u / e^-h``; each squaring ``k`` maps a relative
    error ``delta`` to ``2 delta + delta^2 + u / v_k`` where ``v_k = exp(low 2^(k-m))`` is the smallest value
    at that stage. :meth:`relative_error_bound` returns the result. Defaults with ``HIGH_PRECISION``
    (f = 48) and ``word_tail=False``: about 5.5e-8 over ``[-16, 16]``.

    With ``word_tail`` (:meth:`uses_word_tail`), the polynomial's absolute error is instead
    ``2.5 u + u' (T + sum_(k>=3) e_k / k! + sum_(k>=3) h^k / 2)`` with ``u' = 2^-30``: ``2.5 u`` for the
    rounding of ``y^2`` and of the tail's conversion back into the input's ring (and the ``y`` of the
    linear term is exact); ``T = e^h - 1 - h`` bounds the tail's derivative, so the
    ``u'``-rounding of ``y`` into Z_2^64 moves the tail by at most ``T u'``; ``e_k u'`` bounds the
    error of the power ``y^k`` (:func:`power_errors`); the last term is the rounding of the
    coefficients ``1/k!`` to at least 30 fractional bits. Defaults: about 8.5e-8 over ``[-16, 16]``.
    """

    low: float = -16.0
    high: float = 16.0
    squarings: int = 5
    degree: int = 9
    strict: bool = True
    word_tail: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < 0 < self.high):
            raise ParameterError(explain("[low, high]", (self.low, self.high), "finite, low < 0 < high",
                                         "pass e.g. ExpParams(low=-16, high=16)"))
        _check_int("squarings", self.squarings, 0, 12)
        _check_int("degree", self.degree, 2, 24)
        if self.radius > 1.0:
            raise ParameterError(explain("squarings", self.squarings, f">= {math.ceil(math.log2(self.span))}"
                                         " so that the reduced argument lies in [-1, 1]", "add squarings"))

    @property
    def span(self) -> float:
        return max(-self.low, self.high)

    @property
    def radius(self) -> float:
        """``h``: the reduced argument lies in ``[-h, h]``."""
        return float(self.span / 2**self.squarings)

    def polynomial_error(self) -> float:
        h, d = self.radius, self.degree
        return h ** (d + 1) * math.exp(2 * h) / math.factorial(d + 1)

    def uses_word_tail(self, fmt: FixedPointFormat) -> bool:
        """Whether ``exp`` evaluates the Taylor terms of degree >= 3 in Z_2^64 for inputs in ``fmt``."""
        return self.word_tail and fmt.ring_bits > 64 and self.radius <= 0.5 and self.degree >= 3

    def _series_error(self, fmt: FixedPointFormat) -> float:
        """Relative error of ``exp(y)`` on ``[-h, h]`` before the squarings (polynomial and evaluation)."""
        u = fmt.resolution
        h, d = self.radius, self.degree
        if self.uses_word_tail(fmt):
            uw = WORD_TAIL.resolution
            slope = math.exp(h) - 1 - h  # max over |y| <= h of |d/dy sum_(k>=3) y^k / k!| = |e^y - 1 - y|
            powers = power_errors(d, h, uw)
            tail = slope + sum(powers[k - 1] / math.factorial(k) + h**k / 2 for k in range(3, d + 1))
            return self.polynomial_error() + (2.5 * u + uw * tail) / math.exp(-h)
        return self.polynomial_error() + (d + 3) * u / math.exp(-h)

    def relative_error_bound(self, fmt: FixedPointFormat) -> float:
        u = fmt.resolution
        delta = self._series_error(fmt)
        for k in range(1, self.squarings + 1):
            delta = 2 * delta + delta * delta + u / math.exp(self.low * 2.0 ** (k - self.squarings))
        return delta

    def absolute_error_bound(self, fmt: FixedPointFormat) -> float:
        """Bound on ``|exp(x) - e^x|`` for inputs ``x`` in ``[low, 0]``.

        There every stage's value is at most 1, so the series' relative error is also an absolute one, and a
        squaring maps an absolute error ``a`` to at most ``2 a + a^2 + u`` (``|v^2 - w^2| <= (v + w) |v - w|``
        with ``v, w <= 1``, plus the product's rounding). Unlike :meth:`relative_error_bound` it does not grow
        as ``e^-low``: at ``FAST`` over ``[-16, 0]`` the relative bound exceeds 8 while this one is 6.3e-4.
        """
        u = fmt.resolution
        a = self._series_error(fmt)
        for _ in range(self.squarings):
            a = 2 * a + a * a + u
        return a


@dataclass(frozen=True)
class ReciprocalParams:
    """``1/x`` for ``x`` in ``[2^low_exp, 2^high_exp]`` (also the divisor domain of division).

    After normalising to ``z = x 2^-k`` in ``[1/2, 1)`` (comparisons with the powers of two against one mask, see
    :func:`~mpdp.protocols.mpc.functions.normalise_by_buckets`), ``y0 = a - b z`` with the dyadic constants
    ``(a, b) = INITIAL = (723/256, 482/256)`` (products with them are exact: an integer times ``z``, then a
    scale change) has residual ``e0 = 1 - z y0`` with ``|e0| <= INITIAL_RESIDUAL = 0.05908`` (the minimax
    line ``48/17 - 32/17 z`` reaches 1/17 = 0.05882). Then ``1/z = y0 / (1 - e0) = y0 (1 + e0)(1 + e0^2)
    (1 + e0^4)...``: each of the ``iterations`` steps ``y <- y (1 + e), e <- e^2`` squares the residual like
    a Newton-Raphson step ``y <- y (2 - z y)`` (the two give the same ``y``), but its two products are
    independent, so a step costs one round of products instead of two. The result is ``y 2^-k``.

    Accuracy
    --------
    Relative error at most ``r^(2^iterations) + (3 + 3 iterations) u + u 2^high_exp`` (``u = 2^-f``,
    ``r = INITIAL_RESIDUAL``): the residual; the roundings of ``z`` (relative ``2u``, ``z >= 1/2``), of each
    ``e`` (each ``e_j`` within ``1.2 u`` of ``e0^(2^j)``: squaring contracts earlier errors by ``2 r``) and of
    each ``y`` (relative ``u / y``, ``y >= 0.94``); and the final product's rounding relative to the smallest
    result ``2^-high_exp``. Defaults with ``HIGH_PRECISION``: about 3.8e-10.
    ``strict``: securely check ``x >= 2^low_exp`` (one revealed bit: whether some input lies below; zero and
    negative inputs are caught this way) and refuse with :class:`~mpdp.errors.DomainError`.
    """

    low_exp: int = -10
    high_exp: int = 16
    iterations: int = 3
    strict: bool = True

    INITIAL = (723, 482, 8)  # a = 723 / 2^8, b = 482 / 2^8
    INITIAL_RESIDUAL = 0.05908204  # max |1 - a z + b z^2| on [1/2, 1], at z = a / 2b: 1 - a^2 / 4b = 0.0590820...

    def __post_init__(self) -> None:
        _check_int("low_exp", self.low_exp, -60, 60)
        _check_int("high_exp", self.high_exp, -60, 60)
        if self.low_exp >= self.high_exp:
            raise ParameterError(explain("(low_exp, high_exp)", (self.low_exp, self.high_exp), "low_exp < high_exp",
                                         "pass e.g. ReciprocalParams(low_exp=-10, high_exp=16)"))
        _check_int("iterations", self.iterations, 0, 8)

    @property
    def low(self) -> float:
        return 2.0**self.low_exp

    @property
    def high(self) -> float:
        return 2.0**self.high_exp

    def relative_error_bound(self, fmt: FixedPointFormat) -> float:
        u = fmt.resolution
        return float(self.INITIAL_RESIDUAL ** (2**self.iterations) + (3 + 3 * self.iterations) * u
                     + u * 2.0**self.high_exp)


@dataclass(frozen=True)
class InvSqrtParams:
    """``1/sqrt(x)`` (and ``sqrt(x) = x / sqrt(x)``) for ``x`` in ``[2^low_exp, 2^high_exp]``.

    Same normalisation as :class:`ReciprocalParams`; ``y0 = 1.7872848 - 0.8097863 z`` has
    ``|1 - z y0^2| <= 0.0445`` on ``[1/2, 1)``; each step ``y <- y (3 - z y^2) / 2`` maps the residual ``e``
    to ``(3/4) e^2 + (1/4) e^3``. The result is ``y 2^(-k/2)``.

    Accuracy
    --------
    ``inv_sqrt``: relative error at most ``e_iter / 2 + 10 u + u 2^(high_exp/2)``;
    ``sqrt``: that plus ``u 2^(-low_exp/2)`` (rounding relative to the smallest root).
    Defaults with ``HIGH_PRECISION``: about 1e-11 (inv_sqrt) and 1.1e-13 (sqrt) relative.
    ``strict``: as for :class:`ReciprocalParams` (below-domain and non-positive inputs are refused).
    """

    low_exp: int = -10
    high_exp: int = 16
    iterations: int = 3
    strict: bool = True

    INITIAL = (1.7872848, 0.8097863)
    INITIAL_RESIDUAL = 0.0445

    def __post_init__(self) -> None:
        _check_int("low_exp", self.low_exp, -60, 60)
        _check_int("high_exp", self.high_exp, -60, 60)
        if self.low_exp >= self.high_exp:
            raise ParameterError(explain("(low_exp, high_exp)", (self.low_exp, self.high_exp), "low_exp < high_exp",
                                         "pass e.g. InvSqrtParams(low_exp=-10, high_exp=16)"))
        _check_int("iterations", self.iterations, 0, 8)

    @property
    def low(self) -> float:
        return 2.0**self.low_exp

    @property
    def high(self) -> float:
        return 2.0**self.high_exp

    def residual(self) -> float:
        e = self.INITIAL_RESIDUAL
        for _ in range(self.iterations):
            e = 0.75 * e * e + 0.25 * e**3
        return e

    def inv_sqrt_error_bound(self, fmt: FixedPointFormat) -> float:
        u = fmt.resolution
        return float(self.residual() / 2 + 10 * u + u * 2.0 ** (self.high_exp / 2))

    def sqrt_error_bound(self, fmt: FixedPointFormat) -> float:
        return float(self.inv_sqrt_error_bound(fmt) + fmt.resolution * 2.0 ** (-self.low_exp / 2))


#: ``Q_d(t) = sum_j C_j t^j / 2^INV_SQRT_POLYNOMIAL_BITS ~ 2 / sqrt(3 + t)`` on ``t in [-1, 1]``, that is
#: ``1/sqrt(z)`` for ``z = (3 + t) / 4`` in ``[1/2, 1]``: Chebyshev interpolants of degree ``d`` (nodes
#: ``cos((2i + 1) pi / (2d + 2))``) in the monomial basis, rounded to dyadic constants. Fixed here rather than
#: fitted at run time, so that every party uses the very same public constants; :func:`inv_sqrt_chebyshev`
#: regenerates every table of this module (``inv_sqrt_chebyshev(d, -1.0)`` here; the tests check it).
INV_SQRT_POLYNOMIALS: dict[int, tuple[int, ...]] = {
    4: (309962566, -51549474, 12881110, -4020798, 1179051),
    5: (309966052, -51661510, 12852686, -3568161, 1207658, -363932),
    6: (309962566, -51664313, 12916324, -3556830, 1036748, -373045, 114429),
    7: (309962476, -51660399, 12917953, -3588428, 1032371, -309495, 117360, -36450),
    8: (309962566, -51660298, 12915066, -3589251, 1046909, -307840, 93991, -37399, 11723),
    9: (309962568, -51660428, 12914989, -3587492, 1047293, -314205, 93374, -28878, 12032, -3798),
    10: (309962566, -51660432, 12915108, -3587445, 1046336, -314375, 96066, -28651, 8946, -3900, 1238),
}
INV_SQRT_POLYNOMIAL_BITS = 28

#: The same for ``z`` in ``[2^-1/2, 1]`` (buckets at half powers of two), ``t = 4z - 3`` in ``[2 sqrt(2) - 3, 1]``:
#: interpolants at the Chebyshev nodes of that interval (``inv_sqrt_chebyshev(d, HALF_LOW)``).
INV_SQRT_HALF_POLYNOMIALS: dict[int, tuple[int, ...]] = {
    3: (309972470, -51663375, 12454199, -2335479),
    4: (309963111, -51667181, 12885347, -3348126, 602898),
    5: (309962566, -51661315, 12916450, -3560374, 938174, -160092),
    6: (309962562, -51660485, 12915692, -3586341, 1029453, -268720, 43299),
}
HALF_LOW = 2 * math.sqrt(2) - 3

#: Quarter powers of two: ``z`` in ``[2^-1/4, 1]``, ``t`` in ``[4 2^-1/4 - 3, 1] ~ [0.364, 1]``
#: (``inv_sqrt_chebyshev(d, QUARTER_LOW)``); degree 2 (one round of powers) has relative error 5.3e-5.
INV_SQRT_QUARTER_POLYNOMIALS: dict[int, tuple[int, ...]] = {
    2: (309405183, -48728524, 7771976),
    3: (309876894, -51066777, 11387116, -1762275),
    4: (309949041, -51544200, 12520198, -2909143, 419580),
}
QUARTER_LOW = 4 * 2.0**-0.25 - 3

#: Eighth powers of two: ``z`` in ``[2^-1/8, 1]``, ``t`` in ``[4 2^-1/8 - 3, 1] ~ [0.668, 1]``
#: (``inv_sqrt_chebyshev(d, EIGHTH_LOW)``); degree 2 has relative error 6.5e-6, degree 1 (no powers) 3.6e-4.
INV_SQRT_EIGHTH_POLYNOMIALS: dict[int, tuple[int, ...]] = {
    1: (304120279, -35777900),
    2: (308902887, -47467625, 7001870),
    3: (309761538, -50617308, 10813759, -1522565),
}
EIGHTH_LOW = 4 * 2.0**-0.125 - 3

#: ``{buckets per octave: (table, low end of t)}``: buckets at the powers ``2^(j / n)`` leave ``z`` in
#: ``[2^(-1/n), 1]`` and ``t = 4z - 3`` in ``[4 2^(-1/n) - 3, 1]``.
INV_SQRT_TABLES: dict[int, tuple[dict[int, tuple[int, ...]], float]] = {
    1: (INV_SQRT_POLYNOMIALS, -1.0),
    2: (INV_SQRT_HALF_POLYNOMIALS, HALF_LOW),
    4: (INV_SQRT_QUARTER_POLYNOMIALS, QUARTER_LOW),
    8: (INV_SQRT_EIGHTH_POLYNOMIALS, EIGHTH_LOW),
}


def inv_sqrt_chebyshev(degree: int, low: float) -> tuple[int, ...]:
    """The integer coefficients ``C_j = round(c_j 2^INV_SQRT_POLYNOMIAL_BITS)`` of the degree-``degree``
    interpolant ``sum_j c_j t^j`` of ``2 / sqrt(3 + t)`` at the Chebyshev nodes of ``[low, 1]``
    (``t_i = (1 + low) / 2 + (1 - low) / 2 cos((2i + 1) pi / (2 degree + 2))``), solved in float64
    (``numpy.polynomial.polynomial.polyfit`` through the ``degree + 1`` nodes): how the tables were made."""
    _check_int("degree", degree, 1, 12)
    if not (math.isfinite(low) and -1.0 <= low < 1.0):
        raise ParameterError(explain("low", low, "a number in [-1, 1)", "pass the interval's low end of t"))
    i = np.arange(degree + 1)
    t = (1.0 + low) / 2 + (1.0 - low) / 2 * np.cos((2 * i + 1) * np.pi / (2 * degree + 2))
    c = np.polynomial.polynomial.polyfit(t, 2.0 / np.sqrt(3.0 + t), degree)
    return tuple(round(float(v) * 2.0**INV_SQRT_POLYNOMIAL_BITS) for v in c)


def inv_sqrt_bucket_low(buckets_per_octave: int) -> float:
    """The low end of ``t = 4z - 3`` for buckets at the powers ``2^(j / buckets_per_octave)``."""
    return _inv_sqrt_table(buckets_per_octave)[1]


def _inv_sqrt_table(buckets_per_octave: int) -> tuple[dict[int, tuple[int, ...]], float]:
    if isinstance(buckets_per_octave, bool) or buckets_per_octave not in INV_SQRT_TABLES:
        raise ParameterError(explain("buckets_per_octave", buckets_per_octave, f"one of {sorted(INV_SQRT_TABLES)}",
                                     "pass e.g. 1 (octaves), 2 (half powers of two) or 4 (quarter powers)"))
    return INV_SQRT_TABLES[buckets_per_octave]


def inv_sqrt_polynomial_error(degree: int, margin: float = 0.0, *, buckets_per_octave: int = 1) -> float:
    """A bound on ``|Q_d(t) sqrt(3 + t) / 2 - 1|`` over ``t in [low - margin, 1 + margin]`` (``margin <= 1/8``)
    for the table of :data:`INV_SQRT_TABLES` with ``buckets_per_octave`` (``low = -1`` for
    :data:`INV_SQRT_POLYNOMIALS`, ``HALF_LOW`` for :data:`INV_SQRT_HALF_POLYNOMIALS`, ...).

    With ``E(t) = Q(t) s(t) - 1``, ``s(t) = sqrt(3 + t) / 2``: ``|E|`` is evaluated on a grid of spacing ``h``;
    between grid points ``|E| <= max(|E(t_i)|, |E(t_i+1)|) + (h / 2) (|E'(t_i)| + h M2)`` where
    ``M2 >= |E''| = |Q'' s + 2 Q' s' + Q s''|`` from the coefficients' absolute values (``|s| <= 1.04``,
    ``|s'| <= 0.19``, ``|s''| <= 0.05`` for ``t >= -1.125``); ``1e-12`` covers the float64 evaluation.
    """
    table, _ = _inv_sqrt_table(buckets_per_octave)
    if isinstance(degree, bool) or degree not in table:
        raise ParameterError(explain("degree", degree, f"one of {sorted(table)}",
                                     "pass e.g. 8 (4 with half powers, 2 with quarter powers)"))
    if not 0 <= margin <= 0.125:
        raise ParameterError(explain("margin", margin, "in [0, 1/8]", "normalise the input more precisely"))
    return _inv_sqrt_polynomial_error(degree, float(margin), int(buckets_per_octave))


@functools.lru_cache(maxsize=64)
def _inv_sqrt_polynomial_error(degree: int, margin: float, buckets_per_octave: int) -> float:
    table, low = INV_SQRT_TABLES[buckets_per_octave]
    c = np.array(table[degree], dtype=np.float64) / 2.0**INV_SQRT_POLYNOMIAL_BITS
    j = np.arange(degree + 1, dtype=np.float64)
    top = 1.0 + margin
    h = 2.0**-16
    t = np.arange(low - margin, top + h, h)
    s = np.sqrt(3.0 + t) / 2.0
    q = np.polynomial.polynomial.polyval(t, c)
    dq = np.polynomial.polynomial.polyval(t, (c * j)[1:])
    e = np.abs(q * s - 1.0)
    de = np.abs(dq * s + q / (8.0 * s))  # s' = 1 / (4 sqrt(3 + t)) = 1 / (8 s)
    abs_c = np.abs(c)
    q0 = float(np.sum(abs_c * top**j))
    q1 = float(np.sum((abs_c * j)[1:] * top ** (j[1:] - 1)))
    q2 = float(np.sum((abs_c * j * (j - 1))[2:] * top ** (j[2:] - 2)))
    m2 = 1.04 * q2 + 2 * 0.19 * q1 + 0.05 * q0
    between = np.maximum(e[:-1], e[1:]) + (h / 2) * (np.minimum(de[:-1], de[1:]) + h * m2)
    return float(np.max(between)) + 1e-12
