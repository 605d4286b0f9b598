"""The DP-SGD clipping factor ``min(1, 1/sqrt(x))`` of a shared squared norm, without a comparison.

Per-example clipping scales a gradient ``g`` by ``min(1, C / ||g||) = 1 / sqrt(max(x, 1))`` with
``x = ||g||^2 / C^2``. :func:`~mpdp.protocols.mpc.comparison.clip_norm` computes ``max(x, 1)`` with a secure
comparison and then ``inv_sqrt``; both compare ``x`` with public values. :func:`clip_factor` folds the
maximum into the comparisons ``inv_sqrt`` already performs: the normalisation finds the bucket
``x in [2^(k-1), 2^k)`` for ``k = 1..H+1`` only (the domain starts at 1), as one-hot shared bits ``h_k``, and
with ``u = sum_k h_k`` (1 exactly when ``x >= 1``)

    z    = x sum_k h_k 2^-k + (1 - u)          in [1/2, 1]
    root =   sum_k h_k 2^(-k/2) + (1 - u)

are linear in the bits (no product beyond ``x * scale``): the result is ``root / sqrt(z)``, that is
``1/sqrt(x)`` for ``x >= 1`` and ``1/sqrt(1) = 1`` otherwise (including ``x = 0`` and the tiny negative
values a truncation can produce). About 11 rounds fewer than comparison + ``inv_sqrt``.

``1/sqrt(z)`` is the fixed polynomial ``Q_d(t)``, ``t = 4z - 3`` in ``[-1, 1]``, of
:data:`~mpdp.crypto.approximations.INV_SQRT_POLYNOMIALS` (default degree 8, relative error 5.9e-8): its
powers take ``ceil(log2(d))`` product rounds, its dyadic coefficients combine them exactly, without a
truncation, and one last product gives ``root Q(t)``, against two rounds of three dependent products per
Newton-Raphson step. :func:`clip_weights` also scales values ``v`` (DP-SGD's per-example weights) in
that last product: ``v root`` is formed alongside ``z`` and multiplied by ``Q(t)``, with no product
after the factor.

Accuracy
--------
:meth:`ClipFactorParams.relative_error_bound`: the polynomial's error (:func:`~mpdp.crypto.approximations.
inv_sqrt_polynomial_error`, on ``t`` widened by the roundings), ``u`` for the rounding of ``z``, the powers'
roundings (:func:`~mpdp.crypto.approximations.power_errors` weighted by the coefficients), and
``2 u 2^(H/2)`` for the rounding of ``root`` and of the final product relative to the smallest result
``2^(-H/2)``; ``u = 2^-f``. The buckets are exact when ``H + f <= 61`` (HIGH_PRECISION: ``H <= 13``);
beyond, the normalisation compares at a reduced precision ``r`` and inputs within one unit of 1 may land on
the other side of 1, which adds ``2^-r``. :func:`clip_weights`' values are within ``|v c| eps + 3.5 u`` of
``v c`` for the returned ``c``.

Security
--------
Semi-honest, up to n - 1 colluding computing parties, as the normalisation and products it is built from;
nothing is opened but uniformly masked values.

References
----------
Abadi et al., "Deep learning with differential privacy", CCS 2016 (per-example clipping); paper 002
(``/work/shared/papers/002_c49a9709e0e6dfb2.txt``), Eqs. 27-30 (clipping the whole per-example gradient
under MPC); Catrina and Saxena, FC 2010 (normalised Newton-Raphson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpdp.crypto.approximations import (
    INV_SQRT_POLYNOMIAL_BITS,
    INV_SQRT_POLYNOMIALS,
    inv_sqrt_polynomial_error,
    power_errors,
)
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.protocols.mpc.functions import _normalise, _powers, mul_known
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = ["ClipFactorParams", "clip_factor", "clip_weights"]


@dataclass(frozen=True)
class ClipFactorParams:
    """``high_exp`` (H): the input's public bound must be at most ``2^H``; ``degree`` of the polynomial."""

    high_exp: int = 30
    degree: int = 8

    def __post_init__(self) -> None:
        if isinstance(self.high_exp, bool) or not isinstance(self.high_exp, int) or not 1 <= self.high_exp <= 58:
            raise ParameterError(explain("high_exp", self.high_exp, "an int in [1, 58]", "pass e.g. high_exp=30"))
        if isinstance(self.degree, bool) or self.degree not in INV_SQRT_POLYNOMIALS:
            raise ParameterError(explain("degree", self.degree, f"one of {sorted(INV_SQRT_POLYNOMIALS)}",
                                         "pass e.g. degree=8"))

    @classmethod
    def for_bound(cls, bound: float, *, degree: int = 8) -> ClipFactorParams:
        """The smallest ``H`` covering inputs up to ``bound``."""
        if not (math.isfinite(bound) and bound >= 0):
            raise ParameterError(explain("bound", bound, "a finite number >= 0", "pass the input's public bound"))
        return cls(high_exp=max(1, math.ceil(math.log2(max(bound, 2.0)))), degree=degree)

    def exact_buckets(self, fmt: FixedPointFormat) -> bool:
        """Whether the normalisation compares the raw integers themselves (``x 2^f`` fits a signed word)."""
        return self.high_exp + fmt.frac_bits <= 61

    def reduced_bits(self, fmt: FixedPointFormat) -> int:
        """Fractional bits the normalisation compares at: ``f`` with :meth:`exact_buckets`, else what a 64-bit
        word leaves (``min(f, 59 - H)``)."""
        return fmt.frac_bits if self.exact_buckets(fmt) else min(fmt.frac_bits, 59 - self.high_exp)

    def relative_error_bound(self, fmt: FixedPointFormat) -> float:
        u = fmt.resolution
        edge = 0.0 if self.exact_buckets(fmt) else 2.0 ** -self.reduced_bits(fmt)
        margin = 4 * (u + edge)  # z in [1/2 - u - edge, 1 + u + edge] moves t = 4z - 3 by 4 times that
        c = np.abs(np.array(INV_SQRT_POLYNOMIALS[self.degree], dtype=np.float64)) / 2.0**INV_SQRT_POLYNOMIAL_BITS
        powers = power_errors(self.degree, 1.0 + margin, u)
        rounding = float(np.sum(c[1:] * np.array(powers))) * u / 0.99  # Q >= 1 - error on the interval
        return float(inv_sqrt_polynomial_error(self.degree, margin) + u + rounding
                     + 2 * u * 2.0 ** (self.high_exp / 2) + edge)


def clip_factor(x: SharedFixedPoint, params: ClipFactorParams | None = None) -> SharedFixedPoint:
    """``1 / sqrt(max(x, 1))`` elementwise, for shared ``x`` with public bound at most ``2^params.high_exp``."""
    return _clip(x, None, params)[0]


def clip_weights(x: SharedFixedPoint, values: SharedFixedPoint,
                 params: ClipFactorParams | None = None) -> tuple[SharedFixedPoint, SharedFixedPoint]:
    """``(c, c v)`` with ``c = 1 / sqrt(max(x, 1))`` for ``x`` of shape ``(B,)`` and ``values`` ``(B, K)``.

    Same rounds as :func:`clip_factor` alone; ``c v`` is within ``|c v| eps + 3.5 u`` of the returned ``c``
    times ``v`` (``eps`` the factor's :meth:`ClipFactorParams.relative_error_bound`).
    """
    c, w = _clip(x, values, params)
    if w is None:  # pragma: no cover - _clip returns the weights when values are given
        raise ParameterError("no weights")
    return c, w


def _clip(x: SharedFixedPoint, values: SharedFixedPoint | None,
          params: ClipFactorParams | None) -> tuple[SharedFixedPoint, SharedFixedPoint | None]:
    p = params or ClipFactorParams.for_bound(x.bound)
    if not isinstance(p, ClipFactorParams):
        raise ParameterError(explain("params", p, "a ClipFactorParams", "pass ClipFactorParams(...)"))
    x = x.rescale()
    if x.bound > 2.0**p.high_exp:
        raise DomainError(explain("x.bound", x.bound, f"<= 2^{p.high_exp}",
                                  "declare a tighter bound or use ClipFactorParams.for_bound(x.bound)"))
    if p.reduced_bits(x.fmt) < 1:
        raise DomainError(explain("high_exp", p.high_exp, f"room for fractional bits in a 64-bit word with {x.fmt}",
                                  "lower the input bound"))
    if values is not None and (x.ndim != 1 or values.ndim != 2 or values.shape[0] != x.shape[0]):
        raise ParameterError(explain("shapes", (x.shape, values.shape), "x of shape (B,) and values (B, K)",
                                     "pass one squared norm per row of values"))
    fmt = x.fmt
    u = fmt.resolution
    scale, inside, root_scale = _normalise(x, 0, p.high_exp, False,
                                           [lambda k: 2.0**-k, lambda k: 1.0, lambda k: 2.0 ** (-k / 2)])
    outside = 1 - inside.assume_bound(1.0)
    root = (root_scale + outside).assume_bound(1.0)
    # x 2^-k < 1 for the bucket's k (0 outside the domain): one product, with v root alongside
    if values is None:
        scaled = mul_known(x, scale, 1.0)
    else:
        B, K = values.shape
        v = values.rescale()
        left = concatenate([x, v.flatten()])
        right = concatenate([scale, root.reshape(B, 1).broadcast_to((B, K)).flatten()])
        scaled = mul_known(left, right, max(1.0, v.bound))
    z = (scaled[: x.shape[0]] if values is not None else scaled) + outside
    t = (z * 4 - 3.0).assume_bound(1.0 + 4 * u + 4 * 2.0**-p.reduced_bits(fmt))  # exact: integer operations
    q = _polynomial(t, INV_SQRT_POLYNOMIALS[p.degree], INV_SQRT_POLYNOMIAL_BITS)
    if values is None:
        return (root * q).assume_bound(1.0 + 1e-6), None
    n = x.shape[0]
    out = concatenate([root, scaled[n:]]) * concatenate([q, q.reshape(n, 1).broadcast_to((n, K)).flatten()])
    c = out[:n].assume_bound(1.0 + 1e-6)
    return c, out[n:].reshape(n, K).assume_bound(v.bound * (1.0 + 1e-6) + 4 * u)


def _polynomial(t: SharedFixedPoint, coefficients: tuple[int, ...], bits: int) -> SharedFixedPoint:
    """``sum_j C_j t^j / 2^bits`` for integer ``C_j``: exact on the raw shares, left at scale ``f + bits``
    (no truncation; the product that follows absorbs it)."""
    powers = _powers(t, len(coefficients) - 1)
    f = t.fmt.frac_bits
    terms = stack([p.rescale() for p in powers])
    ring = t.ring
    ints = np.array(coefficients[1:], dtype=np.int64).reshape((-1,) + (1,) * t.ndim)
    raw = ring.sum(ring.mul_int(terms.share, ints), 0)
    bound = float(sum(abs(cj) * t.bound**j for j, cj in enumerate(coefficients))) * 2.0**-bits
    poly = terms[0].derive(raw, scale=f + bits, bound=bound)
    return poly + coefficients[0] * 2.0**-bits  # the constant term, exact at scale f + bits
