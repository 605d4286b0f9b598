"""Z_2^128 on two ``uint64`` limbs per element: the wide ring of the high-precision formats.

An element array has shape ``(2, *shape)`` and holds ``(low, high)`` words. Sums and differences are one
ufunc over the limb axis followed by the carry (borrow) into the high limb; products use the 128-bit word
products of :mod:`mpdp.crypto.ring.kernels` (``(a1 2^64 + a0)(b1 2^64 + b0) = a0 b0 + (a1 b0 + a0 b1) 2^64``
modulo 2^128); matrix products take six 22-bit limbs per element through float64 BLAS (the 21 limb products
of weight below 2^128, summed on six shifts).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring.base import IntLike, Ring, RingArray, UniformSource
from mpdp.crypto.ring.kernels import ROWS_EXACT, joinable, limb_matmul, mulhi
from mpdp.errors import MpdpError, ParameterError, ShapeMismatchError, explain
from mpdp.numeric import as_array, exact_integers

__all__ = ["Z2_128"]

_U64 = np.uint64
_LITTLE = sys.byteorder == "little"  # uint64 words viewed as (low, high) uint32 halves
_M32 = _U64(0xFFFFFFFF)
_M32A = np.array(0xFFFFFFFF, dtype=np.uint64)  # 0-d arrays: cheaper ufunc operands than numpy scalars
_S32A = np.array(32, dtype=np.uint64)


def _quiet(method: Callable[..., RingArray]) -> Callable[..., RingArray]:
    """Silence numpy's overflow warnings, which only Python operators on numpy *scalars* raise: Z_2^128
    operands of at least one value axis keep every limb an array, so only 0-d values need np.errstate
    (which costs more than the arithmetic on small arrays)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> RingArray:
        if all(type(x) is not np.ndarray or x.ndim > 1 for x in args):
            return method(self, *args)
        with np.errstate(over="ignore"):
            return method(self, *args)

    return wrapper


@dataclass(frozen=True, repr=False)
class Z2_128(Ring):  # noqa: N801 - the ring's name
    """Z_2^128 on two ``uint64`` limbs per element: arrays of shape ``(2, *shape)`` holding (low, high)."""

    bits: int = 128

    def __post_init__(self) -> None:
        if self.bits != 128:
            raise ParameterError(explain("bits", self.bits, "128", "use Z2k(bits) for rings up to 64 bits"))

    def shape(self, a: RingArray) -> tuple[int, ...]:
        return tuple(a.shape[1:])

    def zeros(self, shape: tuple[int, ...]) -> RingArray:
        return np.zeros((2, *shape), dtype=np.uint64)

    def random(self, rng: UniformSource, shape: tuple[int, ...]) -> RingArray:
        return rng.uint64((2, *shape))

    def check(self, a: Any, what: str, *, received: bool = False) -> RingArray:
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.ndim < 1 or a.shape[0] != 2:
            self._refuse(what, getattr(a, "shape", type(a).__name__), "a uint64 array of shape (2, ...)",
                         "pass Z_2^128 shares (low and high limbs)", received)
        return a

    def apply(self, a: RingArray, fn: Any) -> RingArray:
        return self._join(np.asarray(fn(a[0])), np.asarray(fn(a[1])))

    def combine(self, arrays: Sequence[RingArray], fn: Any) -> RingArray:
        return self._join(np.asarray(fn([x[0] for x in arrays])), np.asarray(fn([x[1] for x in arrays])))

    # Shape operations on both limbs at once: value axis j is axis j + 1 of the element array. Anything the
    # translation does not cover exactly (several advanced indices, out-of-range axes) goes limb by limb.
    def index(self, a: RingArray, key: Any) -> RingArray:
        if type(key) is np.ndarray and key.dtype.kind in "iu" and a.ndim > 1:
            # integers picking along the first value axis: np.take, cheaper than the fancy index
            taken: RingArray = np.take(a, key, axis=1)
            return taken
        parts = key if type(key) is tuple else (key,)
        arrays = ints = 0
        for part in parts:
            if isinstance(part, (np.ndarray, list)):
                arrays += 1
            elif isinstance(part, (int, np.integer)) and not isinstance(part, (bool, np.bool_)):
                ints += 1
            elif not (part is None or part is Ellipsis or isinstance(part, slice)):
                return super().index(a, key)
        # one advanced index (and no integer, which would join it) keeps its place behind the limb axis
        if arrays > 1 or (arrays and ints):
            return super().index(a, key)
        return a[(slice(None), *parts)]

    def reshape(self, a: RingArray, shape: int | tuple[int, ...]) -> RingArray:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return a.reshape((2, *dims))

    def transpose(self, a: RingArray, axes: tuple[int, ...] = ()) -> RingArray:
        n = a.ndim - 1
        if not axes:
            return a.transpose(0, *range(n, 0, -1))
        if len(axes) != n or not all(isinstance(x, (int, np.integer)) and -n <= x < n for x in axes):
            return super().transpose(a, axes)
        return a.transpose(0, *(int(x) % n + 1 for x in axes))

    def broadcast_to(self, a: RingArray, shape: tuple[int, ...]) -> RingArray:
        dims = tuple(shape)
        if len(dims) < a.ndim - 1:
            return super().broadcast_to(a, shape)
        out = np.empty((2, *dims), dtype=np.uint64)
        out[...] = a.reshape((2,) + (1,) * (len(dims) - a.ndim + 1) + a.shape[1:])  # broadcasts or raises
        return out

    def concatenate(self, arrays: Sequence[RingArray], axis: int = 0) -> RingArray:
        n = arrays[0].ndim - 1 if len(arrays) else 0
        if not (isinstance(axis, (int, np.integer)) and -n <= axis < n):
            return super().concatenate(arrays, axis)
        return np.concatenate(arrays, axis=int(axis) % n + 1)

    def stack(self, arrays: Sequence[RingArray], axis: int = 0) -> RingArray:
        n = arrays[0].ndim if len(arrays) else 0  # the result's number of value axes
        if not (isinstance(axis, (int, np.integer)) and -n <= axis < n):
            return super().stack(arrays, axis)
        return np.stack(arrays, axis=int(axis) % n + 1)

    @staticmethod
    def _pair(a: RingArray, b: RingArray) -> tuple[RingArray, RingArray]:
        # Leading limb axis: align value shapes by inserting broadcast axes after it.
        if a.ndim < b.ndim:
            a = a.reshape((2,) + (1,) * (b.ndim - a.ndim) + a.shape[1:])
        elif b.ndim < a.ndim:
            b = b.reshape((2,) + (1,) * (a.ndim - b.ndim) + b.shape[1:])
        return a, b

    @staticmethod
    def _join(lo: RingArray, hi: RingArray) -> RingArray:
        shape = lo.shape if type(lo) is np.ndarray and type(hi) is np.ndarray and lo.shape == hi.shape else \
            np.broadcast_shapes(np.shape(lo), np.shape(hi))
        out = np.empty((2, *shape), dtype=np.uint64)
        out[0] = lo
        out[1] = hi
        return out

    # Results are written into one preallocated (2, *shape) array: no stacking copies. Both limbs of a sum or
    # difference are one ufunc call over the limb axis; then the carry (borrow) goes into the high limb.
    # Array ufuncs never warn on wrap-around (only numpy *scalar* arithmetic does), so add and sub, which
    # stay on arrays, need no np.errstate.
    @staticmethod
    def _out(a: RingArray, b: RingArray) -> RingArray:
        if a.shape == b.shape:
            return np.empty(a.shape, dtype=np.uint64)
        return np.empty((2, *np.broadcast_shapes(a.shape[1:], b.shape[1:])), dtype=np.uint64)

    def add(self, a: RingArray, b: RingArray) -> RingArray:
        if a.ndim != b.ndim:
            a, b = self._pair(a, b)
        out: RingArray = np.add(a, b)  # a fresh (2, *shape) array, broadcast as the values
        high = out[1:]
        np.add(high, np.less(out[:1], a[:1]), out=high)  # carry
        return out

    def sub(self, a: RingArray, b: RingArray) -> RingArray:
        if a.ndim != b.ndim:
            a, b = self._pair(a, b)
        out: RingArray = np.subtract(a, b)
        high = out[1:]
        np.subtract(high, np.less(a[:1], b[:1]), out=high)  # borrow
        return out

    def neg(self, a: RingArray) -> RingArray:
        # -(h 2^64 + l) = (~h + [l == 0]) 2^64 + (-l)  (mod 2^128)
        out = np.empty(a.shape, dtype=np.uint64)
        np.negative(a[:1], out=out[:1])
        np.invert(a[1:], out=out[1:])
        out[1:] += a[:1] == 0
        return out

    def add_int(self, a: RingArray, k: int) -> RingArray:
        # k = k1 2^64 + k0: the high limb gets k1 and the carry out of the low limb's k0
        k = self.int_constant(k) % (1 << 128)
        k0, k1 = _U64(k & 0xFFFFFFFFFFFFFFFF), _U64(k >> 64)
        out = np.empty(a.shape, dtype=np.uint64)
        if k0:
            np.add(a[:1], k0, out=out[:1])
            np.add(a[1:], k1, out=out[1:])
            out[1:] += out[:1] < k0  # carry
        else:
            out[:1] = a[:1]
            np.add(a[1:], k1, out=out[1:])
        return out

    @_quiet
    def mul(self, a: RingArray, b: RingArray) -> RingArray:
        # (a1 2^64 + a0)(b1 2^64 + b0) = a0 b0 + (a1 b0 + a0 b1) 2^64  (mod 2^128)
        if a.ndim != b.ndim:
            a, b = self._pair(a, b)
        out = self._out(a, b)
        a0, b0 = a[0, ...], b[0, ...]
        np.multiply(a0, b0, out=out[0, ...])  # the low word of a0 b0 is the wrapping product
        high = mulhi(a0, b0, out[1, ...])
        t = np.multiply(a[1, ...], b0)  # the cross terms, both of the result's shape, through one temporary
        high += t
        high += np.multiply(a0, b[1, ...], out=t) if type(t) is np.ndarray else a0 * b[1, ...]
        return out

    def mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        try:
            return self._mul_int(a, k)
        except MpdpError:
            raise
        except ValueError as exc:  # shapes that do not broadcast
            raise ShapeMismatchError(explain("k", np.shape(k), f"a scalar or a shape broadcasting to {a.shape[1:]}",
                                             "pass one constant, or one per element")) from exc

    def _mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        if isinstance(k, int) and k > 0 and k & (k - 1) == 0:  # a power of two (scale lifts): a shift
            return self.shl(a, k.bit_length() - 1)
        if isinstance(k, (int, np.integer)) or (isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype != object):
            return self._mul_scalar(a, self.int_constant(k) % (1 << 128))
        if isinstance(k, np.ndarray) and k.dtype.kind == "i" and a.ndim > 1 and k.ndim:
            return self._mul_words(a, k.astype(np.int64, copy=False))
        return self.mul(a, self.from_int(k))

    def _mul_words(self, a: RingArray, k: npt.NDArray[np.int64]) -> RingArray:
        """``a * k`` for signed 64-bit integers ``k`` (broadcasting): as a 128-bit residue ``k`` is the word
        ``k0 = k mod 2^64`` minus ``2^64`` when negative, so ``a k = a k0 - a0 2^64 [k < 0]`` (mod 2^128)."""
        k0 = k.view(np.uint64)
        lo = np.multiply(a[0, ...], k0)
        out = np.empty((2, *lo.shape), dtype=np.uint64)
        out[0, ...] = lo
        hi = out[1, ...]
        hi[...] = mulhi(a[0, ...], k0)
        hi += np.multiply(a[1, ...], k0)
        negative = np.right_shift(k, np.int64(63)).view(np.uint64)  # all ones where k < 0
        hi -= np.bitwise_and(a[0, ...], negative)
        return out

    @_quiet
    def _mul_scalar(self, a: RingArray, k: int) -> RingArray:
        # (a1 2^64 + a0) (k1 2^64 + k0) = a0 k0 + (a1 k0 + a0 k1) 2^64  (mod 2^128), k0 and k1 words
        k0, k1 = _U64(k & 0xFFFFFFFFFFFFFFFF), _U64(k >> 64)
        out = np.empty(a.shape, dtype=np.uint64)
        np.multiply(a[0, ...], k0, out=out[0, ...])
        high = mulhi(a[0, ...], k0, out[1, ...])
        high += a[1, ...] * k0
        if k1:
            high += a[0, ...] * k1
        return out

    def matmul(self, a: RingArray, b: RingArray) -> RingArray:
        return self.matmul_sum([(a, b)])

    def matmul_sum(self, pairs: Sequence[tuple[RingArray, RingArray]]) -> RingArray:
        if not joinable(pairs):
            return super().matmul_sum(pairs)
        # Six 22-bit limbs (see limb_matmul): the 21 limb products of weight below 2^128 summed on 6 shifts.
        # Products longer than ROWS_EXACT joined inner rows are computed in runs of that many rows, then added.
        vector = pairs[0][1].ndim == 2
        if vector:
            pairs = [(a, b[..., None]) for a, b in pairs]
        k = pairs[0][0].shape[-1]
        step = max(1, ROWS_EXACT // len(pairs))
        out: RingArray | None = None
        for start in range(0, max(k, 1), step):
            run = slice(start, min(start + step, k))
            if run.stop - run.start == k:
                part = self._from_shift_sums(limb_matmul(pairs, wide=True))
            else:
                part = self._from_shift_sums(limb_matmul([(a[..., run], b[..., run, :]) for a, b in pairs], wide=True))
            out = part if out is None else self.add(out, part)
        if out is None:  # pragma: no cover - at least one run
            raise ShapeMismatchError("empty matmul")
        return out[..., 0] if vector else out

    @staticmethod
    def _from_shift_sums(sums: Sequence[RingArray]) -> RingArray:
        """``sum_t S_t 2^(22 t)`` modulo 2^128 for the shift sums of :func:`limb_matmul` (overwrites them)."""
        s0, s1, s2, s3, s4, s5 = sums
        out = np.empty((2, *s0.shape), dtype=np.uint64)
        lo, hi = out[0, ...], out[1, ...]
        # low word: s0 + s1 2^22 + s2 2^44 with its two carries; the bits shifted past 2^64 go high
        np.left_shift(s1, _U64(22), out=lo)
        lo += s0
        carry = lo < s0
        s2_lo = s2 << _U64(44)
        lo += s2_lo
        np.right_shift(s1, _U64(42), out=hi)
        hi += carry
        hi += lo < s2_lo
        s2 >>= _U64(20)
        hi += s2
        for s, shift in ((s3, 2), (s4, 24), (s5, 46)):  # 2^66, 2^88, 2^110 = 2^64 (2^2, 2^24, 2^46)
            s <<= _U64(shift)
            hi += s
        return out

    def sum(self, a: RingArray, axis: int | tuple[int, ...] | None) -> RingArray:
        n = a.ndim - 1
        axes = tuple(range(n)) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if not _LITTLE or not all(isinstance(x, (int, np.integer)) and -n <= x < n for x in axes):
            return self._sum_limbs(a, axis)
        value_axes = tuple(int(x) % n for x in axes)
        if n - 1 not in value_axes:
            # Both words as 32-bit halves (a free view of little-endian words: (2, *shape, 2)), summed into words
            # by one reduction (no overflow below 2^32 terms); a reduction over the last value axis would run on
            # the halves' axis of length 2, which numpy does slowly: that case takes the copies below
            halves = np.ascontiguousarray(a).view(np.uint32).reshape((*a.shape, 2))
            sums = np.add.reduce(halves, axis=tuple(x + 1 for x in value_axes), dtype=np.uint64)
            s0, s1 = sums[0, ..., 0], sums[0, ..., 1]
            high = np.left_shift(sums[1, ..., 1], _S32A)
            high += sums[1, ..., 0]
        else:
            # the low word's 32-bit halves and the high word as three rows of one array, one reduction
            parts = np.empty((3, *a.shape[1:]), dtype=np.uint64)
            np.bitwise_and(a[0, ...], _M32A, out=parts[0, ...])
            np.right_shift(a[0, ...], _S32A, out=parts[1, ...])
            parts[2, ...] = a[1, ...]
            sums = np.add.reduce(parts, axis=tuple(x + 1 for x in value_axes))
            s0, s1, high = sums[0, ...], sums[1, ...], sums[2, ...]
        # the low halves' sum carries into the high word
        out = np.empty((2, *np.shape(s0)), dtype=np.uint64)
        lo, hi = out[0, ...], out[1, ...]
        np.left_shift(s1, _S32A, out=lo)
        lo += s0
        np.right_shift(s1, _S32A, out=hi)
        hi += high
        hi += lo < s0
        return out

    def _sum_limbs(self, a: RingArray, axis: int | tuple[int, ...] | None) -> RingArray:
        if axis is None:
            axes: tuple[int, ...] | int = tuple(range(a.ndim - 1))
        elif isinstance(axis, int):
            axes = axis
        else:
            axes = tuple(axis)
        # Sum the 32-bit halves of the low words separately (no overflow below 2^32 terms), then carry.
        s0 = np.asarray(np.sum(a[0] & _M32, axis=axes, dtype=np.uint64), dtype=np.uint64)
        s1 = np.asarray(np.sum(a[0] >> _U64(32), axis=axes, dtype=np.uint64), dtype=np.uint64)
        sh = np.asarray(np.sum(a[1], axis=axes, dtype=np.uint64), dtype=np.uint64)
        lo = s0 + (s1 << _U64(32))
        carry = (lo < s0).astype(np.uint64)
        return self._join(lo, sh + (s1 >> _U64(32)) + carry)

    def shr(self, a: RingArray, k: int) -> RingArray:
        if k == 0:
            return a.copy()
        if k >= 128:
            return self.zeros(a.shape[1:])
        out = np.empty(a.shape, dtype=np.uint64)
        lo, hi = out[:1], out[1:]
        if k < 64:
            np.right_shift(a[:1], _U64(k), out=lo)
            lo |= a[1:] << _U64(64 - k)
            np.right_shift(a[1:], _U64(k), out=hi)
        else:
            np.right_shift(a[1:], _U64(k - 64), out=lo)
            hi.fill(0)
        return out

    def shl(self, a: RingArray, k: int) -> RingArray:
        if k == 0:
            return a.copy()
        if k >= 128:
            return self.zeros(a.shape[1:])
        out = np.empty(a.shape, dtype=np.uint64)
        lo, hi = out[:1], out[1:]
        if k < 64:
            np.left_shift(a[1:], _U64(k), out=hi)
            hi |= a[:1] >> _U64(64 - k)
            np.left_shift(a[:1], _U64(k), out=lo)
        else:
            np.left_shift(a[:1], _U64(k - 64), out=hi)
            lo.fill(0)
        return out

    def clear_msb(self, a: RingArray) -> RingArray:
        return self._join(a[0], a[1] & _U64((1 << 63) - 1))

    def msb(self, a: RingArray) -> RingArray:
        top: RingArray = a[1] >> _U64(63)
        return top

    @property
    def words(self) -> int:
        return 2

    def low_words(self, a: RingArray) -> RingArray:
        return np.stack([a[0], a[1] & _U64((1 << 63) - 1)])

    def bit_words(self, a: RingArray) -> RingArray:
        return a.copy()

    def from_bit_words(self, w: RingArray) -> RingArray:
        return w.copy()

    def from_int(self, k: IntLike) -> RingArray:
        if isinstance(k, (int, np.integer)):
            v = int(k) % (1 << 128)
            return np.array([v & ((1 << 64) - 1), v >> 64], dtype=np.uint64)
        arr = as_array(k, "k")
        if arr.dtype == object:
            flat = [int(x) % (1 << 128) for x in exact_integers(arr, "k").reshape(-1).tolist()]
            lo = np.array([x & ((1 << 64) - 1) for x in flat], dtype=np.uint64).reshape(arr.shape)
            hi = np.array([x >> 64 for x in flat], dtype=np.uint64).reshape(arr.shape)
            return self._join(lo, hi)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ParameterError(explain("k", arr.dtype, "integers", "round public constants before use"))
        if arr.dtype == np.uint64:
            unsigned = arr.astype(np.uint64)
            return self._join(unsigned, np.zeros_like(unsigned))
        signed = arr.astype(np.int64)
        return self._join(signed.astype(np.uint64), np.where(signed < 0, _U64(2**64 - 1), _U64(0)))

    def to_object(self, a: RingArray, *, signed: bool = True) -> npt.NDArray[np.object_]:
        flat = [int(lo) | (int(hi) << 64) for lo, hi in zip(a[0].reshape(-1), a[1].reshape(-1), strict=True)]
        if signed:
            flat = [x - (1 << 128) if x >= 1 << 127 else x for x in flat]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(a.shape[1:])

    def from_rounded_float(self, v: npt.NDArray[np.float64]) -> RingArray:
        v = np.asarray(v, dtype=np.float64)
        if not v.size or (np.maximum.reduce(v, axis=None) < 2.0**63 and np.minimum.reduce(v, axis=None) >= -(2.0**63)):
            # within int64: the two's complement word (converted straight into the low limb), and the sign
            # extended into the high word
            words = np.empty((2, *v.shape), dtype=np.uint64)
            signed = words[0, ...].view(np.int64)
            np.copyto(signed, v, casting="unsafe")
            np.right_shift(signed, np.int64(63), out=words[1, ...].view(np.int64))
            return words
        # |v| < 2^127 is an integer-valued float: its high word floor(|v| / 2^64) and the remainder are exact.
        mag = np.abs(v)
        hi_f = np.floor(mag * 2.0**-64)
        lo_f = mag - hi_f * 2.0**64
        out = self._join(lo_f.astype(np.uint64), hi_f.astype(np.uint64))
        negative = v < 0
        if np.any(negative):
            out = np.where(negative, self.neg(out), out)
        return out

    def to_float(self, a: RingArray) -> npt.NDArray[np.float64]:
        negative = a[1] >= _U64(1 << 63)
        mag = np.where(negative, self.neg(a), a)
        value = mag[1].astype(np.float64) * 2.0**64 + mag[0].astype(np.float64)
        signed: npt.NDArray[np.float64] = np.where(negative, -value, value)
        return signed
