"""Secure comparison and what it enables: sign, ReLU, select, maximum, clip, clip to an L2 norm.

The primitive is ``ltz(x) = [x < 0]``, the top bit of ``x``'s two's complement, computed exactly:

1. With a comparison mask (``r`` shared additively *and* bitwise), open ``c = x + r`` (uniform, one round).
2. Over the integers ``x + r = c + w 2^l``; the top bit of ``x`` is
   ``msb(x) = c_msb XOR r_msb XOR [c_low < r_low]`` where ``low`` drops the top bit: the carry into the top
   position of ``x_low + r_low`` happens exactly when the sum's low part ``c_low`` is below ``r_low``.
3. ``[c_low < r_low]`` for public ``c`` and XOR-shared bits of ``r`` is a carry-lookahead circuit on
   bit-packed 64-bit words: per bit ``G = r AND NOT c`` (r wins here) and ``P = NOT (r XOR c)`` (tie),
   combined pairwise from the top, ``(G, P) = (G_hi XOR (P_hi AND G_lo), P_hi AND P_lo)`` (the two terms of
   the OR are exclusive, so OR = XOR). Six levels inside a word (one round each, two word-ANDs per element
   with Beaver-style bit triples), plus one level across the two words of Z_2^128.
4. The XOR-shared result bit becomes an additive share with a daBit (one round).

The result is a shared *bit* at scale 2^0 (a :class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` with
``scale = 0``), so selecting with it (``bit * value``) is exact and needs no truncation.

Security
--------
Semi-honest, up to n - 1 colluding computing parties; every opened value (``c``, the AND masks, the daBit
mask) is uniform. References: the bit-decomposition-free comparison of Escudero et al. (CRYPTO 2020,
edaBits), with a Kogge-Stone style prefix circuit; daBits of Rotaru and Wood (INDOCRYPT 2019).

Accuracy
--------
Exact for every value in the ring (no domain restriction beyond the format's capacity). ``sign(0) = +1``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.crypto.beaver import and_combine, b2a_combine
from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.ring import RingArray
from mpdp.errors import ParameterError, explain
from mpdp.protocols.mpc.session import MPCSession
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = [
    "clip",
    "clip_norm",
    "greater",
    "less",
    "less_than_public",
    "ltz",
    "max_along",
    "maximum",
    "minimum",
    "relu",
    "sign",
    "where",
]

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _and_many(session: MPCSession, xs: RingArray, ys: RingArray, sharing_id: bytes) -> RingArray:
    """XOR shares of ``xs & ys`` (word arrays of equal shape), one round."""
    t = session.provider.and_triple(tuple(xs.shape))
    d, e = session.open_xor([xs ^ t.a, ys ^ t.b], sharing_id=sharing_id, label="mpc.and")
    return and_combine(d, e, t.a, t.b, t.c, leader=session.leader)


def less_than_public(session: MPCSession, c_low: RingArray, r_low: RingArray) -> RingArray:
    """XOR shares (0/1 per element) of ``[c_low < r_low]`` for public words ``c_low`` and XOR-shared ``r_low``.

    Both are ``(words, *shape)`` uint64 arrays, word 0 least significant; ``words`` is 1 or 2. The carry
    circuit of step 3 of the module docstring: 6 rounds (7 for two words), consuming the AND triples
    listed by :func:`_circuit_specs` (prefetch them to fetch all in one dealer exchange).
    """
    # G: r has a 1 where c has a 0; P: equal bits. XOR with the public c is done by the leader only.
    g = r_low & ~c_low
    p = r_low ^ c_low ^ _ALL if session.leader else r_low.copy()
    words = g.shape[0]
    shift = 1
    while shift < 64:
        hi_p, hi_g = p >> np.uint64(shift), g >> np.uint64(shift)
        last = shift == 32 and words == 1
        if last:  # the final P is not needed
            g = hi_g ^ _and_many(session, hi_p, g, session.new_id())
        else:
            both = _and_many(session, np.stack([hi_p, hi_p]), np.stack([g, p]), session.new_id())
            g, p = hi_g ^ both[0], both[1]
        shift *= 2
    g &= np.uint64(1)
    if words == 2:  # combine the two words: G = G_hi XOR (P_hi AND G_lo)
        p &= np.uint64(1)
        combined: RingArray = g[1] ^ _and_many(session, p[1], g[0], session.new_id())
        return combined
    low: RingArray = g[0]
    return low


_less_than_public = less_than_public  # the former private name, kept until every branch has merged the new one


def _circuit_specs(words: int, shape: tuple[int, ...]) -> list[CorrelationSpec]:
    """The AND triples :func:`less_than_public` consumes, in order."""
    specs = [CorrelationSpec("and", 64, (2, words, *shape)) for _ in range(5)]
    specs.append(CorrelationSpec("and", 64, (words, *shape)) if words == 1 else
                 CorrelationSpec("and", 64, (2, words, *shape)))
    if words == 2:
        specs.append(CorrelationSpec("and", 64, shape))
    return specs


def ltz(x: SharedFixedPoint) -> SharedFixedPoint:
    """``[x < 0]`` as a shared bit (scale 0), exactly; 8 rounds in Z_2^64, 9 in Z_2^128."""
    session, ring = x.session, x.ring
    shape = x.shape
    bits = ring.bits
    provider = session.provider
    words = ring.words
    provider.prefetch([CorrelationSpec("compare", bits, shape), *_circuit_specs(words, shape),
                       CorrelationSpec("dabit", bits, shape)])
    mask = provider.compare_mask(ring, shape)
    sid = session.new_id()
    (c,) = session.open(ring, [ring.add(x.share, mask.r)], sharing_id=sid, label="mpc.compare")
    top_word, top_lane = divmod(bits - 1, 64)
    lane = np.uint64(top_lane)
    r_msb = (mask.bits[top_word] >> lane) & np.uint64(1)
    low_mask = np.full(words, _ALL, dtype=np.uint64)
    low_mask[top_word] = np.uint64((1 << top_lane) - 1)
    low_mask = low_mask.reshape((words,) + (1,) * len(shape))
    r_low = mask.bits & low_mask
    c_low = ring.low_words(c)
    lt = less_than_public(session, c_low, r_low)
    msb = r_msb ^ lt
    if session.leader:
        msb ^= ring.msb(c)
    # XOR-shared bit -> additive share with a daBit: open v = b XOR s, b = v + (1 - 2v) s.
    dabit = provider.dabit(ring, shape)
    v = session.open_bits(msb ^ dabit.bit, sharing_id=session.new_id(), label="mpc.b2a")
    share = b2a_combine(ring, v, dabit.s, leader=session.leader)
    return SharedFixedPoint(session, share, fmt=x.fmt, scale=0, bound=1.0, sharing_id=session.new_id())


def less(x: SharedFixedPoint, y: Any) -> SharedFixedPoint:
    """``[x < y]`` (shared bit)."""
    return ltz(x - y)


def greater(x: SharedFixedPoint, y: Any) -> SharedFixedPoint:
    """``[x > y]`` (shared bit)."""
    return ltz(-(x - y))


def sign(x: SharedFixedPoint) -> SharedFixedPoint:
    """``+1`` for ``x >= 0``, ``-1`` for ``x < 0`` (scale 0)."""
    bit: SharedFixedPoint = ltz(x) * 2
    return bit.__rsub__(1)


def where(cond: SharedFixedPoint, a: Any, b: Any) -> SharedFixedPoint:
    """``a`` where the shared bit ``cond`` is 1, else ``b``: ``b + cond (a - b)``, exact (one product)."""
    if not isinstance(cond, SharedFixedPoint) or cond.scale != 0 or cond.bound > 1.0:
        raise ParameterError(explain("cond", repr(cond), "a shared bit (scale 0), e.g. from ltz() or less()",
                                     "compare first, then select"))
    a = a if isinstance(a, SharedFixedPoint) else np.asarray(a, dtype=float)
    b = b if isinstance(b, SharedFixedPoint) else np.asarray(b, dtype=float)
    gap: SharedFixedPoint = a - b if isinstance(a, SharedFixedPoint) else b.__rsub__(a) \
        if isinstance(b, SharedFixedPoint) else cond.session.public(a - b, fmt=cond.fmt)
    chosen: SharedFixedPoint = cond * gap + b
    return chosen.assume_bound(max(_bound(a), _bound(b)))


def _bound(v: Any) -> float:
    if isinstance(v, SharedFixedPoint):
        return v.bound
    arr = np.asarray(v, dtype=float)
    return float(np.max(np.abs(arr))) if arr.size else 0.0


def relu(x: SharedFixedPoint) -> SharedFixedPoint:
    """``max(x, 0)``, exact."""
    keep = ltz(x).__rsub__(1)
    return (keep * x).assume_bound(x.bound)


def maximum(x: SharedFixedPoint, y: Any) -> SharedFixedPoint:
    """Elementwise maximum, exact: ``y + [x > y] (x - y)``."""
    diff = x - y
    result: SharedFixedPoint = ltz(-diff) * diff + y
    return result.assume_bound(max(x.bound, _bound(y)))


def minimum(x: SharedFixedPoint, y: Any) -> SharedFixedPoint:
    """Elementwise minimum, exact: ``y + [x < y] (x - y)``."""
    diff = x - y
    result: SharedFixedPoint = ltz(diff) * diff + y
    return result.assume_bound(max(x.bound, _bound(y)))


def max_along(x: SharedFixedPoint, axis: int = -1) -> SharedFixedPoint:
    """The maximum along ``axis`` by a tournament: ceil(log2(n)) comparison rounds."""
    axis = axis % max(x.ndim, 1)
    v = x._reshape_op(lambda a: np.moveaxis(a, axis, -1))
    while v.shape[-1] > 1:
        n = v.shape[-1]
        half = n // 2
        left, right = v[..., :half], v[..., half : 2 * half]
        best = maximum(left, right)
        if n % 2:
            best = concatenate([best, v[..., 2 * half :]], axis=-1)
        v = best
    return v[..., 0]


def clip(x: SharedFixedPoint, low: float, high: float) -> SharedFixedPoint:
    """``min(max(x, low), high)`` for public bounds, with both comparisons in one batch."""
    if not low <= high:
        raise ParameterError(explain("clip range", (low, high), "low <= high", "pass the bounds in order"))
    bits = ltz(stack([x - low, -(x - high)]))  # [x < low], [x > high] in one batch
    moves = stack([-(x - low), -(x - high)])  # low - x, high - x
    out = x + (bits * moves).sum(axis=0)
    return out.assume_bound(max(abs(low), abs(high)))


def clip_norm(g: SharedFixedPoint, max_norm: float, *, axis: int = -1, params: Any = None) -> SharedFixedPoint:
    """Scale each slice along ``axis`` to L2 norm at most ``max_norm`` (DP-SGD per-example clipping).

    ``g * min(1, C / ||g||) = g * C * inv_sqrt(max(||g||^2, C^2))``.

    Accuracy: the factor carries the relative error of :func:`~mpdp.protocols.mpc.functions.inv_sqrt`
    (documented there); the clipped norm exceeds ``C`` by at most that relative error plus ``sqrt(d) 2^-f``.
    """
    from mpdp.protocols.mpc.functions import inv_sqrt

    if not max_norm > 0:
        raise ParameterError(explain("max_norm", max_norm, "a number > 0", "pass the clipping bound C"))
    squares = g.square().sum(axis=axis)
    limited = maximum(squares, max_norm**2)
    factor = (inv_sqrt(limited, params) * max_norm).assume_bound(1.0 + 1e-3)
    expanded = factor._reshape_op(lambda a: np.expand_dims(a, axis))
    return (g * expanded).assume_bound(min(g.bound, max_norm) * (1 + 1e-3) + g.fmt.resolution)
