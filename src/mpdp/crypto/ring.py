"""The rings Z_2^l that additive secret shares live in, vectorised on numpy ``uint64``.

Two families, one interface (:class:`Ring`):

* :class:`Z2k` for ``2 <= l <= 64``: one ``uint64`` word per element. Native numpy arithmetic already wraps
  modulo 2^64; for ``l < 64`` every result is masked to ``l`` bits (small rings exist so that protocols can
  be tested exhaustively over every element).
* :class:`Z2_128` for ``l = 128``: two ``uint64`` limbs per element, stored as one array of shape
  ``(2, *shape)`` holding ``(low, high)``. This is the wide ring of the high-precision formats.

An element array of a ring is always ``numpy.uint64``; ``ring.shape(a)`` is the shape of the *values* it
holds (for Z_2^128 that drops the leading limb axis). Signed values use two's complement: the residue
``a`` stands for ``a - 2^l`` when ``a >= 2^(l-1)``.

Matrix products: operands are split into 22-bit limbs held exactly in float64, limb products are BLAS
``float64`` matmuls over chunks of at most 512 rows of the inner dimension (``512 * (2^22 - 1)^2 < 2^53``, so
every partial sum is an exact integer), summed per shift as words and recombined modulo 2^l (see
:func:`_limb_matmul`). One-word rings take numpy's own uint64 ``matmul`` instead (no BLAS, but it wraps
modulo 2^64, the ring's arithmetic) where a measured cost model says it is faster: small or narrow products
such as the DPVI step's 124 x 100 @ 100 x 10. :meth:`Ring.matmul_sum` computes Beaver's ``d @ f + a @ e`` as
one product over the joined inner dimension.
"""

from __future__ import annotations

import abc
import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NoReturn, Protocol

import numpy as np
import numpy.typing as npt

from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError, explain

__all__ = ["Z2_128", "Ring", "RingArray", "UniformSource", "Z2k", "ring_for_bits"]

RingArray = npt.NDArray[np.uint64]


class UniformSource(Protocol):
    """What ring sampling needs from a random source (RandomSource and AesCtrPrg both provide it)."""

    def uint64(self, shape: Any) -> npt.NDArray[np.uint64]: ...

    def ring(self, shape: Any, bits: int = 64) -> npt.NDArray[np.uint64]: ...

    def bits(self, shape: Any) -> npt.NDArray[np.uint8]: ...

IntLike = int | npt.NDArray[np.int64] | npt.NDArray[np.uint64] | npt.NDArray[np.object_]

_U64 = np.uint64
_LITTLE = sys.byteorder == "little"  # uint64 words viewed as (low, high) uint32 halves
_M32 = _U64(0xFFFFFFFF)
_LIMB = 22
_LIMB_MASK = _U64((1 << _LIMB) - 1)
_CHUNK = 512  # inner-dimension rows per float64 matmul: 512 * (2^22 - 1)^2 < 2^53


def _mulhilo(a: RingArray, b: RingArray) -> tuple[RingArray, RingArray]:
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


def _mulhi(a: RingArray, b: RingArray | np.uint64, out: RingArray | None = None) -> RingArray:
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
    """:func:`_mulhi` for a 0-d ``a`` (same arithmetic, on the values numpy returns)."""
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


_ROWS_EXACT = 1 << 18  # inner rows whose limb sums at shifts below 64 stay exact words: 3 * 2^18 * 2^44 < 2^64


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
            words[2] |= src[1] << _U64(64 - 2 * _LIMB)  # bits 44..65: the high word's lowest 2 bits
        else:
            np.right_shift(src, _SHIFTS[0].reshape((3,) + (1,) * len(shape)), out=words)
    else:  # (..., K, L, n): the limbs interleaved with the columns
        words = np.empty((*shape[:-1], count, shape[-1]), dtype=np.uint64)
        if wide:
            pair = np.moveaxis(src, 0, -2)[..., None, :]  # (..., K, 2, 1, n)
            np.right_shift(pair, _SHIFTS[:, :, None], out=words.reshape((*shape[:-1], 2, 3, shape[-1])))
            words[..., 2, :] |= src[1] << _U64(64 - 2 * _LIMB)
        else:
            np.right_shift(src[..., None, :], _SHIFTS[0][:, None], out=words)
    words &= _LIMB_MASK  # the top limb is below 2^20 already: the mask leaves it alone
    words |= _EXP52
    out: npt.NDArray[np.float64] = words.view(np.float64)
    out -= _TWO52
    return out


_SHIFTS = np.array([[0, _LIMB, 2 * _LIMB], [3 * _LIMB - 64, 4 * _LIMB - 64, 5 * _LIMB - 64]],
                   dtype=np.uint64)  # limbs 0..2 from the low word, 3..5 from the high one
_EXP52 = _U64(0x4330000000000000)  # the bits of the float64 2^52: ORed into w < 2^52 gives the float 2^52 + w
_TWO52 = np.float64(2.0**52)


def _limb_matmul(pairs: Sequence[tuple[RingArray, RingArray]], wide: bool) -> list[RingArray]:
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
    ``K <= _ROWS_EXACT``; the caller splits longer products. The others only matter modulo
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
    """:func:`_limb_matmul` for wide results: B's limbs contiguous on a first axis (``(L, ..., K, n)``) and
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


def _narrow(a: RingArray, b: RingArray) -> bool:
    """Whether numpy's (non-BLAS, wrapping) uint64 matmul beats the limb products for one-word ``a @ b``.

    Measured here: ~1 ns per multiply-add for the integer matmul, against ~0.3 ns for the limb BLAS products
    plus ~14 ns per element of the operands and the result (limb extraction, conversions, shift sums) and
    ~20 us fixed: the integer matmul wins when ``macs < 20 elements + 30000`` (the DPVI step's 124 x 100 @
    100 x 10: ~2.7x; a 128 x 128 square product or larger: the limbs).
    """
    k = max(a.shape[-1], 1)
    macs = a.size * b.size // k
    return bool(macs < 20 * (a.size + b.size + macs // k) + 30_000)


def _joinable(pairs: Sequence[tuple[RingArray, RingArray]]) -> bool:
    """Whether products can share one limb matmul: the operands of every pair have the first pair's shapes."""
    if not pairs:
        return False
    a0, b0 = pairs[0]
    return all(a.shape == a0.shape and b.shape == b0.shape for a, b in pairs[1:])


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


class Ring(abc.ABC):
    """The ring Z_2^bits with vectorised element arrays (see the module docstring for the layout)."""

    bits: int

    @property
    def modulus(self) -> int:
        return 1 << self.bits

    # -- layout -------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def shape(self, a: RingArray) -> tuple[int, ...]:
        """The shape of the values held by element array ``a``."""

    @abc.abstractmethod
    def zeros(self, shape: tuple[int, ...]) -> RingArray: ...

    @abc.abstractmethod
    def random(self, rng: UniformSource, shape: tuple[int, ...]) -> RingArray:
        """Uniform elements."""

    @abc.abstractmethod
    def check(self, a: Any, what: str, *, received: bool = False) -> RingArray:
        """``a`` as a valid element array of this ring, or :class:`~mpdp.errors.ParameterError`; with
        ``received``, for values another party sent, :class:`~mpdp.errors.MalformedMessageError` (the peer's
        message is at fault, not this party's arguments)."""

    @staticmethod
    def _refuse(what: str, got: Any, expected: str, fix: str, received: bool) -> NoReturn:
        """Raise the error :meth:`check` names: ``ParameterError`` with ``fix``, or for ``received`` values
        ``MalformedMessageError`` pointing at the sender."""
        if received:
            raise MalformedMessageError(explain(what, got, expected, "the sender's values are not of this ring: "
                                                "check that every party runs the same program and mpdp version"))
        raise ParameterError(explain(what, got, expected, fix))

    @abc.abstractmethod
    def apply(self, a: RingArray, fn: Any) -> RingArray:
        """Apply a shape operation (indexing, reshape, transpose, ...) to the values: ``fn(value_array)``."""

    @abc.abstractmethod
    def combine(self, arrays: Sequence[RingArray], fn: Any) -> RingArray:
        """Apply a many-array shape operation (concatenate, stack) to the values of ``arrays``."""

    # The common shape operations by name (numpy semantics on the values): a ring whose layout allows it does
    # them in one call on the element array instead of once per limb (Z_2^128).
    def index(self, a: RingArray, key: Any) -> RingArray:
        """``values[key]``."""
        return self.apply(a, lambda v: v[key])

    def reshape(self, a: RingArray, shape: int | tuple[int, ...]) -> RingArray:
        """``values.reshape(shape)``."""
        return self.apply(a, lambda v: v.reshape(shape))

    def transpose(self, a: RingArray, axes: tuple[int, ...] = ()) -> RingArray:
        """``values.transpose(*axes)`` (reversed axes when ``axes`` is empty)."""
        return self.apply(a, lambda v: v.transpose(*axes) if axes else v.T)

    def broadcast_to(self, a: RingArray, shape: tuple[int, ...]) -> RingArray:
        """``numpy.broadcast_to(values, shape)``, as a new array."""
        return self.apply(a, lambda v: np.broadcast_to(v, shape).copy())

    def concatenate(self, arrays: Sequence[RingArray], axis: int = 0) -> RingArray:
        """``numpy.concatenate`` of the values."""
        return self.combine(arrays, lambda values: np.concatenate(values, axis=axis))

    def stack(self, arrays: Sequence[RingArray], axis: int = 0) -> RingArray:
        """``numpy.stack`` of the values."""
        return self.combine(arrays, lambda values: np.stack(values, axis=axis))

    # -- arithmetic ---------------------------------------------------------------------------------------
    @abc.abstractmethod
    def add(self, a: RingArray, b: RingArray) -> RingArray: ...

    @abc.abstractmethod
    def sub(self, a: RingArray, b: RingArray) -> RingArray: ...

    @abc.abstractmethod
    def neg(self, a: RingArray) -> RingArray: ...

    @abc.abstractmethod
    def mul(self, a: RingArray, b: RingArray) -> RingArray:
        """Elementwise product (numpy broadcasting over the value shapes)."""

    def add_int(self, a: RingArray, k: int) -> RingArray:
        """``a + k`` for one public Python int ``k`` (of any size, reduced mod 2^bits) added to every element."""
        return self.add(a, self.from_int(k))

    @abc.abstractmethod
    def mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        """Product with public integers ``k`` (a Python int of any size or an int64/object array)."""

    @abc.abstractmethod
    def matmul(self, a: RingArray, b: RingArray) -> RingArray:
        """Matrix product over the last two value axes (numpy ``@`` semantics, 2-D or stacked)."""

    def matmul_sum(self, pairs: Sequence[tuple[RingArray, RingArray]]) -> RingArray:
        """``sum(a @ b for a, b in pairs)``: one product over the joined inner dimension when every pair's
        operands have the same shapes (e.g. Beaver's ``d @ B + A @ e``), else a sum of products."""
        if not pairs:
            raise ShapeMismatchError(explain("pairs", "[]", "at least one (a, b) pair", "pass the products to add"))
        out = self.matmul(*pairs[0])
        for a, b in pairs[1:]:
            out = self.add(out, self.matmul(a, b))
        return out

    @abc.abstractmethod
    def sum(self, a: RingArray, axis: int | tuple[int, ...] | None) -> RingArray: ...

    @abc.abstractmethod
    def shr(self, a: RingArray, k: int) -> RingArray:
        """Logical right shift of the residues by ``k`` bits (floor division by 2^k of ``a`` in [0, 2^l))."""

    @abc.abstractmethod
    def shl(self, a: RingArray, k: int) -> RingArray:
        """Left shift by ``k`` bits (multiplication by 2^k)."""

    @abc.abstractmethod
    def clear_msb(self, a: RingArray) -> RingArray:
        """The residues without their top bit (``a mod 2^(l-1)``)."""

    @abc.abstractmethod
    def msb(self, a: RingArray) -> RingArray:
        """The top bit of each residue, as uint64 0/1 of the value shape."""

    @abc.abstractmethod
    def low_words(self, a: RingArray) -> RingArray:
        """The residues without their top bit, as ``(words, *shape)`` uint64 bit-packed words."""

    @property
    @abc.abstractmethod
    def words(self) -> int:
        """How many 64-bit words :meth:`low_words` and :meth:`bit_words` use per element."""

    @abc.abstractmethod
    def bit_words(self, a: RingArray) -> RingArray:
        """All bits of the residues as ``(words, *shape)`` words (top bit at position bits-1)."""

    @abc.abstractmethod
    def from_bit_words(self, w: RingArray) -> RingArray:
        """Inverse of :meth:`bit_words`."""

    # -- conversion ---------------------------------------------------------------------------------------
    @abc.abstractmethod
    def from_int(self, k: IntLike) -> RingArray:
        """Residues of public integers (Python int, int64 array or object array of ints)."""

    @abc.abstractmethod
    def to_object(self, a: RingArray, *, signed: bool = True) -> npt.NDArray[np.object_]:
        """Exact Python-int values (two's complement when ``signed``), as an object array."""

    @abc.abstractmethod
    def from_rounded_float(self, v: npt.NDArray[np.float64]) -> RingArray:
        """Residues of integer-valued floats ``v`` with ``|v| < 2^(bits-1)`` (caller checks the range)."""

    @abc.abstractmethod
    def to_float(self, a: RingArray) -> npt.NDArray[np.float64]:
        """Signed values as float64 (rounded to 53 bits)."""

    def __repr__(self) -> str:
        return f"Z_2^{self.bits}"


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
        return self._m(np.add(a, _U64(k % (1 << 64))))

    def mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        return self._m(np.multiply(a, self.from_int(k)))

    def matmul(self, a: RingArray, b: RingArray) -> RingArray:
        return self.matmul_sum([(a, b)])

    def matmul_sum(self, pairs: Sequence[tuple[RingArray, RingArray]]) -> RingArray:
        if pairs and all(_narrow(a, b) for a, b in pairs):
            # numpy's own uint64 matmul wraps modulo 2^64, the ring's arithmetic: no limbs needed, and for
            # small or narrow products (the DPVI step's 124 x 100 @ 100 x 10) faster than limb BLAS products
            out = np.asarray(np.matmul(*pairs[0]), dtype=np.uint64)
            for a, b in pairs[1:]:
                out += np.matmul(a, b)
            return self._m(out)
        if not _joinable(pairs):
            return super().matmul_sum(pairs)
        # Residues below 2^64 in three 22-bit limbs (see _limb_matmul); the shift sums may wrap: only their
        # total modulo 2^64 matters.
        vector = pairs[0][1].ndim == 1
        s0, s1, s2 = _limb_matmul([(a, b[:, None]) for a, b in pairs] if vector else pairs, wide=False)
        out = s1 << _U64(_LIMB)
        out += s0
        s2 <<= _U64(2 * _LIMB)
        out += s2
        return self._m(out[..., 0] if vector else out)  # 0-d arrays for vector . vector, wrapping silently

    def sum(self, a: RingArray, axis: int | tuple[int, ...] | None) -> RingArray:
        # the ufunc's reduce directly: np.sum's Python wrapper showed in the DPVI step's profile
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
        arr = np.asarray(k)
        if arr.dtype == object:
            flat = [int(x) % (1 << 64) for x in arr.reshape(-1)]
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
            # integers picking along the first value axis: np.take, ~4x cheaper than the fancy index
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
        k %= 1 << 128
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
        high = _mulhi(a0, b0, out[1, ...])
        t = np.multiply(a[1, ...], b0)  # the cross terms, both of the result's shape, through one temporary
        high += t
        high += np.multiply(a0, b[1, ...], out=t) if type(t) is np.ndarray else a0 * b[1, ...]
        return out

    def mul_int(self, a: RingArray, k: IntLike) -> RingArray:
        if isinstance(k, int) and k > 0 and k & (k - 1) == 0:  # a power of two (scale lifts): a shift
            return self.shl(a, k.bit_length() - 1)
        if isinstance(k, (int, np.integer)) or (isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype != object):
            return self._mul_scalar(a, int(k) % (1 << 128))
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
        hi[...] = _mulhi(a[0, ...], k0)
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
        high = _mulhi(a[0, ...], k0, out[1, ...])
        high += a[1, ...] * k0
        if k1:
            high += a[0, ...] * k1
        return out

    def matmul(self, a: RingArray, b: RingArray) -> RingArray:
        return self.matmul_sum([(a, b)])

    def matmul_sum(self, pairs: Sequence[tuple[RingArray, RingArray]]) -> RingArray:
        if not _joinable(pairs):
            return super().matmul_sum(pairs)
        # Six 22-bit limbs (see _limb_matmul): the 21 limb products of weight below 2^128 summed on 6 shifts.
        # Products longer than _ROWS_EXACT joined inner rows are computed in runs of that many rows, then added.
        vector = pairs[0][1].ndim == 2
        if vector:
            pairs = [(a, b[..., None]) for a, b in pairs]
        k = pairs[0][0].shape[-1]
        step = max(1, _ROWS_EXACT // len(pairs))
        out: RingArray | None = None
        for start in range(0, max(k, 1), step):
            run = slice(start, min(start + step, k))
            if run.stop - run.start == k:
                part = self._from_shift_sums(_limb_matmul(pairs, wide=True))
            else:
                part = self._from_shift_sums(_limb_matmul([(a[..., run], b[..., run, :]) for a, b in pairs], wide=True))
            out = part if out is None else self.add(out, part)
        if out is None:  # pragma: no cover - at least one run
            raise ShapeMismatchError("empty matmul")
        return out[..., 0] if vector else out

    @staticmethod
    def _from_shift_sums(sums: Sequence[RingArray]) -> RingArray:
        """``sum_t S_t 2^(22 t)`` modulo 2^128 for the shift sums of :func:`_limb_matmul` (overwrites them)."""
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
        arr = np.asarray(k)
        if arr.dtype == object:
            flat = [int(x) % (1 << 128) for x in arr.reshape(-1)]
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


def ring_for_bits(bits: int) -> Ring:
    """The ring Z_2^bits: :class:`Z2k` up to 64 bits, :class:`Z2_128` for 128."""
    if type(bits) is int and (bits == 128 or 2 <= bits <= 64):
        return _RINGS[bits]
    if bits == 128:
        return Z2_128()
    return Z2k(bits)


_RINGS: dict[int, Ring] = {bits: Z2k(bits) for bits in range(2, 65)} | {128: Z2_128()}  # rings are immutable
