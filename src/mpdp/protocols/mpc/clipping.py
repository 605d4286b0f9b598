"""Clipping for DP-SGD under MPC: per-example clipping to an L2 norm, and ``values / sqrt(max(a, b))``.

:func:`clip_norm` scales each slice of a shared gradient ``g`` to L2 norm at most ``C``:
``g min(1, C / ||g||) = g C inv_sqrt(max(||g||^2, C^2))``, a secure maximum
(:func:`~mpdp.protocols.mpc.comparison.maximum`) and the Newton-Raphson
:func:`~mpdp.protocols.mpc.functions.inv_sqrt`.

:func:`inv_sqrt_max` computes ``v / sqrt(max(a, b))`` with neither a Newton-Raphson iteration nor the maximum
formed first, for the DPVI step (``c r = q~ / sqrt(max(S~^2, n~))``, see :mod:`mpdp.protocols.mixture_gradient`).
One many-threshold comparison (:func:`~mpdp.protocols.mpc.bits.at_least`) finds the bucket
``m = max(a, b) in [2^((k-1)/n), 2^(k/n))`` (``n = buckets_per_octave``), and the bucket's constants, linear in
the comparison bits, give

    z    = m 2^(-k/n)          in [2^(-1/n), 1]
    root =   2^(-k/(2n))

so that the result is ``v root / sqrt(z)``. ``1/sqrt(z)`` is the fixed polynomial ``Q_d(t)``, ``t = 4z - 3``,
of :data:`~mpdp.crypto.approximations.INV_SQRT_TABLES`: its powers take ``ceil(log2(d))`` product rounds, its
dyadic coefficients combine them exactly, without a truncation, and one last product gives ``v root Q(t)``,
against two rounds of three dependent products per Newton-Raphson step. The finer the buckets, the narrower
``z``'s interval and the lower the degree: octaves (n = 1) with degree 8 (relative error 5.9e-8), half powers
with degree 4 (2.6e-6, two products of powers) or 3 (3.3e-5, one: :func:`_cubic_weights` forms ``t^2``
alongside ``v root t``, whose product with ``c_1 + c_2 t + c_3 t^2`` is the last one), quarter or eighth powers
with degree 2 (5.3e-5 or 6.5e-6, one: only ``t^2``). The comparison's thresholds double with ``n`` (the same
rounds); the bucket selection's product does not (the bucket constants are combined with the comparison bits
before it).

Accuracy
--------
:meth:`ClipFactorParams.max_error_bound`: the polynomial's error (:func:`~mpdp.crypto.approximations.
inv_sqrt_polynomial_error`, on ``t`` widened by the roundings), ``u`` for the rounding of ``z``, the powers'
roundings (:func:`~mpdp.crypto.approximations.power_errors` weighted by the coefficients), and the roundings of
the bucket constants and of ``root``; ``u = 2^-f``. The buckets are exact when ``H + f <= 61``; beyond, the
comparisons run at a reduced precision (see :func:`inv_sqrt_max`). :func:`clip_norm` carries the error of
:func:`~mpdp.protocols.mpc.functions.inv_sqrt`.

Security
--------
Semi-honest, up to n - 1 colluding computing parties, as the comparisons and products it is built from;
nothing is opened but uniformly masked values.

References
----------
Abadi et al., "Deep learning with differential privacy", CCS 2016 (per-example clipping); paper 002
(Tajeddine et al., arXiv 2020; :data:`mpdp.learning.papers.PAPERS`), Eqs. 27-30 (clipping the whole per-example gradient
under MPC); Catrina and Saxena, FC 2010 (normalised Newton-Raphson).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from mpdp.crypto.approximations import (
    INV_SQRT_POLYNOMIAL_BITS,
    INV_SQRT_TABLES,
    InvSqrtParams,
    inv_sqrt_polynomial_error,
    power_errors,
)
from mpdp.crypto.beaver import beaver_combine
from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import Z2k
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.protocols.mpc.arithmetic import mul_constants, truncated_masked_product, wrap_shift_many
from mpdp.protocols.mpc.bits import at_least
from mpdp.protocols.mpc.comparison import maximum
from mpdp.protocols.mpc.functions import inv_sqrt, mul_known, power_ladder
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = ["ClipFactorParams", "clip_norm", "inv_sqrt_max"]


@dataclass(frozen=True)
class ClipFactorParams:
    """The parameters of :func:`inv_sqrt_max`.

    ``high_exp`` (H): the inputs' public bounds must be at most ``2^H``; ``degree`` of the polynomial;
    ``buckets_per_octave`` (n): buckets at the powers ``2^(j / n)``, so
    ``z`` lies in ``[2^(-1/n), 1]`` and a lower degree reaches the same error
    (:data:`~mpdp.crypto.approximations.INV_SQRT_TABLES`): with half powers (n = 2) degree 4 has 2.6e-6 in two
    rounds of powers (degree 8's 5.9e-8 on octaves needs three) and degree 3 has 3.3e-5 in one
    (:func:`inv_sqrt_max` evaluates cubics with one product of powers); with quarter powers (n = 4) degree 2 has
    5.3e-5 and eighth powers (n = 8) degree 2 has 6.5e-6, in one round. Each doubling of n doubles the
    comparisons' thresholds (one comparison round either way)."""

    high_exp: int = 30
    degree: int = 8
    buckets_per_octave: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.high_exp, bool) or not isinstance(self.high_exp, int) or not 1 <= self.high_exp <= 58:
            raise ParameterError(explain("high_exp", self.high_exp, "an int in [1, 58]", "pass e.g. high_exp=30"))
        n = self.buckets_per_octave
        if isinstance(n, bool) or n not in INV_SQRT_TABLES:
            raise ParameterError(explain("buckets_per_octave", n, f"one of {sorted(INV_SQRT_TABLES)}",
                                         "pass 1 (octaves), 2 (half powers of two), 4 or 8"))
        if isinstance(self.degree, bool) or self.degree not in self.table:
            raise ParameterError(explain("degree", self.degree, f"one of {sorted(self.table)}",
                                         "pass e.g. degree=8 (4 with half powers, 2 with quarter powers)"))

    @property
    def table(self) -> dict[int, tuple[int, ...]]:
        """The polynomials for this bucket width."""
        return INV_SQRT_TABLES[self.buckets_per_octave][0]

    @classmethod
    def for_bound(cls, bound: float, *, degree: int = 8, buckets_per_octave: int = 1) -> ClipFactorParams:
        """The smallest ``H`` covering inputs up to ``bound``."""
        if not (math.isfinite(bound) and bound >= 0):
            raise ParameterError(explain("bound", bound, "a finite number >= 0", "pass the input's public bound"))
        return cls(high_exp=max(1, math.ceil(math.log2(max(bound, 2.0)))), degree=degree,
                   buckets_per_octave=buckets_per_octave)

    def max_exact(self, fmt: FixedPointFormat) -> bool:
        """Whether :func:`inv_sqrt_max` compares exactly (``(2^(H + 1) + 2) 2^f < 2^63``)."""
        return self.high_exp + fmt.frac_bits <= 61

    def constant_bits(self, fmt: FixedPointFormat, low_exp: int, values_bound: float = 2.0) -> int:
        """Extra fractional bits ``e`` of the bucket constants ``2^(-k/n)`` and ``2^(-k/2n)`` in
        :func:`inv_sqrt_max` (``n = buckets_per_octave`` above 1 only): as many as the product
        ``(m, v) * (2^(-k/n), 2^(-k/2n))`` holds at scale ``2 f + e`` for values up to ``values_bound`` (at most
        ``H``: beyond, the constants' rounding is far below the other errors). Fewer for larger values, so a
        bound stated for ``values_bound`` holds for every smaller one."""
        if self.buckets_per_octave == 1:
            return 0
        top = max(1.0, values_bound * 2.0 ** (-low_exp / 2))
        room = math.floor(fmt.raw_capacity_bits - 2 * fmt.frac_bits - math.log2(top))
        return max(0, min(self.high_exp, room))

    def max_error_bound(self, fmt: FixedPointFormat, low_exp: int, values_bound: float = 2.0) -> float:
        """The relative error of :func:`inv_sqrt_max` (see there) on ``[2^low_exp, 2^H]``, for values up to
        ``values_bound``. A pure function of its (hashable) arguments, remembered: every DP-SGD step's plan asks
        for it with the same few."""
        return _max_error_bound(self, fmt, low_exp, float(values_bound))

    def _max_error_bound_uncached(self, fmt: FixedPointFormat, low_exp: int, values_bound: float) -> float:
        u = fmt.resolution
        # n = buckets_per_octave > 1: thresholds 2^(j/n) are rounded down (z within 2^(-f - low_exp) of its
        # interval); the scales 2^(-k/n) >= 2^(-H - 1/n) and roots 2^(-k/2n) >= 2^(-H/2 - 1/2n), on f + e
        # fractional bits, move z = m scale (m <= 2^H) by at most u 2^(H - e) and root / sqrt(scale) by
        # u 2^-e (2^(H/2 + 1/2n) + 2^(H + 1/n - 1)) relatively
        H, n = self.high_exp, self.buckets_per_octave
        fine = u * 2.0 ** -self.constant_bits(fmt, low_exp, values_bound)
        split = n > 1
        half = (2.0 ** (-fmt.frac_bits - low_exp) + fine * 2.0**H) if split else 0.0
        constants = fine * (2.0 ** (H / 2 + 0.5 / n) + 2.0 ** (H + 1 / n - 1)) if split else 0.0
        # Q's own rounding where the format needs it truncated before the last product (Q >= 1); a cubic's
        # (_cubic_weights) R by u |t| and its c_0 rounded to f bits by u / 2 relatively
        constants += 1.5 * u if self.degree == 3 else u
        # the products' own roundings are the absolute 3.5 u of the results; with n > 1 the root's is in
        # ``constants``, otherwise (root on f bits) it is u 2^(H/2) relative, as in _bound
        if self.max_exact(fmt):
            return self._bound(fmt, half, root=not split) + constants
        # reduced comparisons: m >= max(a, b) - 2^(1 - r) (relative 2^(-r - low_exp) in 1/sqrt(m)), and z within
        # 2^(1 - r) 2^(-k/n) <= 2^(1 - r - low_exp - 1/n) of its interval
        r = min(fmt.frac_bits, 60 - (self.high_exp + 1))
        edge = 2.0 ** (1 - r - low_exp - 1 / n)
        return self._bound(fmt, edge + half, root=not split) + 2.0 ** (-r - low_exp) + constants

    def _bound(self, fmt: FixedPointFormat, edge: float, *, root: bool = True) -> float:
        """Polynomial on ``z`` within ``edge`` (plus roundings) of ``[1/2, 1]``, ``z`` and powers' roundings,
        and (``root``) the rounding of ``root`` and of the final product relative to the smallest factor."""
        u = fmt.resolution
        margin = 4 * (u + edge)  # t = 4z - 3
        c = np.abs(np.array(self.table[self.degree], dtype=np.float64)) / 2.0**INV_SQRT_POLYNOMIAL_BITS
        powers = power_errors(self.degree, 1.0 + margin, u)
        rounding = float(np.sum(c[1:] * np.array(powers))) * u / 0.99  # Q >= 1 - error on the interval
        return float(inv_sqrt_polynomial_error(self.degree, min(margin, 0.125),
                                               buckets_per_octave=self.buckets_per_octave)
                     + u + rounding + (3 * u * 2.0 ** (self.high_exp / 2) if root else 0.0))


@functools.lru_cache(maxsize=256)
def _max_error_bound(params: ClipFactorParams, fmt: FixedPointFormat, low_exp: int, values_bound: float) -> float:
    return params._max_error_bound_uncached(fmt, low_exp, values_bound)


def clip_norm(g: SharedFixedPoint, max_norm: float, *, axis: int = -1,
              params: InvSqrtParams | None = None) -> SharedFixedPoint:
    """Scale each slice along ``axis`` to L2 norm at most ``max_norm`` (DP-SGD per-example clipping).

    ``g * min(1, C / ||g||) = g * C * inv_sqrt(max(||g||^2, C^2))``.

    Accuracy: the factor carries the relative error of :func:`~mpdp.protocols.mpc.functions.inv_sqrt`
    (documented there); the clipped norm exceeds ``C`` by at most that relative error plus ``sqrt(d) 2^-f``.
    """
    if not max_norm > 0:
        raise ParameterError(explain("max_norm", max_norm, "a number > 0", "pass the clipping bound C"))
    squares = g.square().sum(axis=axis)
    limited = maximum(squares, max_norm**2)
    factor = (inv_sqrt(limited, params) * max_norm).assume_bound(1.0 + 1e-3)
    expanded = factor._reshape_op(lambda a: np.expand_dims(a, axis))
    return (g * expanded).assume_bound(min(g.bound, max_norm) * (1 + 1e-3) + g.fmt.resolution)


def _inv_sqrt_tail(x: SharedFixedPoint, scale: SharedFixedPoint, root: SharedFixedPoint, values: SharedFixedPoint,
                   p: ClipFactorParams, edge: float, top: float) -> SharedFixedPoint:
    """``values root Q(t)`` with ``z = x scale`` in ``[1/2 - edge, 1 + edge]``; ``top`` bounds
    ``root / sqrt(z)``. ``Q(t)`` stays at scale ``f + INV_SQRT_POLYNOMIAL_BITS`` unless the last product cannot
    hold that (Z_2^64 formats): then it is truncated to ``f`` first (one round, one more ``u``)."""
    u = x.fmt.resolution
    n = x.shape[0]
    # x 2^-k < 1 for the bucket's k (0 outside the domain): one product, with v root alongside
    K = values.shape[1]
    v = values.rescale()
    left = concatenate([x, v.flatten()])
    right = concatenate([scale, root.reshape(n, 1).broadcast_to((n, K)).flatten()])
    scaled = mul_known(left, right, max(1.0, v.bound * root.bound))
    z = scaled[:n]
    t = (z * 4 - 3.0).assume_bound(1.0 + 4 * u + 4 * edge)  # exact: integer operations
    q = _polynomial(t, p.table[p.degree], INV_SQRT_POLYNOMIAL_BITS)
    # the results' bounds: top times 1 + the polynomial's error (5.3e-5 for quarter powers' degree 2) + roundings
    top *= 1.0 + inv_sqrt_polynomial_error(p.degree, min(4 * u + 4 * edge, 0.125),
                                           buckets_per_octave=p.buckets_per_octave) + 1e-6
    left = scaled[n:]
    if not x.fmt.raw_bound_ok(left.bound * q.bound, left.scale + q.scale):
        q = q.rescale()
    qs = q.reshape(n, 1).broadcast_to((n, K)).flatten()
    return (left * qs).reshape(n, K).assume_bound(v.bound * top + 4 * u)


def inv_sqrt_max(a: SharedFixedPoint, b: SharedFixedPoint, values: SharedFixedPoint, params: ClipFactorParams,
                 *, low_exp: int) -> SharedFixedPoint:
    """``values_i / sqrt(max(a_i, b_i))`` for ``a, b`` of shape ``(B,)``, ``values`` ``(B, K)``, with
    ``max(a, b)`` in ``[2^low_exp, 2^H]`` (``H = params.high_exp``; 0 below the domain) and ``a < 2``.

    The bucket of ``m = max(a, b)`` without forming ``m`` first: :func:`.bits.at_least` compares ``a``,
    ``b`` and ``a - b + 1`` with the thresholds ``2^(j/n)`` (``n = params.buckets_per_octave``; ``a`` with those
    below 2, ``a - b + 1`` with 1) against one mask (7 rounds), giving the bits
    ``A_j``, ``B_j`` and ``G = [a >= b]``. The bucket's constants are linear in ``[m >= 2^(j/n)] = B_j +
    G (A_j - B_j)``, so they are combined with the bits first and one round of Beaver products of the bit ``G``
    with three values per element (exact: no truncation) gives ``2^(-k/n)``, ``2^(-k/2n)`` for ``m``'s bucket and
    ``m = b + G (a - b)`` exactly. Then ``z = m 2^(-k/n)`` and ``values 2^(-k/2n)`` in one product, the
    polynomial, one last product. The comparisons run on the shares' low words when
    ``(2^(H + 1) + 2) 2^f < 2^63`` (exact: every difference of a word and a threshold fits a signed 64-bit word);
    otherwise at ``r = min(f, 60 - (H + 1))`` fractional bits after one rounding shift, which may pick the
    smaller of two values within ``2^(1 - r)`` of each other or a neighbouring bucket: ``z`` within
    ``2^(1 - r - low_exp - 1/n)`` of ``[2^(-1/n), 1]`` and ``m >= max(a, b) - 2^(1 - r)``.

    With ``n > 1`` the bucket constants ``2^(-k/n)`` and ``2^(-k/2n)`` get ``e`` extra fractional bits
    (:meth:`ClipFactorParams.constant_bits`), so their rounding stays far below ``u`` even for ``m`` near ``2^H``
    in a 64-bit format; there (``2 f + 28`` bits beyond the capacity) the polynomial is truncated to ``f``
    before the last product, one round more.

    Accuracy: each result within ``|values| eps / sqrt(max(a, b)) + 3.5 u`` with ``eps`` from
    :meth:`ClipFactorParams.max_error_bound` (``values_bound`` at least ``max |values|``).
    """
    if not isinstance(params, ClipFactorParams):
        raise ParameterError(explain("params", params, "a ClipFactorParams", "pass ClipFactorParams(...)"))
    a, b = a.rescale(), b.rescale()
    if a.ndim != 1 or a.shape != b.shape or values.ndim != 2 or values.shape[0] != a.shape[0]:
        raise ParameterError(explain("shapes", (a.shape, b.shape, values.shape), "a, b of shape (B,), values (B, K)",
                                     "pass one pair per row of values"))
    H = params.high_exp
    if max(a.bound, b.bound) > 2.0**H or a.bound >= 2.0 or not -40 <= low_exp < 0:
        raise DomainError(explain("bounds", (a.bound, b.bound, low_exp), f"a < 2, b <= 2^{H}, -40 <= low_exp < 0",
                                  "declare tighter bounds or use ClipFactorParams.for_bound(...)"))
    session, fmt, ring = a.session, a.fmt, a.ring
    f = fmt.frac_bits
    B = a.shape[0]
    diff = (a - b + 1.0).assume_bound(2.0**H + 1.0)
    words = stack([a, b, diff])
    if params.max_exact(fmt):
        reduced = f
        word = words.share if fmt.ring_bits == 64 else words.share[0]  # mod 2^64: exact, local
    else:
        reduced = min(f, 60 - (H + 1))
        if reduced + low_exp < 1:
            raise DomainError(explain("high_exp", H, f"room for 2^{low_exp} in a 64-bit word with {fmt}",
                                      "lower the bound or narrow the domain"))
        (word,) = wrap_shift_many(session, ring, Z2k(64), [words.share], [f - reduced], sharing_id=session.new_id())
    per = params.buckets_per_octave  # thresholds 2^(j / per)
    # the constants on f + e fractional bits (e = params.constant_bits): the product with (m, v) holds them
    g = f + params.constant_bits(fmt, low_exp, values.bound)
    plan = _bucket_plan(low_exp, H, per, reduced, g)
    n_t, n_a = plan.n_t, plan.n_a
    bits = at_least(session, word, plan.picked, ring, rows=plan.rows)  # (n_t + n_a + 1, B)
    # The buckets enter only through 2^(-k / per) and 2^(-k / (2 per)), linear in the one-hot bits of m, which
    # telescope onto [m >= 2^(j / per)] = B_j + G (A_j - B_j) (plan.steps: c_j - c_(j - 1) per column): both
    # columns are sum_j s_j B_j + G sum_j s_j (A_j - B_j), so the A_j and B_j are combined with the public
    # constants first (one product, exact) and the gate G multiplies two values per element, not a row per
    # threshold. A_j = [a >= 2^(j / per)] = 0 from 2 on: only n_a rows of them.
    prods = mul_constants(ring, ring.index(ring.index(bits, np.s_[: n_t + n_a]), None), plan.steps,
                          (2, n_t + n_a, 1))
    lower = ring.sum(ring.index(prods, (slice(None), np.s_[:n_t])), 1)  # sum_j s_j B_j, (2, B)
    sel = ring.sub(ring.sum(ring.index(prods, (slice(None), np.s_[n_t:])), 1), lower)  # sum_j s_j (A_j - B_j)
    gate = ring.index(bits, np.s_[-1:])  # G = [a >= b], (1, B)
    # G sel and G (a - b) in one round of exact Beaver products (the bits' scale is 0)
    gap = ring.index(ring.sub(a.share, b.share), None)  # a - b, raw at scale f
    operands = ring.concatenate([sel, gap])
    provider = session.provider
    provider.prefetch([CorrelationSpec("mul", ring.bits, (3, B), (1, B))])
    triple = provider.mul_triple(ring, (3, B), (1, B))
    d, e = session.open(ring, [ring.sub(operands, triple.a), ring.sub(gate, triple.b)], sharing_id=session.new_id(),
                        label="mpc.select")
    chosen = beaver_combine(ring, d, e, triple.a, triple.b, triple.c, leader=session.leader)
    both = ring.add(ring.index(chosen, np.s_[:2]), lower)  # 2^(-k / per) and 2^(-k / (2 per)) for m's bucket
    m_share = ring.add(ring.index(chosen, 2), b.share)
    m = SharedFixedPoint(session, m_share, fmt=fmt, scale=f, bound=max(a.bound, b.bound),
                         sharing_id=session.new_id())
    scale, root = (SharedFixedPoint(session, ring.index(both, i), fmt=fmt, scale=g, bound=plan.tops[i],
                                    sharing_id=session.new_id()) for i in range(2))
    edge = 0.0 if reduced == f else 2.0 ** (1 - reduced - low_exp - 1 / per)
    if per > 1:
        edge += 2.0 ** (-f - low_exp) + 2.0 ** (-g + H)
    if params.degree == 3:
        return _cubic_weights(m, scale, root, values, params, edge, 2.0 ** (-low_exp / 2))
    return _inv_sqrt_tail(m, scale, root, values, params, edge, 2.0 ** (-low_exp / 2))


def _cubic_weights(x: SharedFixedPoint, scale: SharedFixedPoint, root: SharedFixedPoint, values: SharedFixedPoint,
                   p: ClipFactorParams, edge: float, top: float) -> SharedFixedPoint:
    """``values root Q(t)`` for a cubic ``Q`` (``z = x scale``, ``t = 4z - 3``) with one product of powers, as
    :func:`_inv_sqrt_tail` has for a quadratic: with ``s = values root`` (formed alongside ``z``),
    ``s Q(t) = c_0 s + (s t) R(t)``, ``R = c_1 + c_2 t + c_3 t^2``; ``t^2`` and ``s t`` come from one product,
    and ``(s t) R`` is a masked product (as :func:`~mpdp.protocols.mpc.arithmetic.mul`'s: its Beaver step
    yields shares of the product plus a mask, opened for the wrap-corrected shift) with ``c_0 s`` added on the
    raw shares under the same mask: one truncation, the rounds and correlation of one product.

    Accuracy: as :func:`_inv_sqrt_tail` (``s``'s rounding times ``Q``, the last truncation) plus ``0.25 u``
    absolute (``s t``'s rounding times ``|R| <= |c_1| + |c_2| + |c_3|``), within the ``3.5 u`` of
    :func:`inv_sqrt_max`. Where the format cannot hold ``(s t) R`` with ``R`` at scale ``f + 28`` (Z_2^64), ``R``
    is truncated to ``f`` first (relatively ``u |t| / Q <= u``) and ``c_0`` rounded to ``f`` bits (``u / 2``)."""
    fmt, ring = x.fmt, x.ring
    u, f = fmt.resolution, fmt.frac_bits
    n, K = x.shape[0], values.shape[1]
    v = values.rescale()
    rows = root.reshape(n, 1).broadcast_to((n, K)).flatten()
    scaled = mul_known(concatenate([x, v.flatten()]), concatenate([scale, rows]), max(1.0, v.bound * root.bound))
    t = (scaled[:n] * 4 - 3.0).assume_bound(1.0 + 4 * u + 4 * edge)  # exact: integer operations
    s = scaled[n:]  # values root, (n K,)
    powers = concatenate([t, s]) * concatenate([t, t.reshape(n, 1).broadcast_to((n, K)).flatten()])
    t2, st = powers[:n].assume_bound(t.bound**2 + 2 * u), powers[n:]
    c0, c1, c2, c3 = p.table[3]
    bits = INV_SQRT_POLYNOMIAL_BITS
    # R = c_1 + c_2 t + c_3 t^2 at scale f + bits: exact integer products
    pair = stack([t, t2])
    raw = ring.sum(ring.mul_int(pair.share, np.array([[c2], [c3]], dtype=np.int64)), 0)
    r_bound = (abs(c1) + abs(c2) * t.bound + abs(c3) * t2.bound) * 2.0**-bits
    r = t.derive(raw, scale=f + bits, bound=r_bound) + c1 * 2.0**-bits
    total = st.bound * r_bound + s.bound * abs(c0) * 2.0**-bits
    if not fmt.raw_bound_ok(total, st.scale + r.scale):
        r = r.rescale()
        total += st.bound * u + s.bound * u
    k = r.scale - bits  # c_0 s at the product's scale st.scale + r.scale = f + r.scale (s and st at scale f)
    c0s = ring.mul_int(ring.mul_int(s.share, c0), 1 << k) if k >= 0 else ring.mul_int(s.share, round(c0 * 2.0**k))
    rb = r.reshape(n, 1).broadcast_to((n, K)).flatten()
    bound = v.bound * top * (1.0 + inv_sqrt_polynomial_error(3, min(4 * u + 4 * edge, 0.125),
                                                             buckets_per_octave=p.buckets_per_octave) + 1e-6)
    # arithmetic.mul's masked product, with c_0 s added under the same mask before the opening
    out = truncated_masked_product(st, rb, "mul", st.scale + r.scale, min(bound, total) + 3 * u, addend=c0s)
    return out.reshape(n, K)


class _BucketPlan(NamedTuple):
    n_t: int  # thresholds 2^(j / per), j = low_exp per .. H per
    n_a: int  # those below 2 (compared with a)
    picked: npt.NDArray[np.int64]  # the compared thresholds (b: all; a: below 2; a - b + 1: 1) at ``reduced`` bits
    rows: npt.NDArray[np.int64]  # which word each threshold is compared with (0: a, 1: b, 2: a - b + 1)
    steps: tuple[int, ...]  # (2, n_t + n_a): per column c_j - c_(j - 1) for the B_j rows, then the A_j rows, with
    # c_j = floor(2^(g - k / per)), then floor(2^(g - k / (2 per))), for the bucket k = j + 1 (in units 1/per)
    tops: tuple[float, float]  # their largest values, at scale g


@functools.lru_cache(maxsize=32)
def _bucket_plan(low_exp: int, H: int, per: int, reduced: int, g: int) -> _BucketPlan:
    """The public tables of :func:`inv_sqrt_max`'s buckets, the same at every step of a training (computed once:
    a few hundred big-integer roots and Python-level loops over the thresholds)."""
    exps = np.arange(low_exp * per, H * per + 1)
    thresholds = np.array(_roots_of_powers(tuple(int(j) + per * reduced for j in exps), per), dtype=np.int64)
    # b against every threshold; a (< 2 whatever the rounding) against those below 2 only; a - b + 1 against 1
    n_t = len(exps)
    n_a = int(np.count_nonzero(exps < per))
    zero = int(np.flatnonzero(exps == 0)[0])
    rows = np.concatenate([np.ones(n_t), np.zeros(n_a), [2]]).astype(np.int64)
    picked = np.concatenate([thresholds, thresholds[:n_a], thresholds[zero : zero + 1]])
    picked.flags.writeable = rows.flags.writeable = False  # shared by the cache
    # buckets k = low_exp per + 1 .. H per + 1 (in units 1/per)
    consts = [_roots_of_powers(tuple(r * g - int(j) - 1 for j in exps), r) for r in (per, 2 * per)]
    tops = (float(max(consts[0])) * 2.0**-g, float(max(consts[1])) * 2.0**-g)
    # telescoped (sum_k h_k c_k = sum_j [m >= 2^(j / per)] (c_j - c_(j - 1)), c_(-1) = 0), for the B_j and A_j rows
    steps = [tuple(v - w for v, w in zip(c, (0, *c[:-1]), strict=True)) for c in consts]
    table = tuple(v for s in steps for v in s[:n_t] + s[:n_a])
    return _BucketPlan(n_t, n_a, picked, rows, table, tops)


@functools.lru_cache(maxsize=128)
def _roots_of_powers(exponents: tuple[int, ...], r: int) -> tuple[int, ...]:
    """``floor(2^(e / r))`` for each exponent ``e`` (:func:`_root`): public constants that every step of a
    training asks for again (big-integer square roots of numbers of a few hundred bits), computed once."""
    return tuple(_root(1 << e, r) for e in exponents)


def _root(n: int, r: int) -> int:
    """``floor(n^(1/r))`` for ``r`` a power of two, exactly (``floor(sqrt(floor(y))) = floor(sqrt(y))``, so
    repeated integer square roots): the same at every party."""
    while r > 1:
        n, r = math.isqrt(n), r // 2
    return n


def _polynomial(t: SharedFixedPoint, coefficients: tuple[int, ...], bits: int) -> SharedFixedPoint:
    """``sum_j C_j t^j / 2^bits`` for integer ``C_j``: exact on the raw shares, left at scale ``f + bits``
    (no truncation; the product that follows absorbs it). Degree 2: ``t^2`` as a square (one opened array)."""
    if len(coefficients) == 3:
        r = t.rescale()
        powers = [r, (r * r).assume_bound(r.bound**2 + 2 * t.fmt.resolution)]
    else:
        powers = power_ladder(t, len(coefficients) - 1)
    f = t.fmt.frac_bits
    terms = stack([p.rescale() for p in powers])
    ring = t.ring
    ints = np.array(coefficients[1:], dtype=np.int64).reshape((-1,) + (1,) * t.ndim)
    raw = ring.sum(ring.mul_int(terms.share, ints), 0)
    bound = float(sum(abs(cj) * t.bound**j for j, cj in enumerate(coefficients) if j)) * 2.0**-bits
    poly = terms[0].derive(raw, scale=f + bits, bound=bound)
    return poly + coefficients[0] * 2.0**-bits  # the constant term, exact at scale f + bits
