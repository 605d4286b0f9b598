"""Exact uint64 kernels the rings are built on: full 64 x 64-bit word products, and matrix products of
ring elements through float64 BLAS.

Word products: :func:`mulhilo` and :func:`mulhi` give the 128-bit product of 64-bit words (both words, or the
high one) from 32-bit halves, whose partial products never overflow a word. Z_2^128 multiplies its limbs
with them, and the prime field 2^61 - 1 of :mod:`mpdp.crypto.shamir` folds its products with them.

Matrix products (:func:`limb_matmul`): operands are split into 22-bit limbs held exactly in float64, limb
products are BLAS ``float64`` matmuls over chunks of at most 512 rows of the inner dimension
(``512 * (2^22 - 1)^2 < 2^53``, so every partial sum is an exact integer), summed per shift as words; the
ring recombines the shift sums modulo 2^l. One-word rings take numpy's own uint64 ``matmul`` instead (no
BLAS, but it wraps modulo 2^64, the ring's arithmetic) where :func:`narrow_product`'s cost model says it is
cheaper. A sum of products of equally shaped operands (:func:`joinable`), such as Beaver's ``d @ f + a @ e``,
is one product over the joined inner dimension.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring.base import RingArray
from mpdp.errors import ShapeMismatchError

__all__ = ["LIMB_BITS", "ROWS_EXACT", "joinable", "limb_matmul", "mulhi", "mulhilo", "narrow_product"]

_U64 = np.uint64
_M32 = _U64(0xFFFFFFFF)
LIMB_BITS = 22
"""Bits per limb of the float64 matmul operands: limb products summed over a chunk stay below 2^53."""
_LIMB_MASK = _U64((1 << LIMB_BITS) - 1)
_CHUNK = 512  # inner-dimension rows per float64 matmul: 512 * (2^22 - 1)^2 < 2^53


def mulhilo(a: RingArray, b: RingArray) -> tuple[RingArray, RingArray]:
    """The full 128-bit product of 64-bit words, as (low, high) words.

    a = a1 2^32 + a0, b = b1 2^32 + b0; a b = a1 b1 2^64 + (a1 b0 + a0 b1) 2^32 + a0 b0, every partial
    product below 2^64 and the middle column below 3 * 2^32.
    """
    a0, a1 = a & _M32, a >> _U64(32)
    b0, b1 = b & _M32, b >> _U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _U64(32)) + (p01 & _M32) + (p10 & _M32)
    low = (p00 & _M32) | (mid << _U64(32))
    high = p11 + (p01 >> _U64(32)) + (p10 >> _U64(32)) + (mid >> _U64(32))
    return low, high


def mulhi(a: RingArray, b: RingArray | np.uint64, out: RingArray | None = None) -> RingArray:
    """The high word of the 128-bit product of 64-bit words (into ``out`` when given).

    With a = a1 2^32 + a0 and b = b1 2^32 + b0: ``t = a0 b0``, ``u = a1 b0 + (t >> 32)`` (below 2^64),
    ``v = a0 b1 + (u mod 2^32)`` (below 2^64), and the high word is ``a1 b1 + (u >> 32) + (v >> 32)``:
    the carries of the middle column without ever forming it. In place on the fresh temporaries.
    """
    if a.ndim == 0:  # numpy scalars on the way: the operators (the arrays below are written in place)
        return _mulhi_scalar(a, b, out)
    a0, a1 = np.bitwise_and(a, _M32A), np.right_shift(a, _S32A)
    b0, b1 = np.bitwise_and(b, _M32A), np.right_shift(b, _S32A)
    u = np.multiply(a0, b0)
    np.right_shift(u, _S32A, out=u)
    t = np.multiply(a1, b0)
    u += t
    v = np.multiply(a0, b1, out=a0 if a0.shape == u.shape else None)
    np.bitwise_and(u, _M32A, out=t)
    v += t
    np.right_shift(v, _S32A, out=v)
    np.right_shift(u, _S32A, out=u)
    high: RingArray = np.multiply(a1, b1, out=out)
    high += u
    high += v
    return high


def _mulhi_scalar(a: RingArray, b: RingArray | np.uint64, out: RingArray | None) -> RingArray:
    """:func:`mulhi` for a 0-d ``a`` (same arithmetic, on the values numpy returns)."""
    a0, a1 = a & _M32, a >> _U64(32)
    b0, b1 = b & _M32, b >> _U64(32)
    u = (a0 * b0) >> _U64(32)
    u = u + a1 * b0
    v = (a0 * b1 + (u & _M32)) >> _U64(32)
    high = a1 * b1 + (u >> _U64(32)) + v
    if out is None:
        return np.asarray(high, dtype=np.uint64)
    out[...] = high
    return out


_M32A = np.array(0xFFFFFFFF, dtype=np.uint64)  # 0-d arrays: cheaper ufunc operands than numpy scalars
_S32A = np.array(32, dtype=np.uint64)


ROWS_EXACT = 1 << 18
"""Inner rows of one :func:`limb_matmul` whose shift sums below 64 bits stay exact words (``3 * 2^18 * 2^44 <
2^64``); a ring computes a longer product in runs of this many rows."""


def _float_limbs(parts: Sequence[RingArray], wide: bool, left: bool) -> npt.NDArray[np.float64]:
    """The 22-bit limbs of matmul operands as exact float64: the ``parts`` joined along the inner dimension.

    Each part holds one word per value (three limbs, at bits 0, 22, 44) or, when ``wide``, Z_2^128 values
    in the ring layout ``(2, *shape)`` (six limbs, at bits 0, 22, ..., 110; the one at 44 takes 20 bits of
    the low word and 2 of the high one). Left operands (``(..., m, k)`` or ``(k,)``) give ``(L, ..., m, K)``,
    right ones (``(..., k, n)``) ``(..., K, L, n)``, ``K`` the parts' total inner length. The parts are joined
    first; then every limb comes from one shift of its word by an array of amounts broadcast onto the limb
    axis, written contiguously, and the whole array takes three more passes: the mask, then the exponent of
    2^52 ORed into the words, which makes each one the float64 ``2^52 + limb`` (limbs are below 2^22, within
    the 52-bit significand), and ``2^52`` subtracted in place: exact, and cheaper than numpy's cast from
    integers. A handful of numpy calls per operand instead of a few per limb and part.
    """
    axis = -1 if left else -2
    src = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)  # the same axis of the ring layout
    shape = src.shape[1:] if wide else src.shape
    count = 6 if wide else 3
    if left:  # (L, ..., m, K): the limbs on a leading axis, (2, 3) for the two words when wide
        words = np.empty((count, *shape), dtype=np.uint64)
        if wide:
            np.right_shift(src[:, None], _SHIFTS.reshape((2, 3) + (1,) * len(shape)),
                           out=words.reshape((2, 3, *shape)))
            words[2] |= src[1] << _U64(64 - 2 * LIMB_BITS)  # bits 44..65: the high word's lowest 2 bits
        else:
            np.right_shift(src, _SHIFTS[0].reshape((3,) + (1,) * len(shape)), out=words)
    else:  # (..., K, L, n): the limbs interleaved with the columns
        words = np.empty((*shape[:-1], count, shape[-1]), dtype=np.uint64)
        if wide:
            pair = np.moveaxis(src, 0, -2)[..., None, :]  # (..., K, 2, 1, n)
            np.right_shift(pair, _SHIFTS[:, :, None], out=words.reshape((*shape[:-1], 2, 3, shape[-1])))
            words[..., 2, :] |= src[1] << _U64(64 - 2 * LIMB_BITS)
        else:
            np.right_shift(src[..., None, :], _SHIFTS[0][:, None], out=words)
    words &= _LIMB_MASK  # the top limb is below 2^20 already: the mask leaves it alone
    words |= _EXP52
    out: npt.NDArray[np.float64] = words.view(np.float64)
    out -= _TWO52
    return out


_SHIFTS = np.array([[0, LIMB_BITS, 2 * LIMB_BITS],
                    [3 * LIMB_BITS - 64, 4 * LIMB_BITS - 64, 5 * LIMB_BITS - 64]],
                   dtype=np.uint64)  # limbs 0..2 from the low word, 3..5 from the high one
_EXP52 = _U64(0x4330000000000000)  # the bits of the float64 2^52: ORed into w < 2^52 gives the float 2^52 + w
_TWO52 = np.float64(2.0**52)


def limb_matmul(pairs: Sequence[tuple[RingArray, RingArray]], wide: bool) -> list[RingArray]:
    """The shift sums ``S_t = sum_{i + j = t} A_i @ B_j`` of the limbs of ``sum_p a_p @ b_p``, as words, for
    ``t`` in ``0..L-1`` (``L`` = 3 limbs per word, 6 for Z_2^128): ``sum_p a_p @ b_p = sum_t S_t 2^(22 t)``
    modulo 2^(22 L) (limb products of ``i + j >= L`` have weight >= 2^66 resp. 2^132 and vanish modulo the
    ring). A sum of products of equally shaped operands is one product over the joined inner dimension.

    ``a_p`` is ``(..., m, k)`` or ``(k,)``, ``b_p`` ``(..., k, n)``, in the ring layout. B's limbs are
    interleaved with its columns (``(..., K, L n)``: limb ``j`` of column ``c`` at ``j n + c``), so limb ``i``
    of A meets all its partners in one BLAS product ``P_i = A_i @ [B_0 .. B_{L-1-i}]`` and block ``j`` of
    ``P_i`` belongs to shift ``i + j``: adding ``P_i`` into ``P_0`` from block ``i`` on sums every shift at
    once. Inner chunks of at most ``_CHUNK`` rows keep every product entry an exact integer (below
    ``512 (2^22 - 1)^2 < 2^53``); each is converted to words once, and words are summed modulo 2^64. That is
    exact for the sums whose shift is below 64 (t <= 2: at most 3 products, each below K 2^44) while
    ``K <= ROWS_EXACT``; the caller splits longer products. The others only matter modulo
    2^(64 - 22t) <= 2^64 (t >= 3, Z_2^128 only).
    """
    count = 6 if wide else 3
    al = _float_limbs([a for a, _ in pairs], wide, left=True)
    b0 = pairs[0][1]
    if b0.shape[-1] >= _WIDE:  # B's limbs on a first axis: for one pair, as if B were a left operand
        bw = _float_limbs([b0], wide, left=True) if len(pairs) == 1 else \
            np.ascontiguousarray(np.moveaxis(_float_limbs([b for _, b in pairs], wide, left=False), -2, 0))
        return _limb_matmul_wide(al, bw, count, al.shape[-1])
    bl = _float_limbs([b for _, b in pairs], wide, left=False)
    n = bl.shape[-1]
    k = al.shape[-1]
    bl = bl.reshape((*bl.shape[:-2], count * n))
    total: RingArray | None = None
    for start in range(0, max(k, 1), _CHUNK):  # one pass of zeros for an empty inner dimension
        stop = min(start + _CHUNK, k)
        ac = al if stop - start == k else al[..., start:stop]
        bc = bl if stop - start == k else bl[..., start:stop, :]
        sums: RingArray | None = None
        for i in range(count):
            product = np.matmul(ac[i], bc[..., : (count - i) * n])
            words = np.asarray(product.astype(np.int64)).view(np.uint64)  # exact: 0 <= entries < 2^53
            if sums is None:
                sums = words
            else:
                tail = sums[..., i * n :]
                np.add(tail, words, out=tail)
        if sums is None:  # pragma: no cover - count >= 3
            raise ShapeMismatchError("empty matmul")
        total = sums if total is None else np.add(total, sums, out=total)
    if total is None:  # pragma: no cover - at least one pass
        raise ShapeMismatchError("empty matmul")
    return [total[..., t * n : (t + 1) * n] for t in range(count)]


_WIDE = 64  # from this many result columns on, limb products are separate BLAS calls on contiguous limbs


def _limb_matmul_wide(al: npt.NDArray[np.float64], bl: npt.NDArray[np.float64], count: int,
                      k: int) -> list[RingArray]:
    """:func:`limb_matmul` for wide results: B's limbs contiguous on a first axis (``(L, ..., K, n)``) and
    one BLAS product per limb pair (column slices of interleaved limbs make BLAS slower on wide products);
    the same exact chunks and shift sums."""
    sums: list[RingArray | None] = [None] * count
    for start in range(0, max(k, 1), _CHUNK):
        stop = min(start + _CHUNK, k)
        ac = al if stop - start == k else al[..., start:stop]
        bc = bl if stop - start == k else bl[..., start:stop, :]
        for i in range(count):
            for j in range(count - i):
                words = np.asarray(np.matmul(ac[i], bc[j]).astype(np.int64)).view(np.uint64)  # exact, < 2^53
                total = sums[i + j]
                sums[i + j] = words if total is None else np.add(total, words, out=total)
    out = [s for s in sums if s is not None]
    if len(out) != count:  # pragma: no cover - every shift gets a product
        raise ShapeMismatchError("empty matmul")
    return out


def narrow_product(a: RingArray, b: RingArray) -> bool:
    """Whether numpy's (non-BLAS, wrapping) uint64 matmul is cheaper than the limb products for one-word ``a @ b``.

    The cost model, in units of one multiply-add of the integer matmul: the limb path costs about a third of a
    unit per multiply-add (its BLAS products), about 14 per element of the operands and the result (limb
    extraction, conversions, shift sums) and about 20000 fixed, so the integer matmul is cheaper when
    ``macs < 20 elements + 30000``: small or narrow products such as the DPVI step's 124 x 100 @ 100 x 10
    take it, a 128 x 128 square product or larger takes the limbs.
    """
    k = max(a.shape[-1], 1)
    macs = a.size * b.size // k
    return bool(macs < 20 * (a.size + b.size + macs // k) + 30_000)


def joinable(pairs: Sequence[tuple[RingArray, RingArray]]) -> bool:
    """Whether products can share one limb matmul: the operands of every pair have the first pair's shapes."""
    if not pairs:
        return False
    a0, b0 = pairs[0]
    return all(a.shape == a0.shape and b.shape == b0.shape for a, b in pairs[1:])
