"""Exact integer inputs: arrays of integers taken at their exact value, never truncated, rounded or wrapped.

Every API that takes integers (field and ring elements, shares, secure sums, integer DP releases) reads them
with :func:`exact_integers` or :func:`int64_array`, so a float such as ``1.7`` is refused instead of becoming
``1``, a NaN or infinity gets a typed error instead of a raw ``ValueError``/``OverflowError``, and a Python int
beyond int64 is kept exact (or refused where the API is int64) instead of wrapping.

Accepted: numpy integer and bool arrays, Python ints of any size (alone, in lists or object arrays), and floats
whose value is an integer (taken at their exact binary value, like ``float.is_integer``). Refused, with the
name of the argument, what was received and the fix: non-integral floats
(:class:`~mpdp.errors.DomainError`), NaN and infinities (:class:`~mpdp.errors.DomainError`), strings, complex
numbers and other objects (:class:`~mpdp.errors.ParameterError`), and ragged nested lists
(:class:`~mpdp.errors.ShapeMismatchError`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, EncodingOverflowError, ParameterError, ShapeMismatchError, explain

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "as_array",
    "exact_add",
    "exact_integers",
    "fits_int64",
    "int64_array",
    "positive_finite",
    "real_array",
]

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
_FIX = "pass integers (round reals explicitly, or use a fixed-point encoding where the API offers one)"


def as_array(values: Any, what: str) -> npt.NDArray[Any]:
    """``np.asarray(values)``, with ragged or unconvertible input as a typed error instead of numpy's."""
    try:
        return np.asarray(values)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ShapeMismatchError(explain(what, type(values).__name__, "a rectangular array (equal-length rows)",
                                         "pass rows of one length")) from exc


def real_array(values: Any, what: str) -> npt.NDArray[np.float64]:
    """``values`` as float64 (bools, ints of any size and floats; NaN and infinities pass, for the caller's
    range check); strings, None, complex numbers, other objects and ragged lists are a
    :class:`~mpdp.errors.ParameterError` instead of numpy's raw ``ValueError``/``TypeError``."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        return values
    arr = as_array(values, what)
    if arr.dtype.kind == "O" and not all(
        isinstance(v, int | float | np.integer | np.floating) or type(v).__name__ == "mpz"
        for v in arr.reshape(-1).tolist()
    ):
        arr = np.asarray(["not a number"])  # refused below
    if arr.dtype.kind not in "biufO":
        raise ParameterError(explain(what, values, "real numbers (a float or int array)",
                                     "pass numbers, not strings or objects"))
    try:
        return arr.astype(np.float64)
    except OverflowError:  # an int beyond the float range
        return np.where(np.array([v > 0 for v in arr.reshape(-1).tolist()]).reshape(arr.shape), np.inf, -np.inf)


def positive_finite(value: Any, what: str, fix: str | None = None) -> float:
    """``value`` (an int or float, not a bool) as a finite float > 0, or a
    :class:`~mpdp.errors.ParameterError` (also for strings, None, ints beyond the float range)."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise TypeError(type(value).__name__)
        number = float(value)
    except (TypeError, OverflowError) as exc:
        raise ParameterError(explain(what, value, "a finite number > 0", fix or f"pass e.g. {what}=1.0")) from exc
    if not (math.isfinite(number) and number > 0):
        raise ParameterError(explain(what, value, "a finite number > 0", fix or f"pass e.g. {what}=1.0"))
    return number


def _exact_int(value: Any, what: str, fix: str) -> int:
    """One element as an exact Python int (see the module docstring for what is accepted)."""
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            raise DomainError(explain(what, "NaN or infinity", "finite integers", "clean the input first"))
        if not number.is_integer():
            raise DomainError(explain(what, number, "integers (a float with a fraction is not rounded)", fix))
        return int(number)
    if type(value).__name__ == "mpz":
        return int(value)
    raise ParameterError(explain(what, value, "integers", fix))


def exact_integers(values: Any, what: str, *, fix: str = _FIX) -> npt.NDArray[Any]:
    """``values`` as exact integers with their shape: an int64 array when every value fits int64, else an
    object array of Python ints. Refuses everything that is not an integer (see the module docstring)."""
    arr = as_array(values, what)
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.int64)
    if kind == "i":
        return arr.astype(np.int64)
    if kind == "u":
        if arr.size and int(np.max(arr)) > INT64_MAX:
            return _objects([int(v) for v in arr.reshape(-1).tolist()], arr.shape)
        return arr.astype(np.int64)
    if kind == "f":
        if arr.size and not np.all(np.isfinite(arr)):
            raise DomainError(explain(what, "NaN or infinity", "finite integers", "clean the input first"))
        if arr.size and not np.all(arr == np.trunc(arr)):
            bad = arr.reshape(-1)[np.flatnonzero(arr.reshape(-1) != np.trunc(arr.reshape(-1)))[0]]
            raise DomainError(explain(what, float(bad), "integers (a float with a fraction is not rounded)", fix))
        if not arr.size or float(np.max(np.abs(arr))) < 2.0**63:
            return arr.astype(np.int64)  # exact: integral floats below 2^63
        return _narrow(_objects([int(v) for v in arr.reshape(-1).tolist()], arr.shape))
    if kind == "O":
        return _narrow(_objects([_exact_int(v, what, fix) for v in arr.reshape(-1).tolist()], arr.shape))
    raise ParameterError(explain(what, f"{arr.dtype} values", "integers", fix))


def int64_array(values: Any, what: str, *, fix: str = _FIX) -> npt.NDArray[np.int64]:
    """``values`` as an int64 array (:func:`exact_integers`); a value beyond int64 is an
    :class:`~mpdp.errors.EncodingOverflowError`, never wrapped."""
    out = exact_integers(values, what, fix=fix)
    if out.dtype == object:
        worst = max((abs(v) for v in out.reshape(-1).tolist()), default=0)
        raise EncodingOverflowError(explain(what, f"a value of {worst.bit_length()} bits", "int64 values "
                                            "(|x| < 2^63)", "rescale the data"))
    return out


def fits_int64(values: npt.NDArray[Any]) -> bool:
    """True when every value of an int64 or object array of ints lies in int64."""
    if values.dtype != object:
        return True
    return all(INT64_MIN <= v <= INT64_MAX for v in values.reshape(-1).tolist())


def exact_add(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a + b`` exactly for int64 or object arrays of ints (broadcasting): int64 when every sum fits,
    else an object array of Python ints. An int64 sum that wraps is detected (the operands share a sign the
    result lacks) and recomputed on Python ints."""
    if a.dtype != object and b.dtype != object:
        x, y = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
        total = np.add(x, y)  # wraps modulo 2^64 where it overflows; checked next
        if not np.any(((x ^ total) & (y ^ total)) < 0):
            return total
    x_obj, y_obj = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    return _narrow(_objects([int(u) + int(v) for u, v in zip(x_obj.reshape(-1).tolist(),
                                                              y_obj.reshape(-1).tolist(), strict=True)],
                            x_obj.shape))


def _objects(flat: list[int], shape: tuple[int, ...]) -> npt.NDArray[Any]:
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(shape)


def _narrow(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An object array of ints as int64 when every value fits, else unchanged."""
    return values.astype(np.int64) if fits_int64(values) else values
