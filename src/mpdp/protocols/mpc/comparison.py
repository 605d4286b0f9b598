"""Secure comparison and what it enables: sign, ReLU, select, maximum, clip to an interval.

Clipping to an L2 norm, which also needs an inverse square root, is in :mod:`~mpdp.protocols.mpc.clipping`.

The primitive is ``ltz(x) = [x < 0]``, the top bit of ``x``'s two's complement, computed exactly:

1. With a comparison mask (``r`` shared additively *and* bitwise), open ``c = x + r`` (uniform, one round).
2. Over the integers ``x + r = c + w 2^l``; the top bit of ``x`` is
   ``msb(x) = c_msb XOR r_msb XOR [c_low < r_low]`` where ``low`` drops the top bit: the carry into the top
   position of ``x_low + r_low`` happens exactly when the sum's low part ``c_low`` is below ``r_low``.
3. ``[c_low < r_low]`` for public ``c`` and XOR-shared bits of ``r`` is a carry-lookahead circuit: per bit
   ``G = r AND NOT c`` (r wins here) and ``P = NOT (r XOR c)`` (tie), combined pairwise from the top,
   ``(G, P) = (G_hi XOR (P_hi AND G_lo), P_hi AND P_lo)`` (the two terms of the OR are exclusive, so
   OR = XOR), as a binary tree: six levels for 64 bits, seven for the two words of Z_2^128 (one round each,
   Beaver-style bit triples). The bits are sliced across elements (one 64-bit word holds one bit position of
   64 elements), so a level costs only the ANDs of its pairs: about two bit-ANDs per bit in all, against
   two per bit *per level* for a Kogge-Stone prefix over packed words.
   The first level needs one product per pair of adjacent bits of ``r`` only (``c`` is public), which does
   not depend on ``x``: its AND gate travels in step 1's message (:func:`open_with_pairs`), so the tree
   costs five rounds after the opening (six for Z_2^128).
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

import math
from typing import Any

import numpy as np

from mpdp.crypto.beaver import and_combine, b2a_combine
from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import ParameterError, explain
from mpdp.protocols.mpc import fss_compare
from mpdp.protocols.mpc.channel import Channel
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = [
    "clip",
    "greater",
    "less",
    "less_than_public",
    "ltz",
    "ltz_circuit",
    "max_along",
    "maximum",
    "minimum",
    "relu",
    "sign",
    "where",
]

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def and_many(session: Channel, xs: RingArray, ys: RingArray, sharing_id: bytes) -> RingArray:
    """XOR shares of ``xs & ys`` (word arrays of equal shape), one round."""
    t = session.provider.and_triple(tuple(xs.shape))
    d, e = session.open_xor([xs ^ t.a, ys ^ t.b], sharing_id=sharing_id, label="mpc.and")
    return and_combine(d, e, t.a, t.b, t.c, leader=session.leader)


def less_than_public(session: Channel, c_low: RingArray, r_low: RingArray) -> RingArray:
    """XOR shares (0/1 per element) of ``[c_low < r_low]`` for public words ``c_low`` and XOR-shared ``r_low``.

    Both are ``(words, *shape)`` uint64 arrays, word 0 least significant; ``words`` is 1 or 2. The carry
    circuit of step 3 of the module docstring as a binary tree over the ``L = 64 words`` bit positions, on
    bit-sliced words (row ``i`` holds bit ``i`` of 64 elements): level ``k`` combines adjacent blocks of
    ``2^(k-1)`` bits pairwise, so only the ANDs the final carry needs are computed, ``2 (L - 1) - 1`` bit-ANDs
    per element in all (against ``2 L`` per level for a Kogge-Stone prefix of every position). 6 rounds (7
    for two words), consuming the AND triples listed by :func:`_circuit_specs` (prefetch them to fetch all
    in one dealer exchange).
    """
    shape = c_low.shape[1:]
    n = math.prod(shape)
    if n == 0:
        return np.zeros(shape, dtype=np.uint64)
    # G: r has a 1 where c has a 0; P: equal bits. XOR with the public c is done by the leader only.
    g_words = r_low & ~c_low
    p_words = r_low ^ c_low ^ _ALL if session.leader else r_low
    gp = _slice_bits(np.stack([g_words, p_words]), n)  # (2, L, W): G rows, P rows
    return _carry_tree(session, gp, n, shape)


def _carry_tree(session: Channel, gp: RingArray, n: int, shape: tuple[int, ...]) -> RingArray:
    """The carry tree's levels on bit-sliced ``(G, P)`` rows, ``gp`` of shape ``(2, L, W)`` (row ``i`` holds bit
    position ``i`` of 64 elements per word), one round each; the top ``G`` unpacked to 0/1 words of ``shape``.

    A level's two products share their left operand ``P_hi``: ``(P_hi, P_hi) AND (G_lo, P_lo)`` is one AND of
    ``P_hi`` broadcast against the ``lo`` rows of both halves, so no operand is stacked."""
    provider, leader = session.provider, session.leader
    while gp.shape[1] > 2:  # (G, P) = (G_hi XOR (P_hi AND G_lo), P_hi AND P_lo)
        lo, hi = gp[:, 0::2], gp[:, 1::2]
        t = provider.and_triple(tuple(lo.shape))
        d, e = session.open_xor([t.a ^ hi[1], lo ^ t.b], sharing_id=session.new_id(), label="mpc.and")
        both = and_combine(d, e, t.a, t.b, t.c, leader=leader)
        both[0] ^= hi[0]
        gp = both
    # the final P is not needed: G = G_hi XOR (P_hi AND G_lo)
    g = gp[0, 1:2] ^ and_many(session, gp[1, 1:2], gp[0, 0:1], session.new_id())
    bits = np.unpackbits(np.ascontiguousarray(g[0], dtype="<u8").view(np.uint8), count=n, bitorder="little")
    out: RingArray = bits.reshape(shape).astype(np.uint64)
    return out


def _slice_bits(w: RingArray, n: int) -> RingArray:
    """``(k, words, *shape)`` uint64 words -> ``(k, 64 words, ceil(n / 64))``: row ``i`` packs bit ``i``
    (bit ``i - 64`` of word 1 from ``i = 64``) of the ``n`` elements, element ``j`` at bit ``j mod 64`` of
    word ``j // 64``.

    Two routes to the same words, by size: each numpy call costs about as much as a pass over a few thousand
    words, and :func:`_slice_small` makes fewer calls but more passes (two strided byte copies) than
    :func:`_slice_large` (one byte copy, three rounds of word operations on half the words): from
    ``_LARGE`` elements on (a many-threshold comparison: thousands of rows times elements) the latter.
    """
    return _slice_large(w, n) if n >= _LARGE and np.little_endian else _slice_small(w, n)


_LARGE = 2048


def _slice_large(w: RingArray, n: int) -> RingArray:
    """:func:`_slice_bits` for many elements: each block of 64 elements, a 64 x 64 bit matrix (element ``r``,
    bit ``c``), transposed by six rounds of block swaps (Hacker's Delight, section 7-3): at distance
    ``j = 32, 16, ..., 1`` the entries ``(r, c)`` with ``r & j = 0`` and ``c & j != 0`` trade places with
    ``(r + j, c - j)``. The first three rounds move whole bytes: they are one strided byte copy that also lays
    the words out as ``(64, blocks)`` (byte ``q`` of element ``8 h + e`` of a block, ``h = (r5 r4 r3)``, goes to
    byte ``h`` of row ``8 q + e``), so the last three rounds' rows ``r`` and ``r + j`` are contiguous runs of
    every block's words (six whole-array operations per round on half the words) and the result is the sliced
    rows themselves. Little-endian words (bit ``8 q + i`` is bit ``i`` of byte ``q``)."""
    k, words = w.shape[0], w.shape[1]
    kw = k * words
    count = -(-n // 64)
    flat = w.reshape(kw, n)
    if n == 64 * count:
        src = np.ascontiguousarray(flat)
    else:
        src = np.zeros((kw, 64 * count), dtype=np.uint64)
        src[:, :n] = flat
    x = np.empty((kw, 64, count), dtype=np.uint64)
    # source bytes (block, r5, r4, r3, e, q5, q4, q3) -> (q5, q4, q3, e, block, r5, r4, r3): rounds 32, 16, 8
    np.copyto(x.view(np.uint8).reshape(kw, 2, 2, 2, 8, count, 2, 2, 2),
              src.view(np.uint8).reshape(kw, count, 2, 2, 2, 8, 2, 2, 2).transpose(0, 6, 7, 8, 5, 1, 2, 3, 4))
    t = np.empty(kw * 32 * count, dtype=np.uint64)
    for j, shift, keep in _TRANSPOSE_STEPS[3:]:
        v = x.reshape(kw * 32 // j, 2, j * count)
        lo, hi = v[:, 0], v[:, 1]
        u = t.reshape(kw * 32 // j, j * count)
        np.right_shift(lo, shift, out=u)  # at column c (bit j clear): lo's column c + j XOR hi's column c
        u ^= hi
        u &= keep
        hi ^= u
        u <<= shift
        lo ^= u
    sliced: RingArray = x.reshape(k, 64 * words, count)
    return sliced


def _slice_small(w: RingArray, n: int) -> RingArray:
    """:func:`_slice_bits` for few elements (the fewest numpy calls).

    Each block of 64 elements is a 64 x 64 bit matrix (element, bit), transposed as an 8 x 8 matrix of bytes
    (a numpy transpose: byte ``b`` of element ``8 g + e`` to position (block, b, g, e)) whose 8 x 8 bit blocks,
    one per word, are then transposed by three rounds of bit swaps (Hacker's Delight, section 7-3,
    ``transpose8``): the bits of byte ``b`` of 8 elements become 8 bytes, byte ``k`` holding their bits ``k``.
    A second byte transpose puts byte ``g`` of row ``8 b + k`` in place. Little-endian words (bit ``8 b + k``
    is bit ``k`` of byte ``b``); big-endian machines take the word-level transposition.
    """
    k, words = w.shape[0], w.shape[1]
    count = -(-n // 64)
    if n == 64 * count:
        x = np.ascontiguousarray(w.reshape(k, words, n))
    else:
        x = np.zeros((k, words, 64 * count), dtype=np.uint64)
        x[:, :, :n] = w.reshape(k, words, n)
    if not np.little_endian:  # pragma: no cover - the byte views below read words little-endian
        return _slice_bits_words(x, k, words, count)
    # (k, words, block, g, e, b) -> (k, words, block, b, g, e): the 8 bytes e of one word form an 8 x 8 bit block
    m = np.ascontiguousarray(x.view(np.uint8).reshape(k, words, count, 8, 8, 8).transpose(0, 1, 2, 5, 3, 4))
    blocks = m.view(np.uint64)[..., 0]  # (k, words, block, b, g)
    t = np.empty_like(blocks)
    for shift, keep in _TRANSPOSE8:  # bit 8 e + k <-> bit 8 k + e
        np.right_shift(blocks, shift, out=t)
        t ^= blocks
        t &= keep
        blocks ^= t
        t <<= shift
        blocks ^= t
    # (k, words, block, b, g, k') -> (k, words, b, k', block, g): the 8 bytes g of row 8 b + k' form its word
    rows = np.ascontiguousarray(blocks.view(np.uint8).reshape(k, words, count, 8, 8, 8).transpose(0, 1, 3, 5, 2, 4))
    sliced: RingArray = rows.view(np.uint64)[..., 0]
    return sliced.reshape(k, 64 * words, count)


_TRANSPOSE8 = [(np.uint64(7), np.uint64(0x00AA00AA00AA00AA)), (np.uint64(14), np.uint64(0x0000CCCC0000CCCC)),
               (np.uint64(28), np.uint64(0x00000000F0F0F0F0))]


def _slice_bits_words(x: RingArray, k: int, words: int, count: int) -> RingArray:  # pragma: no cover - big-endian
    """:func:`_slice_bits` on words only: six rounds of block swaps of the 64 x 64 bit matrices (Hacker's
    Delight, section 7-3): at distance ``j`` the entries ``(r, c)`` with ``r & j = 0`` and ``c & j != 0``
    trade places with ``(r + j, c - j)``."""
    x = x.copy()
    for j, shift, keep in _TRANSPOSE_STEPS:
        v = x.reshape(k, words, count, 64 // (2 * j), 2, j)
        lo, hi = v[..., 0, :], v[..., 1, :]
        t = ((lo >> shift) ^ hi) & keep  # at column c (bit j clear): lo's column c + j XOR hi's column c
        lo ^= t << shift
        hi ^= t
    sliced: RingArray = np.ascontiguousarray(x.reshape(k, words, count, 64).transpose(0, 1, 3, 2))
    return sliced.reshape(k, 64 * words, count)


def _transpose_steps() -> list[tuple[int, np.uint64, np.uint64]]:
    steps, j, keep = [], 32, 0x00000000FFFFFFFF  # keep: the columns whose bit j is clear
    while j:
        steps.append((j, np.uint64(j), np.uint64(keep)))
        j //= 2
        keep ^= (keep << j) & 0xFFFFFFFFFFFFFFFF
    return steps


_TRANSPOSE_STEPS = _transpose_steps()


_EVEN = np.uint64(0x5555555555555555)


def open_with_pairs(session: Channel, ring: Ring, shares: list[RingArray], r_low: RingArray, *, label: str
                    ) -> tuple[list[RingArray], RingArray]:
    """Open ``shares`` (``ring``) in the round that also multiplies adjacent bits of the mask words ``r_low``.

    Returns the opened values and XOR shares of ``r_(2i+1) AND r_(2i)`` at bit ``2 i`` of each word (odd bits
    zero), the products :func:`less_than_public_pairs` needs in place of the carry tree's first level. The
    products involve the dealer's mask only, so their AND gate (one triple of ``r_low``'s shape, opening the
    uniformly masked ``(r_low >> 1) ^ a`` and ``r_low ^ b``) travels in the opening's message: the comparison
    saves a round and the first level's per-element ANDs (:func:`at_least` shares one ``r`` between all its
    thresholds, so there they are computed once per value instead of once per threshold).
    """
    t = session.provider.and_triple(tuple(r_low.shape))
    opened, (d, e) = session.open_with_words(ring, shares, [(r_low >> np.uint64(1)) ^ t.a, r_low ^ t.b],
                                             sharing_id=session.new_id(), label=label)
    pairs = and_combine(d, e, t.a, t.b, t.c, leader=session.leader)
    pairs &= _EVEN
    return opened, pairs


def less_than_public_pairs(session: Channel, c_low: RingArray, r_low: RingArray, pairs: RingArray) -> RingArray:
    """:func:`less_than_public` given ``pairs`` from :func:`open_with_pairs` (``r_low`` and ``pairs`` may have
    a shape that broadcasts to ``c_low``'s, e.g. one value per element for many thresholds): one round fewer.

    With ``k = NOT c`` (public), ``G_i = r_i k_i`` and ``P_i = r_i XOR k_i``, the first level's pair
    ``(hi, lo) = (2i + 1, 2i)`` is linear in the shared ``r_hi``, ``r_lo`` and ``s = r_hi r_lo``:
    ``G = k_hi r_hi XOR k_lo s XOR k_hi k_lo r_lo`` and ``P = s XOR k_lo r_hi XOR k_hi r_lo XOR k_hi k_lo``
    (the constant on the leader only). Both are formed locally on whole words, at the pair's even bit (``P``
    moved to the odd one, so one bit slicing serves both); the tree continues from level 2. 5 rounds (6 for
    two words), consuming the AND triples of :func:`pair_circuit_specs` after the pairs' one.
    """
    shape = c_low.shape[1:]
    n = math.prod(shape)
    if n == 0:
        return np.zeros(shape, dtype=np.uint64)
    one = np.uint64(1)
    r_hi, r_lo = (r_low >> one) & _EVEN, r_low & _EVEN  # before broadcasting (at_least: one per element)
    k_lo = ~c_low
    k_lo &= _EVEN
    k_hi = c_low >> one
    np.invert(k_hi, out=k_hi)
    k_hi &= _EVEN
    g = k_lo & r_lo  # G = k_hi (r_hi XOR k_lo r_lo) XOR k_lo s
    g ^= r_hi
    g &= k_hi
    t = k_lo & pairs
    g ^= t
    p = np.bitwise_and(k_lo, r_hi, out=t)  # P = s XOR k_lo r_hi XOR k_hi r_lo (XOR k_hi k_lo on the leader)
    p ^= pairs
    u = k_hi & r_lo
    p ^= u
    if session.leader:
        np.bitwise_and(k_hi, k_lo, out=u)
        p ^= u
    p <<= one
    g |= p
    sliced = _slice_bits(g[None], n)[0]  # rows 2i: G of pair i, rows 2i + 1: its P
    rows, count = sliced.shape
    return _carry_tree(session, sliced.reshape(rows // 2, 2, count).transpose(1, 0, 2), n, shape)


def pair_circuit_specs(words: int, pair_shape: tuple[int, ...], shape: tuple[int, ...]) -> list[CorrelationSpec]:
    """The AND triples :func:`open_with_pairs` (``pair_shape``: ``r_low``'s) and :func:`less_than_public_pairs`
    consume, in order."""
    count = -(-math.prod(shape) // 64)
    if count == 0:
        return [CorrelationSpec("and", 64, pair_shape)]
    return [CorrelationSpec("and", 64, pair_shape), *_circuit_specs(words, shape)[1:]]


def _circuit_specs(words: int, shape: tuple[int, ...]) -> list[CorrelationSpec]:
    """The AND triples :func:`less_than_public` consumes, in order: one bit-sliced word array per tree level."""
    count = -(-math.prod(shape) // 64)
    if count == 0:
        return []
    width = 64 * words
    specs = []
    while width > 2:
        width //= 2
        specs.append(CorrelationSpec("and", 64, (2, width, count)))
    specs.append(CorrelationSpec("and", 64, (1, count)))
    return specs


def ltz(x: SharedFixedPoint) -> SharedFixedPoint:
    """``[x < 0]`` as a shared bit (scale 0), exactly; 7 rounds in Z_2^64, 8 in Z_2^128, or one round with the
    dealer's DCF keys when the session compares by FSS (:mod:`~mpdp.protocols.mpc.fss_compare`)."""
    session = x.session
    if session.comparisons == "fss" and fss_compare.applies(session, x):
        return fss_compare.ltz(x)
    return ltz_circuit(x)


def ltz_circuit(x: SharedFixedPoint) -> SharedFixedPoint:
    """``[x < 0]`` by the carry circuit of the module docstring (any provider, any number of parties)."""
    session, ring = x.session, x.ring
    shape = x.shape
    bits = ring.bits
    provider = session.provider
    words = ring.words
    provider.prefetch([CorrelationSpec("compare", bits, shape), *pair_circuit_specs(words, (words, *shape), shape),
                       CorrelationSpec("dabit", bits, shape)])
    mask = provider.compare_mask(ring, shape)
    top_word, top_lane = divmod(bits - 1, 64)
    lane = np.uint64(top_lane)
    r_msb = (mask.bits[top_word] >> lane) & np.uint64(1)
    low_mask = np.full(words, _ALL, dtype=np.uint64)
    low_mask[top_word] = np.uint64((1 << top_lane) - 1)
    low_mask = low_mask.reshape((words,) + (1,) * len(shape))
    r_low = mask.bits & low_mask
    (c,), pairs = open_with_pairs(session, ring, [ring.add(x.share, mask.r)], r_low, label="mpc.compare")
    c_low = ring.low_words(c)
    lt = less_than_public_pairs(session, c_low, r_low, pairs)
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
