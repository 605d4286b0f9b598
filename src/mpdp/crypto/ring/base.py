"""The interface every ring Z_2^l implements, and the array and random-source types it works on.

An element array of a ring is always ``numpy.uint64``; ``ring.shape(a)`` is the shape of the *values* it
holds (for Z_2^128, whose elements are two words, that drops the leading limb axis). Signed values use two's
complement: the residue ``a`` stands for ``a - 2^l`` when ``a >= 2^(l-1)``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

import numpy as np
import numpy.typing as npt

from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError, explain

__all__ = ["IntLike", "Ring", "RingArray", "UniformSource"]

RingArray = npt.NDArray[np.uint64]
"""An element array of a ring: one ``uint64`` word per value, or ``(2, *shape)`` words for Z_2^128."""

IntLike = int | npt.NDArray[np.int64] | npt.NDArray[np.uint64] | npt.NDArray[np.object_]
"""Public integers a ring takes: a Python int of any size, or an int64, uint64 or object array of ints."""


class UniformSource(Protocol):
    """What ring sampling needs from a random source (RandomSource and AesCtrPrg both provide it)."""

    def uint64(self, shape: Any) -> npt.NDArray[np.uint64]: ...

    def ring(self, shape: Any, bits: int = 64) -> npt.NDArray[np.uint64]: ...

    def bits(self, shape: Any) -> npt.NDArray[np.uint8]: ...


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
    def int_constant(k: Any, what: str = "k") -> int:
        """A public integer constant as a Python int (reduced by the caller); floats, strings and other objects
        are a :class:`~mpdp.errors.ParameterError`, never truncated (``1.7`` is not the constant 1)."""
        if isinstance(k, int | np.integer):
            return int(k)
        if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iub":
            return int(k)
        if type(k).__name__ == "mpz":
            return int(k)
        raise ParameterError(explain(what, k, "an integer", "round public constants before use, or encode reals "
                                     "with a FixedPointFormat"))

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

