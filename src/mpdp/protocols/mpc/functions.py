"""High-precision functions on shared fixed-point values: exp, reciprocal, division, square roots.

Each function takes a parameter object from :mod:`mpdp.crypto.approximations` stating its domain, its
approximation and its relative error bound for the input's format (``params.relative_error_bound(fmt)``
and friends). The defaults are tuned for :data:`~mpdp.crypto.fixed_point.HIGH_PRECISION` (Z_2^128, f = 48)
and meet a relative error of 1e-6 with a wide margin: exp on ``[-16, 16]`` (bound ~8.5e-8), reciprocal and
division on ``[2^-10, 2^16]`` (~4e-10), square roots on the same domain (~1e-11). Other formats work with
the bounds the parameter objects compute for them (e.g. f = 20 gives ~1e-6 absolute, not relative).

Domains
-------
A public bound (``x.bound``) inside the domain makes the domain check free. Otherwise, with
``params.strict`` (the default), the parties compare every input with the domain's ends securely and
learn one bit, whether *some* input lies outside, and then raise :class:`~mpdp.errors.DomainError`; with
``strict=False`` the caller promises the domain and out-of-domain inputs give meaningless results.

Security
--------
Semi-honest, up to n - 1 colluding computing parties. Beyond the optional domain bit, nothing is opened
except uniformly masked values inside the sub-protocols (products, truncations, comparisons).

References
----------
Paper 002 (Tajeddine et al., arXiv 2020; :data:`mpdp.learning.papers.PAPERS`), section 4.5 and Algorithm 3
(Newton-Raphson division with a user-set iteration count, exp from the same building blocks); Catrina and Saxena,
"Secure computation with fixed-point numbers", FC 2010 (normalised Newton-Raphson reciprocal); Knott et
al., "CrypTen", NeurIPS 2021 (exp by repeated squaring).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from mpdp.crypto.approximations import WORD_TAIL, ExpParams, InvSqrtParams, ReciprocalParams
from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.crypto.ring import Z2_128, Ring, RingArray, Z2k
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.protocols.mpc.arithmetic import (
    convert,
    finish_product,
    mul_constants,
    mul_split,
    public_ints,
    truncated_masked_product,
    wrap_shift_many,
)
from mpdp.protocols.mpc.bits import at_least
from mpdp.protocols.mpc.comparison import ltz
from mpdp.protocols.mpc.tensor import SharedFixedPoint, stack

__all__ = ["div", "exp", "inv_sqrt", "mul_any_bound", "normalise_by_buckets", "power_ladder", "reciprocal", "sigmoid",
           "sqrt"]

_WORD = Z2k(64)
_LOW = (1 << 64) - 1
_WORD_FORMAT = FAST


def mul_any_bound(x: SharedFixedPoint, y: SharedFixedPoint) -> SharedFixedPoint:
    """A product that takes the split multiplication when the ordinary one cannot hold the operands' bounds."""
    if x.fmt.raw_bound_ok(x.bound * y.bound, x.scale + y.scale):
        return x * y
    return mul_split(x, y)


def mul_known(x: SharedFixedPoint, y: SharedFixedPoint, bound: float, *,
              fmt: FixedPointFormat | None = None) -> SharedFixedPoint:
    """``x * y`` (broadcasting) whose result the caller *knows* to lie within ``bound``, though the factors'
    own bounds would not let the ordinary product hold it: e.g. ``q 2^-k`` for ``q <= s < 2^k``. The ring
    product is exact whatever the factors; only the truncation needs the result within the capacity, so
    it is one masked product (two rounds) instead of a split one (three). Error below ``2^-f``.

    With ``fmt`` (a ring no wider than ``x``'s, fewer fractional bits than the product's scale) the truncation
    delivers the result in ``fmt`` at its ``f``: the switch to a cheaper format costs no extra round, and the
    error is below ``2^-fmt.frac_bits``."""
    x._check_peer(y)
    scale = x.scale + y.scale
    out = fmt or x.fmt
    if not x.fmt.raw_bound_ok(bound, scale) or scale <= out.frac_bits or not out.raw_bound_ok(bound, out.frac_bits):
        raise ParameterError(explain("bound", bound, f"a product bound that {x.fmt} holds at scale 2^{scale}"
                                     + ("" if fmt is None else f" and {fmt} at its f"),
                                     "use mul_any_bound() (the split product) instead"))
    if out.ring_bits > x.fmt.ring_bits:
        raise ParameterError(explain("fmt", str(out), f"a ring no wider than {x.fmt}'s", "convert() to widen"))
    return truncated_masked_product(x, y, "mul", scale, bound, out if fmt is not None else None)


def _refuse_if_any(flags: SharedFixedPoint, what: str, domain: str, fix: str) -> None:
    """Open one bit: whether any of the shared bits ``flags`` is set; raise DomainError if so."""
    count = flags.sum()
    if float(ltz(-count).reveal()) > 0.5:
        raise DomainError(explain(what, "some inputs (values stay secret)", domain, fix))


def power_ladder(y: SharedFixedPoint, degree: int) -> list[SharedFixedPoint]:
    """``[y, y^2, ..., y^degree]`` in ceil(log2(degree)) rounds of batched products (``|y| <= 1``)."""
    powers = {1: y.rescale()}
    while max(powers) < degree:
        top = max(powers)
        new = list(range(top + 1, min(2 * top, degree) + 1))
        left = stack([powers[top] for _ in new])
        right = stack([powers[e - top] for e in new])
        prods = left * right
        for i, e in enumerate(new):
            powers[e] = prods[i].assume_bound(y.bound**e + 2 * y.fmt.resolution)
    return [powers[e] for e in range(1, degree + 1)]


def _linear(terms: list[SharedFixedPoint], coefficients: list[float], constant: float) -> SharedFixedPoint:
    """``constant + sum_k c_k t_k`` for public reals: exact integer products summed, then one truncation."""
    stacked = stack(terms)
    c = np.asarray(coefficients, dtype=np.float64).reshape((len(terms),) + (1,) * (stacked.ndim - 1))
    ints, extra = public_ints(c, stacked, len(terms))
    ring = stacked.ring
    raw = ring.sum(ring.mul_int(stacked.share, ints), 0)
    bound = stacked.bound * float(np.sum(np.abs(c)))
    combined = finish_product(stacked[0], raw, stacked.scale + extra, bound, stacked.session.new_id())
    return combined + constant


def _linear_into(terms: list[SharedFixedPoint], coefficients: list[float], fmt: FixedPointFormat,
                 scale: int) -> SharedFixedPoint:
    """``sum_k c_k t_k`` like :func:`_linear`, delivered in ``fmt`` at ``scale`` (or lower): the exact integer
    combination is moved into ``fmt``'s ring and truncated there in one wrap-corrected shift (one round)."""
    stacked = stack(terms)
    c = np.asarray(coefficients, dtype=np.float64).reshape((len(terms),) + (1,) * (stacked.ndim - 1))
    ints, extra = public_ints(c, stacked, len(terms))
    ring, session = stacked.ring, stacked.session
    raw = ring.sum(ring.mul_int(stacked.share, ints), 0)  # |raw| < 2^(l-2): public_ints keeps the headroom
    have = stacked.scale + extra
    drop = max(0, have - scale)
    sid = session.new_id()
    (share,) = wrap_shift_many(session, ring, fmt.ring, [raw], [drop], sharing_id=sid)
    bound = stacked.bound * float(np.sum(np.abs(c))) + 2.0 ** -(have - drop)
    return SharedFixedPoint(session, share, fmt=fmt, scale=have - drop, bound=bound, sharing_id=sid)


def _exp_series(y: SharedFixedPoint, p: ExpParams) -> SharedFixedPoint:
    """``sum_(k<=d) y^k / k!`` for exact ``|y| <= p.radius``; see :class:`ExpParams` for ``word_tail``."""
    if not p.uses_word_tail(y.fmt):
        powers = power_ladder(y, p.degree)
        return _linear(powers, [1.0 / math.factorial(k) for k in range(1, p.degree + 1)], 1.0)
    # 1 + y + y^2/2 in the wide ring (y exact at scale f + m), the rest from Z_2^64 powers of y rounded to 2^-30
    half_square = y.square().times_pow2(-1)
    word_powers = power_ladder(convert(y, WORD_TAIL), p.degree)[2:]
    tail = _linear_into(word_powers, [1.0 / math.factorial(k) for k in range(3, p.degree + 1)], y.fmt, y.scale)
    return 1.0 + y + half_square + tail


def exp(x: SharedFixedPoint, params: ExpParams | None = None) -> SharedFixedPoint:
    """``exp(x)`` on ``[params.low, params.high]`` (see :class:`~mpdp.crypto.approximations.ExpParams`)."""
    p = params or ExpParams()
    if not isinstance(p, ExpParams):
        raise ParameterError(explain("params", p, "an ExpParams", "pass ExpParams(...)"))
    x = x.rescale()
    if x.bound > min(-p.low, p.high):
        if not p.strict:
            raise DomainError(explain("x.bound", x.bound, f"<= {min(-p.low, p.high):g} (the domain of exp)",
                                      "clip first, declare a tighter bound, or use ExpParams(strict=True)"))
        outside = ltz(stack([x - p.low, -(x - p.high)]))
        _refuse_if_any(outside, "exp input", f"values in [{p.low:g}, {p.high:g}]",
                       "clip the input (comparison.clip) or widen ExpParams(low, high)")
        x = x.assume_bound(p.span)
    m = p.squarings
    y = x.times_pow2(-m)  # exact: only the scale changes
    value = _exp_series(y, p).assume_bound(math.exp(p.radius) * (1 + 1e-6) + 4 * x.fmt.resolution)
    for k in range(1, m + 1):
        value = value.square().assume_bound(math.exp(p.high * 2.0 ** (k - m)) * (1 + 1e-6) + 4 * x.fmt.resolution)
    return value


def sigmoid(x: SharedFixedPoint, params: ExpParams | None = None) -> SharedFixedPoint:
    """``1 / (1 + exp(-x))`` on ``params``' domain (default ``[-16, 16]``): :func:`exp` of ``-x``, then
    :func:`reciprocal` of ``1 + exp(-x)`` on ``[1, 2^(ceil(high log2 e) + 1)]``. Relative error: exp's bound plus
    the reciprocal's (``1 + exp(-x)`` carries exp's relative error at most)."""
    p = params or ExpParams()
    if not isinstance(p, ExpParams):
        raise ParameterError(explain("params", p, "an ExpParams", "pass ExpParams(...)"))
    denominator = (exp(-x, p) + 1.0).assume_bound(math.exp(-p.low) * (1 + 1e-6) + 1.0)
    top = math.ceil(-p.low * math.log2(math.e)) + 1
    return reciprocal(denominator, ReciprocalParams(low_exp=0, high_exp=top, strict=False))


def normalise_by_buckets(x: SharedFixedPoint, low_exp: int, high_exp: int, strict: bool,
               scales: list[Any]) -> list[SharedFixedPoint]:
    """Shared ``g(k)`` for the bucket ``x in [2^(k-1), 2^k)``, ``k = low_exp + 1 .. high_exp + 1``, for each
    public function ``g`` in ``scales`` (0 for inputs outside ``[2^low_exp, 2^(high_exp + 1))``).

    The bucket bits come from comparisons with the public thresholds ``2^j``, ``j = low_exp .. high_exp + 1``
    (the top one only if ``x.bound`` reaches it), all against one opened mask (:func:`.bits.at_least`,
    7 rounds): ``b_j = [x >= 2^j]`` in the input's ring, ``h_k = b_(k-1) - b_k``. Then
    ``g = sum_k h_k round(g(k) 2^f) 2^-f`` is linear in the bits: no product, no rounding beyond the
    constants'. When the raw integers ``x 2^f`` and the thresholds fit a signed 64-bit word (``x.bound``
    below about ``2^(62 - f)``), the comparisons run on the shares' low words, exactly (reduction mod 2^64
    is local); otherwise ``x`` is first brought to Z_2^64 at reduced precision (one more round; the rounding
    can only move values within one unit of a power of two into the neighbouring bucket, which leaves ``z``
    within ``[1/2 - e, 1 + e]`` where the iterations converge just as well). With ``strict``,
    ``1 - sum_k h_k`` flags inputs below ``2^low_exp`` (non-positive ones included) and inputs at or above
    ``2^(high_exp + 1)``; the parties learn whether any is flagged.
    """
    fmt = x.fmt
    session = x.session
    f = fmt.frac_bits
    top_exp = high_exp + 1 if x.bound >= 2.0 ** (high_exp + 1) else high_exp  # [x >= 2^(H+1)] = 0 otherwise
    exps = np.arange(low_exp, top_exp + 1)
    reach = max(x.bound + fmt.resolution, 2.0**top_exp)
    fast = x.scale == f and reach * 2.0**f < 2.0**62
    reduced = f if fast else min(f, 61 - (max(math.ceil(math.log2(reach)), top_exp) + 1))
    if reduced + low_exp < 0:
        raise DomainError(explain("domain", f"[2^{low_exp}, 2^{high_exp}] with |x| <= {x.bound:g}",
                                  f"2^{low_exp} representable ({fmt} has f = {f})",
                                  "use a format with more fractional bits, a narrower domain or a tighter bound"))
    if fast:
        word = x.share if fmt.ring_bits == 64 else x.share[0]  # x mod 2^64: exact, local
    else:  # the raw integers at 2^reduced, in Z_2^64 (no product follows, so any scale <= 61 - top works)
        (word,) = wrap_shift_many(session, fmt.ring, _WORD, [x.share], [x.scale - reduced],
                                  sharing_id=session.new_id())
    ring = fmt.ring
    b = at_least(session, word, (np.int64(1) << (exps + reduced).astype(np.int64)), ring)  # (thresholds, ...)
    # the one-hot h_k = b_(k-1) - b_k, k = low_exp + 1 .. high_exp + 1 (b_(H+1) = 0 when not computed), enter
    # only linear combinations, telescoped onto the bits: sum_k h_k c_k = sum_j b_j (c_j - c_(j-1)) (the
    # constants indexed by threshold j, c_(-1) = 0, and c_(n-1) = 0 when b_(H+1) was compared): no h formed
    n = len(exps)
    if strict:
        count = ring.index(b, 0)
        if top_exp > high_exp:
            count = ring.sub(count, ring.index(b, n - 1))
        inside = SharedFixedPoint(session, count, fmt=fmt, scale=0, bound=1.0, sharing_id=session.new_id())
        _refuse_if_any(1 - inside, "input", f"values in [2^{low_exp}, 2^{high_exp}]",
                       "clip or rescale the input, or widen the parameters' domain")
    out = []
    scale = 2.0**f
    for g in scales:
        c = [round(g(k) * scale) for k in range(low_exp + 1, high_exp + 2)]
        top = float(max(abs(v) for v in c))
        c += [0] * (n - len(c))
        steps = tuple(v - w for v, w in zip(c, [0, *c[:-1]], strict=True))
        out.append(SharedFixedPoint(session, combine_rows(ring, b, steps), fmt=fmt, scale=f, bound=top * 2.0**-f,
                                    sharing_id=session.new_id()))
    return out


def combine_rows(ring: Ring, rows: RingArray, coefficients: tuple[int, ...]) -> RingArray:
    """``sum_j k_j rows[j]`` in ``ring`` for public integers ``k_j`` (``rows`` of shape ``(len(k), *shape)``).

    In Z_2^128 with every ``k_j`` zero or plus or minus a power of two (the telescoped bucket constants of
    :func:`normalise_by_buckets` for ``g(k) = 2^-k``), the products are shifts: ``-2^e x = (NOT x) 2^e + 2^e`` (two's
    complement) and ``(NOT x) 2^e = (x 2^e) XOR ((2^128 - 1) 2^e)``, so every row is shifted by its ``e`` (each
    word in one numpy call with per-row amounts), the rows with negative constants are XORed with their
    shifted ones, and the public ``sum 2^e`` over those rows is added once: a handful of passes instead of the
    two-word products of general constants. Otherwise one cached product
    (:func:`~mpdp.protocols.mpc.arithmetic.mul_constants`) and one sum. Exact (the same residues).
    """
    wide = isinstance(ring, Z2_128)
    plan = _shift_plan(coefficients) if wide else None
    if plan is None:
        shape = (len(coefficients),) + (1,) * (rows.ndim - (2 if wide else 1))
        return ring.sum(mul_constants(ring, rows, coefficients, shape), 0)
    left, right, spill, flip, offset = plan
    extra = (1,) * (rows.ndim - 2)
    lo, hi = rows[0], rows[1]
    shifted = np.empty(rows.shape, dtype=np.uint64)
    np.left_shift(lo, left.reshape(left.shape + extra), out=shifted[0])
    high = np.left_shift(hi, left.reshape(left.shape + extra), out=shifted[1])
    high |= lo >> right.reshape(right.shape + extra)  # the low word's bits moving up (shifts of 64 and more: none)
    high |= lo << spill.reshape(spill.shape + extra)  # shifts of 64 and more: the low word's bits only
    if flip is not None:
        shifted ^= flip.reshape(flip.shape + extra)
    total = ring.sum(shifted, 0)
    return ring.add_int(total, offset) if offset else total


@functools.lru_cache(maxsize=64)
def _shift_plan(coefficients: tuple[int, ...]) -> tuple[Any, Any, Any, Any, int] | None:
    """For :func:`combine_rows` in Z_2^128: the per-row shifts ``e`` of both words, of the low word's bits into
    the high word (``64 - e``) and beyond 64 (``e - 64``) as ``(rows,)`` uint64 arrays (numpy shifts by 64 or
    more give 0, so the wrapped amounts vanish), the shifted all-ones words of the negative rows as ``(2, rows)``
    (None without negative constants) and the public offset. None unless every constant is 0 or a signed
    power of two below 2^128 (read-only arrays: shared by the cache)."""
    exps = []
    for k in coefficients:
        m = abs(k)
        if m and (m & (m - 1) or m.bit_length() > 128):
            return None
        exps.append(m.bit_length() - 1 if m else 128)  # a shift of 128 clears the row
    e = np.array(exps, dtype=np.uint64)
    with np.errstate(over="ignore"):
        right = np.uint64(64) - e  # wraps for e > 64 (shift amounts beyond 63 give 0)
        spill = e - np.uint64(64)  # wraps for e < 64
    ones = [((1 << 128) - (1 << x)) if k < 0 else 0 for k, x in zip(coefficients, exps, strict=True)]
    flip = None
    if any(ones):
        flip = np.array([[v & _LOW for v in ones], [v >> 64 for v in ones]], dtype=np.uint64)
        flip.flags.writeable = False
    offset = sum(-k for k in coefficients if k < 0) % (1 << 128)
    for a in (e, right, spill):
        a.flags.writeable = False
    return e, right, spill, flip, offset


def _in_domain(x: SharedFixedPoint, high_exp: int, strict: bool, name: str) -> SharedFixedPoint:
    if x.bound > 2.0**high_exp and not strict:
        raise DomainError(explain(f"{name} input bound", x.bound, f"<= 2^{high_exp}",
                                  "clip first, declare a tighter bound, or use strict=True"))
    return x.rescale()


def reciprocal(x: SharedFixedPoint, params: ReciprocalParams | None = None) -> SharedFixedPoint:
    """``1/x`` on ``[2^low_exp, 2^high_exp]`` (see :class:`~mpdp.crypto.approximations.ReciprocalParams`)."""
    p = params or ReciprocalParams()
    if not isinstance(p, ReciprocalParams):
        raise ParameterError(explain("params", p, "a ReciprocalParams", "pass ReciprocalParams(...)"))
    x = _in_domain(x, p.high_exp, p.strict, "reciprocal")
    (scale,) = normalise_by_buckets(x, p.low_exp, p.high_exp, p.strict, [lambda k: 2.0**-k])
    z = mul_any_bound(x.assume_bound(min(x.bound, p.high)), scale).assume_bound(1.0)
    a, b, bits = p.INITIAL
    bz = (z * b).times_pow2(-bits)  # exact: integer product, then the scale
    y = (a * 2.0**-bits - bz).assume_bound(2.0)  # y0 = a - b z in [0.94, 1.71], exact
    if p.iterations:
        residual = p.INITIAL_RESIDUAL + 4 * x.fmt.resolution
        e = ((z * a).times_pow2(-bits).__rsub__(1.0) + z * bz).assume_bound(residual)  # 1 - a z + b z^2
        for i in range(p.iterations):
            if i == p.iterations - 1:
                y = (y * (1.0 + e)).assume_bound(2.0 + 1e-6)
            else:  # y (1 + e) and e^2 in one round
                both = stack([y, e]) * stack([1.0 + e, e])
                residual = residual * residual + 2 * x.fmt.resolution
                y, e = both[0].assume_bound(2.0 + 1e-6), both[1].assume_bound(residual)
    return mul_any_bound(y, scale).assume_bound(p.low**-1 * (1 + 1e-6))


def div(a: SharedFixedPoint, b: SharedFixedPoint, params: ReciprocalParams | None = None) -> SharedFixedPoint:
    """``a / b`` for ``b`` in the reciprocal's domain: ``a * (1/b)``.

    Accuracy: relative error at most ``reciprocal`` 's bound plus ``2^-f / |a / b|`` (the rounding of the
    final product relative to the quotient).
    """
    return mul_any_bound(a.rescale(), reciprocal(b, params))


def inv_sqrt(x: SharedFixedPoint, params: InvSqrtParams | None = None) -> SharedFixedPoint:
    """``1/sqrt(x)`` on ``[2^low_exp, 2^high_exp]`` (see :class:`~mpdp.crypto.approximations.InvSqrtParams`)."""
    p = params or InvSqrtParams()
    if not isinstance(p, InvSqrtParams):
        raise ParameterError(explain("params", p, "an InvSqrtParams", "pass InvSqrtParams(...)"))
    x = _in_domain(x, p.high_exp, p.strict, "inv_sqrt")
    scale, root_scale = normalise_by_buckets(x, p.low_exp, p.high_exp, p.strict,
                                   [lambda k: 2.0**-k, lambda k: 2.0 ** (-k / 2)])
    z = mul_any_bound(x.assume_bound(min(x.bound, p.high)), scale).assume_bound(1.0)
    a, b = p.INITIAL
    y = (z * (-b) + a).assume_bound(1.5)
    for _ in range(p.iterations):
        t = (z * y.square()).assume_bound(1.1)
        y = (y * (3.0 - t).times_pow2(-1)).assume_bound(1.5)
    return mul_any_bound(y, root_scale).assume_bound(p.low**-0.5 * (1 + 1e-6))


def sqrt(x: SharedFixedPoint, params: InvSqrtParams | None = None) -> SharedFixedPoint:
    """``sqrt(x) = x / sqrt(x)`` on ``[2^low_exp, 2^high_exp]``."""
    p = params or InvSqrtParams()
    x = x.rescale()
    root = mul_any_bound(x.assume_bound(min(x.bound, p.high)) if x.bound > p.high and p.strict else x, inv_sqrt(x, p))
    return root.assume_bound(math.sqrt(min(x.bound, p.high)) * (1 + 1e-6) + x.fmt.resolution)
