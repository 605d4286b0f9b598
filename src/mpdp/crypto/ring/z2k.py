"""Z_2^l for 2 <= l <= 64 on one ``uint64`` word per element.

Native numpy arithmetic already wraps modulo 2^64; for ``l < 64`` every result is masked to ``l`` bits
(small rings exist so that protocols can be tested exhaustively over every element). Matrix products take
numpy's wrapping uint64 ``matmul`` or the exact limb products of :mod:`mpdp.crypto.ring.kernels`, whichever
its cost model says is cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring.base import IntLike, Ring, RingArray, UniformSource
from mpdp.crypto.ring.kernels import LIMB_BITS, joinable, limb_matmul, narrow_product
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.numeric import as_array, exact_integers

__all__ = ["Z2k"]

_U64 = np.uint64


@dataclass(frozen=True, repr=False)
class Z2k(Ring):
    """Z_2^bits for 2 <= bits <= 64 on one ``uint64`` word per element."""

    bits: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 2 <= self.bits <= 64:
            raise ParameterError(explain("bits", self.bits, "an int in [2, 64]", "use Z2_128() for 128 bits"))

    @cached_property
    def _mask(self) -> np.uint64 | None:
        return None if self.bits == 64 else _U64((1 << self.bits) - 1)

    def _m(self, a: RingArray) -> RingArray:
        # Also turns the numpy scalars that 0-d operands produce back into 0-d arrays.
        mask = self._mask
        if mask is not None:
            return np.asarray(np.bitwise_and(a, mask), dtype=np.uint64)
        return a if type(a) is np.ndarray else np.asarray(a, dtype=np.uint64)

    def reduce(self, fresh: RingArray) -> RingArray:
        """Words reduced to residues, in place: ``fresh`` must be a new array the caller owns."""
        mask = self._mask
        if mask is not None:
            np.bitwise_and(fresh, mask, out=fresh)
        return fresh

    def shape(self, a: RingArray) -> tuple[int, ...]:
        return tuple(a.shape)

    def zeros(self, shape: tuple[int, ...]) -> RingArray:
        return np.zeros(shape, dtype=np.uint64)

    def random(self, rng: UniformSource, shape: tuple[int, ...]) -> RingArray:
        return rng.ring(shape, self.bits)

    def check(self, a: Any, what: str, *, received: bool = False) -> RingArray:
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64:
            self._refuse(what, type(a).__name__, f"a uint64 array of {self!r}", "pass ring shares", received)
        if self._mask is not None and np.any(a > self._mask):
            self._refuse(what, "words >= 2^bits", f"residues of {self!r}", "reduce the shares", received)
        return a

    def apply(self, a: RingArray, fn: Any) -> RingArray:
        return np.asarray(fn(a), dtype=np.uint64)

    def combine(self, arrays: Sequence[RingArray], fn: Any) -> RingArray:
        return np.asarray(fn(list(arrays)), dtype=np.uint64)

    def broadcast_to(self, a: RingArray, shape: tuple[int, ...]) -> RingArray:
        out = np.empty(shape, dtype=np.uint64)
        out[...] = a  # broadcasts (numpy rules) or raises ValueError
        return out

    # numpy ufuncs wrap silently, also on 0-d operands (only Python operators on numpy scalars warn): no
    # np.errstate needed, which would cost more than the arithmetic on small arrays
    def add(self, a: RingArray, b: RingArray) -> RingArray:
        return self._m(np.add(a, b))

    def sub(self, a: RingArray, b: RingArray) -> RingArray:
        return self._m(np.subtract(a, b))

    def neg(self, a: RingArray) -> RingArray:
        return self._m(np.negative(a))

    def mul(self, a: RingArray, b: RingArray) -> RingArray:
        return self._m(np.multiply(a, b))

    def add_int(self, a: RingArray, k: int) -> RingArray:
        return self._m(np.add(a, _U64(self.int_constant(k) % (1 << 64))))

    def mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        factor = self.from_int(k)
        try:
            return self._m(np.multiply(a, factor))  # no cost when nothing is raised
        except ValueError as exc:  # shapes that do not broadcast
            raise ShapeMismatchError(explain("k", factor.shape, f"a scalar or a shape broadcasting to {a.shape}",
                                             "pass one constant, or one per element")) from exc

    def matmul(self, a: RingArray, b: RingArray) -> RingArray:
        return self.matmul_sum([(a, b)])

    def matmul_sum(self, pairs: Sequence[tuple[RingArray, RingArray]]) -> RingArray:
        if pairs and all(narrow_product(a, b) for a, b in pairs):
            # numpy's own uint64 matmul wraps modulo 2^64, the ring's arithmetic: no limbs needed, and for
            # small or narrow products (the DPVI step's 124 x 100 @ 100 x 10) cheaper than limb BLAS products
            out = np.asarray(np.matmul(*pairs[0]), dtype=np.uint64)
            for a, b in pairs[1:]:
                out += np.matmul(a, b)
            return self._m(out)
        if not joinable(pairs):
            return super().matmul_sum(pairs)
        # Residues below 2^64 in three 22-bit limbs (see limb_matmul); the shift sums may wrap: only their
        # total modulo 2^64 matters.
        vector = pairs[0][1].ndim == 1
        s0, s1, s2 = limb_matmul([(a, b[:, None]) for a, b in pairs] if vector else pairs, wide=False)
        out = s1 << _U64(LIMB_BITS)
        out += s0
        s2 <<= _U64(2 * LIMB_BITS)
        out += s2
        return self._m(out[..., 0] if vector else out)  # 0-d arrays for vector . vector, wrapping silently

    def sum(self, a: RingArray, axis: int | tuple[int, ...] | None) -> RingArray:
        # the ufunc's reduce directly: np.sum's Python wrapper costs more than the reduction of small arrays
        return self._m(np.asarray(np.add.reduce(a, axis=axis, dtype=np.uint64), dtype=np.uint64))

    def shr(self, a: RingArray, k: int) -> RingArray:
        return self._m(a >> _U64(k) if k < 64 else np.zeros_like(a))

    def shl(self, a: RingArray, k: int) -> RingArray:
        return self._m(a << _U64(k) if k < 64 else np.zeros_like(a))

    def clear_msb(self, a: RingArray) -> RingArray:
        return a & _U64((1 << (self.bits - 1)) - 1)

    def msb(self, a: RingArray) -> RingArray:
        return (a >> _U64(self.bits - 1)) & _U64(1)

    @property
    def words(self) -> int:
        return 1

    def low_words(self, a: RingArray) -> RingArray:
        return (a & _U64((1 << (self.bits - 1)) - 1))[None]

    def bit_words(self, a: RingArray) -> RingArray:
        return a[None]

    def from_bit_words(self, w: RingArray) -> RingArray:
        return self._m(w[0])

    def from_int(self, k: IntLike) -> RingArray:
        if isinstance(k, (int, np.integer)):
            return np.asarray(_U64(int(k) % (1 << 64)), dtype=np.uint64)
        arr = as_array(k, "k")
        if arr.dtype == object:
            flat = [int(x) % (1 << 64) for x in exact_integers(arr, "k").reshape(-1).tolist()]
            return self._m(np.array(flat, dtype=np.uint64).reshape(arr.shape))
        if not np.issubdtype(arr.dtype, np.integer):
            raise ParameterError(explain("k", arr.dtype, "integers", "round public constants before use"))
        words = arr.astype(np.int64).astype(np.uint64) if arr.dtype != np.uint64 else arr.astype(np.uint64)
        return self._m(words)

    def to_object(self, a: RingArray, *, signed: bool = True) -> npt.NDArray[np.object_]:
        half, mod = 1 << (self.bits - 1), 1 << self.bits
        flat = [int(x) for x in a.reshape(-1)]
        if signed:
            flat = [x - mod if x >= half else x for x in flat]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(a.shape)

    def from_rounded_float(self, v: npt.NDArray[np.float64]) -> RingArray:
        return self._m(v.astype(np.int64).view(np.uint64))  # two's complement: a view, not a second copy

    def to_float(self, a: RingArray) -> npt.NDArray[np.float64]:
        if self.bits == 64:
            return a.view(np.int64).astype(np.float64)
        half = _U64(1 << (self.bits - 1))
        signed = a.astype(np.int64) - np.where(a >= half, np.int64(1 << (self.bits - 1)) * 2, np.int64(0))
        return signed.astype(np.float64)

