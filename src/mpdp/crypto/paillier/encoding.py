"""Fixed-point encoding of reals as Paillier plaintext integers, with one public scale per protocol.

A real x is encoded as the integer round(x 2^f) for a fixed number of fractional bits f that every party
agrees on beforehand. Unlike ``phe``'s default encoding there is no per-value exponent: a per-value exponent
travels in the clear next to the ciphertext and reveals the magnitude of the value.

Each :class:`FixedPoint` also declares ``max_abs``, the largest |x| it accepts. The declared bound, not the
data, is what ciphertexts carry forward as their public bound on |plaintext| (see
:class:`~mpdp.crypto.paillier.ciphertext.EncryptedArray`), so the bound itself leaks nothing about the values.

Accuracy
--------
Encoding rounds to nearest (ties to even): |x - decode(encode(x))| <= 2^-(f+1). Integer inputs (numpy integer
dtypes, Python ints) are exact. Decoding is exact up to the final rounding to float64 (Python's correctly
rounded int / int).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, EncodingOverflowError, ParameterError, explain
from mpdp.numeric import as_array

__all__ = ["FixedPoint", "decode_ints"]

_INT64_SAFE = 1 << 62


@dataclass(frozen=True)
class FixedPoint:
    """A public fixed-point format: ``frac_bits`` fractional bits, values with |x| <= ``max_abs``.

    >>> codec = FixedPoint(frac_bits=16, max_abs=1.0)
    >>> codec.encode([0.5, -1.0]).tolist(), codec.bound
    ([32768, -65536], 65536)
    """

    frac_bits: int
    max_abs: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.frac_bits, bool) or not isinstance(self.frac_bits, int) or not 0 <= self.frac_bits <= 256:
            raise ParameterError(explain("frac_bits", self.frac_bits, "an int in [0, 256]",
                                         "pass e.g. FixedPoint(frac_bits=16, max_abs=1.0)"))
        if isinstance(self.max_abs, bool) or not isinstance(self.max_abs, (int, float)) or not (
            math.isfinite(self.max_abs) and self.max_abs > 0
        ):
            raise ParameterError(explain("max_abs", self.max_abs, "a finite number > 0",
                                         "pass the largest |value| the protocol will encode, e.g. max_abs=1.0"))
        if math.ldexp(float(self.max_abs), self.frac_bits) >= 2.0**900:
            raise ParameterError(explain("max_abs * 2^frac_bits", "more than 2^900", "a bound below 2^900",
                                         "use fewer fractional bits or a smaller max_abs"))

    @property
    def bound(self) -> int:
        """The largest |integer| an encoded value can have: ceil(max_abs 2^frac_bits)."""
        return math.ceil(math.ldexp(float(self.max_abs), self.frac_bits))

    def encode(self, values: Any) -> npt.NDArray[Any]:
        """Integers round(x 2^frac_bits) with the input's shape: int64 when they fit, else an object array.

        Raises :class:`~mpdp.errors.EncodingOverflowError` if some |x| > max_abs and
        :class:`~mpdp.errors.DomainError` for NaN or infinity.
        """
        array = as_array(values, "values")
        if array.dtype == object or array.dtype.kind in "iub":
            ints = np.asarray(_as_int_objects(array), dtype=object).reshape(array.shape)
            self._check_range(ints)
            if self.frac_bits:
                ints = np.asarray(np.frompyfunc(lambda v: v << self.frac_bits, 1, 1)(ints), dtype=object) \
                    if ints.size else ints
            return _narrow(ints, self.bound)
        if array.dtype.kind != "f":
            raise ParameterError(explain("values", str(array.dtype), "real numbers", "pass a float or int array"))
        floats = array.astype(np.float64)
        if not np.all(np.isfinite(floats)):
            raise DomainError(explain("values", "NaN or infinity", "finite numbers", "clean the input first"))
        self._check_range(floats)
        scaled = np.rint(np.ldexp(floats, self.frac_bits))
        if self.bound < _INT64_SAFE:
            return scaled.astype(np.int64)
        out = np.empty(scaled.shape, dtype=object)
        out.reshape(-1)[:] = [int(v) for v in scaled.reshape(-1)]
        return out

    def _check_range(self, values: npt.NDArray[Any]) -> None:
        if values.size == 0:
            return
        worst = max(abs(v) for v in values.reshape(-1).tolist()) if values.dtype == object else float(
            np.max(np.abs(values))
        )
        if worst > self.max_abs:
            raise EncodingOverflowError(
                explain("value", worst, f"|x| <= max_abs = {self.max_abs}",
                        "clip or rescale the data, or declare a larger max_abs (and check the packing headroom)")
            )

    def decode(self, ints: Any, frac_bits: int | None = None) -> npt.NDArray[np.float64]:
        """Reals from integers carrying ``frac_bits`` (default: this format's) fractional bits."""
        return decode_ints(ints, self.frac_bits if frac_bits is None else frac_bits)


def _as_int_objects(array: npt.NDArray[Any]) -> list[int]:
    flat = array.reshape(-1).tolist()
    for v in flat:
        if isinstance(v, bool) or (not isinstance(v, int) and type(v).__name__ != "mpz"):
            raise ParameterError(explain("value", v, "an int", "pass ints or floats, not mixed objects"))
    return [int(v) for v in flat]


def _narrow(ints: npt.NDArray[Any], bound: int) -> npt.NDArray[Any]:
    if bound < _INT64_SAFE:
        return ints.astype(np.int64)
    return ints


def decode_ints(ints: Any, frac_bits: int) -> npt.NDArray[np.float64]:
    """Reals x = m / 2^frac_bits for integers m (int64 or object array), each correctly rounded to float64."""
    array = np.asarray(ints)
    if array.dtype != object and array.dtype.kind in "iu":
        return np.ldexp(array.astype(np.float64), -frac_bits) if np.all(np.abs(array) < 1 << 53) else \
            decode_ints(array.astype(object), frac_bits)
    scale = 1 << frac_bits
    out = np.empty(array.shape, dtype=np.float64)
    out.reshape(-1)[:] = [int(v) / scale for v in array.reshape(-1).tolist()]
    return out
