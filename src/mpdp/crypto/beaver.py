"""The local algebra of the secret-shared protocols: what each party computes once values are opened.

All functions act on one party's shares; ``leader`` is True for exactly one party (index 0), which adds
the public terms. The interactive parts (who sends what) live in :mod:`mpdp.protocols.mpc`.

Beaver multiplication (Beaver, CRYPTO 1991)
    With a triple ``c = a * b`` and opened ``d = x - a``, ``e = y - b``:
    ``x * y = (d + a)(e + b) = c + d * b + a * e + d * e``; each party's share is
    ``c_i + d * b_i + a_i * e`` and the leader adds ``d * e``. The same identity holds for ``@``.

Bitwise AND on XOR shares
    With a word triple ``c = a & b`` and opened ``d = x ^ a``, ``e = y ^ b``:
    ``x & y = c ^ (d & b) ^ (a & e) ^ (d & e)``.

Wrap-corrected shift (truncation and ring conversion; see :func:`wrap_shift_output`)
    For ``x' = x + 2^(l-2)`` in ``[0, 2^(l-1))`` and a uniform mask ``r = r_msb 2^(l-1) + r_low``, the opened
    ``c = x' + r mod 2^l`` gives, over the integers, ``x' + r_low = c_low + t 2^(l-1)`` with
    ``t = c_msb XOR r_msb = c_msb + (1 - 2 c_msb) r_msb`` (linear in the shared bit ``r_msb``), so

        floor(x' / 2^k) = (c_low >> k) + t 2^(l-1-k) - (r_low >> k) - beta,

    where ``beta = [c_low mod 2^k < r_low mod 2^k]``. The protocol omits ``beta``: the result is
    ``floor(x'/2^k) + beta``, i.e. ``x / 2^k`` rounded down or up, never further off. Because ``r_low mod 2^k``
    is uniform, ``P(beta = 1) = frac(x' / 2^k)``: the rounding is stochastic and unbiased. There is no other
    failure mode: for ``|x| < 2^(l-2)`` the result is always one of the two neighbours of ``x / 2^k``
    (compare the 2-party local truncation of SecureML, which fails with probability ~ |x| / 2^l).

Bit to arithmetic (daBit)
    With a random bit ``s`` shared both as XOR and additively, opening ``v = b XOR s`` gives
    ``b = v + s - 2 v s = v + (1 - 2 v) s``, linear in the additive shares of ``s``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring import Z2_128, Ring, RingArray, Z2k, convert_unsigned

__all__ = ["and_combine", "b2a_combine", "beaver_combine", "square_combine", "wrap_shift_output"]


def beaver_combine(ring: Ring, d: RingArray, e: RingArray, a: RingArray, b: RingArray, c: RingArray, *,
                   leader: bool, matmul: bool = False) -> RingArray:
    """This party's share of ``x * y`` (or ``x @ y``) from opened ``d = x - a``, ``e = y - b``."""
    # the leader's d b + d e is one product: d (b + e)
    f = ring.add(b, e) if leader else b
    if matmul:  # d @ f + a @ e as one product over the joined inner dimension
        return ring.add(c, ring.matmul_sum([(d, f), (a, e)]))
    if isinstance(ring, Z2k):  # one word per value: three wrapping ufuncs in place on the first product
        out = np.multiply(d, f)
        if type(out) is np.ndarray and out.shape == c.shape:
            out += np.multiply(a, e)
            out += c
            return ring.reduce(out)
    if isinstance(ring, Z2_128) and d.shape == a.shape and f.shape == e.shape and d.ndim > 1 and f.ndim > 1:
        return _beaver_wide(ring, d, f, a, e, c)
    return ring.add(ring.add(c, ring.mul(d, f)), ring.mul(a, e))


def _beaver_wide(ring: Z2_128, d: RingArray, f: RingArray, a: RingArray, e: RingArray, c: RingArray) -> RingArray:
    """``c + d f + a e`` in Z_2^128: both products as one product of the stacked pairs (the limb arithmetic of
    a product costs about twenty ufunc calls, whatever the size of these small arrays), then the two sums
    with their carries in place on one fresh array."""
    if d.ndim != f.ndim:  # the same value ranks, so that the stacked pairs broadcast as the products do
        d, f = ring._pair(d, f)
        a, e = ring._pair(a, e)
    x = np.empty((2, 2, *d.shape[1:]), dtype=np.uint64)
    x[:, 0], x[:, 1] = d, a
    y = np.empty((2, 2, *f.shape[1:]), dtype=np.uint64)
    y[:, 0], y[:, 1] = f, e
    products = ring.mul(x, y)
    out = ring.add(c, products[:, 0])
    second = products[:, 1]
    np.add(out, second, out=out)
    high = out[1:]
    np.add(high, np.less(out[:1], second[:1]), out=high)  # carry
    return out


def square_combine(ring: Ring, d: RingArray, a: RingArray, c: RingArray, *, leader: bool) -> RingArray:
    """Share of ``x^2`` from a square pair ``c = a^2`` and opened ``d = x - a``: ``c + 2 d a + d^2``."""
    # the leader's 2 d a + d^2 is one product: d (2 a + d)
    if isinstance(ring, Z2k) and d.shape == a.shape == c.shape and d.ndim:
        out = np.left_shift(a, np.uint64(1))
        if leader:
            out += d
        out *= d
        out += c
        return ring.reduce(out)
    twice = ring.shl(a, 1)
    return ring.add(c, ring.mul(d, ring.add(twice, d) if leader else twice))


def and_combine(d: RingArray, e: RingArray, a: RingArray, b: RingArray, c: RingArray, *,
                leader: bool) -> RingArray:
    """XOR share of ``x & y`` from opened ``d = x ^ a``, ``e = y ^ b`` and a word triple ``c = a & b``."""
    # the leader's (d & b) ^ (d & e) is d & (b ^ e)
    z: RingArray = np.bitwise_and(d, np.bitwise_xor(b, e) if leader else b)
    ae = np.bitwise_and(a, e)
    if type(z) is np.ndarray and z.shape == c.shape == ae.shape:
        z ^= c
        z ^= ae
        return z
    out: RingArray = z ^ c ^ ae
    return out


def b2a_combine(ring: Ring, v: npt.NDArray[Any], s: RingArray, *, leader: bool) -> RingArray:
    """Additive share of a bit ``b`` from the opened ``v = b XOR s`` (0/1 array) and shares of ``s``."""
    if isinstance(ring, Z2k):
        # (1 - 2v) s as one wrapping product: 1 - 2v is 1 or 2^64 - 1 (= -1)
        words = np.asarray(v, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z: RingArray = ring.mul(s, np.uint64(1) - (words << np.uint64(1)))
        return ring.add(z, words) if leader else z
    words = np.asarray(v, dtype=np.uint64)
    if isinstance(ring, Z2_128) and s.ndim > 1 and words.shape == s.shape[1:]:
        # (1 - 2v) s = (s XOR -v) + v over 128 bits (two's complement: -s = ~s + 1), the leader's + v with it
        flipped: RingArray = np.bitwise_xor(s, np.negative(words))
        low = flipped[:1]
        step = words + words if leader else words
        low += step
        np.add(flipped[1:], np.less(low, step), out=flipped[1:])  # carry
        return flipped
    z = np.where(np.asarray(v, dtype=bool), ring.neg(s), s)  # (1 - 2v) s
    if leader:
        z = ring.add(z, ring.from_int(words))
    return z


def wrap_shift_output(ring_in: Ring, ring_out: Ring, c: RingArray, msb: RingArray, low: RingArray, shift: int,
                      *, leader: bool, offset_back: bool = True) -> RingArray:
    """Share (in ``ring_out``) of ``floor((x + 2^(l-2)) / 2^shift) [+ beta]`` minus the offset.

    ``c`` is the opened ``x + 2^(l-2) + r``; ``msb`` and ``low`` are this party's ``ring_out`` shares of the
    mask's top bit and of ``(r mod 2^(l-1)) >> shift``. With ``offset_back`` the ``2^(l-2-shift)`` offset
    is subtracted, so the result is ``x / 2^shift`` rounded (see the module docstring).
    """
    l_in = ring_in.bits
    # t = c_msb XOR r_msb = (1 - 2 c_msb) r_msb + c_msb, and x' >> k = (c_low >> k) + t 2^(l-1-k) - low, where
    # (c_low >> k) + c_msb 2^(l-1-k) = c >> k: the public terms are the leader's c >> k (minus the offset).
    if isinstance(ring_out, Z2k) and msb.shape == low.shape == ring_in.shape(c) and msb.ndim:
        return _wrap_shift_words(ring_in, ring_out, c, msb, low, shift, leader=leader, offset_back=offset_back)
    if isinstance(ring_in, Z2_128) and isinstance(ring_out, Z2_128) and shift < 63 and msb.shape == low.shape \
            == c.shape and c.ndim > 1:
        return _wrap_shift_wide(c, msb, low, shift, leader=leader, offset_back=offset_back)
    c_msb = ring_in.msb(c).astype(bool)
    signed = np.where(c_msb, ring_out.neg(msb), msb)  # (1 - 2 c_msb) r_msb
    out = ring_out.sub(ring_out.shl(signed, l_in - 1 - shift), low)
    if leader:
        public = convert_unsigned(ring_in.shr(c, shift), ring_in, ring_out)
        if offset_back:
            public = ring_out.add_int(public, -(1 << (l_in - 2 - shift)))
        out = ring_out.add(out, public)
    return out


def _wrap_shift_wide(c: RingArray, msb: RingArray, low: RingArray, shift: int, *, leader: bool,
                     offset_back: bool) -> RingArray:
    """:func:`wrap_shift_output` within Z_2^128 for ``shift < 63``, on one fresh array:
    ``r_msb (1 - 2 c_msb) 2^(127-k) - low [+ (c >> k) - 2^(126-k)]`` modulo 2^128. The first term's weight
    ``2^(127-k)`` is at least 2^64: only the low word of ``r_msb``'s share matters, times the word
    ``+-2^(63-k)``, and it lands in the high word."""
    u64 = np.uint64
    weight = 63 - shift  # 2^(127-k) = 2^64 2^weight
    factor = _sign_factor(c[1] >> u64(63), weight)
    out = np.empty(low.shape, dtype=np.uint64)
    lo, hi = out[0], out[1]
    np.negative(low[0], out=lo)  # -low = (-low0, -low1 - [low0 != 0])
    np.multiply(msb[0], factor, out=hi)
    hi -= low[1]
    hi -= low[0] != 0
    if leader:
        if shift:  # c >> k, k < 63
            c_lo = c[0] >> u64(shift)
            c_lo |= c[1] << u64(64 - shift)
            c_hi = c[1] >> u64(shift)
        else:
            c_lo, c_hi = c[0], c[1]
        lo += c_lo
        hi += c_hi
        hi += lo < c_lo  # carry
        if offset_back:  # -2^(126-k): a word in the high limb (126 - k >= 64)
            hi -= u64(1 << (62 - shift))
    return out


def _wrap_shift_words(ring_in: Ring, ring_out: Z2k, c: RingArray, msb: RingArray, low: RingArray, shift: int, *,
                      leader: bool, offset_back: bool) -> RingArray:
    """:func:`wrap_shift_output` into a one-word ring, in a few wrapping ufuncs on one fresh array:
    ``r_msb (1 - 2 c_msb) 2^(l-1-k) - low [+ (c >> k) - 2^(l-2-k)]`` modulo 2^64, then reduced."""
    l_in, weight = ring_in.bits, ring_in.bits - 1 - shift
    u64 = np.uint64
    if weight < 64:  # (1 - 2 c_msb) 2^weight as a word: 2^weight or -2^weight
        factor = _sign_factor(ring_in.msb(c), weight)
        out: RingArray = np.multiply(msb, factor)
        out -= low
    else:  # the term vanishes modulo 2^64
        out = np.negative(low)
    if leader:
        if isinstance(ring_in, Z2k):
            out += c >> u64(shift)
        else:  # the low word of the 128-bit c >> k
            out += convert_unsigned(ring_in.shr(c, shift), ring_in, Z2k(64))
        if offset_back:
            out += u64((-(1 << (l_in - 2 - shift))) % (1 << 64))
    return ring_out.reduce(out)


def _sign_factor(top: RingArray, weight: int) -> RingArray:
    """``(1 - 2 top) 2^weight`` modulo 2^64 for fresh 0/1 words ``top`` (``weight < 64``), in place: ``2^weight +
    top (-2^weight - 2^weight)``, two wrapping ufuncs (a select by ``np.where`` costs about twice as much)."""
    step = np.uint64((-(2 << weight)) % (1 << 64))
    top *= step
    top += np.uint64(1 << weight)
    return top
