"""The rings Z_2^l that additive secret shares live in, vectorised on numpy ``uint64``.

Two families, one interface (:class:`Ring`, in :mod:`~mpdp.crypto.ring.base`):

* :class:`Z2k` for ``2 <= l <= 64`` (:mod:`~mpdp.crypto.ring.z2k`): one ``uint64`` word per element.
  Native numpy arithmetic already wraps modulo 2^64; for ``l < 64`` every result is masked to ``l`` bits
  (small rings exist so that protocols can be tested exhaustively over every element).
* :class:`Z2_128` for ``l = 128`` (:mod:`~mpdp.crypto.ring.z2_128`): two ``uint64`` limbs per element,
  stored as one array of shape ``(2, *shape)`` holding ``(low, high)``. This is the wide ring of the
  high-precision formats.

An element array of a ring is always ``numpy.uint64``; ``ring.shape(a)`` is the shape of the *values* it
holds (for Z_2^128 that drops the leading limb axis). Signed values use two's complement: the residue
``a`` stands for ``a - 2^l`` when ``a >= 2^(l-1)``.

Both rings build on the exact word kernels of :mod:`~mpdp.crypto.ring.kernels`: the 128-bit product of
64-bit words, and matrix products through float64 BLAS on 22-bit limbs (one-word rings take numpy's
wrapping uint64 ``matmul`` where that is cheaper). :meth:`Ring.matmul_sum` computes Beaver's
``d @ f + a @ e`` as one product over the joined inner dimension.
"""

from __future__ import annotations

import numpy as np

from mpdp.crypto.ring.base import IntLike, Ring, RingArray, UniformSource
from mpdp.crypto.ring.z2_128 import Z2_128
from mpdp.crypto.ring.z2k import Z2k

__all__ = ["Z2_128", "IntLike", "Ring", "RingArray", "UniformSource", "Z2k", "convert_unsigned", "ring_for_bits"]


def ring_for_bits(bits: int) -> Ring:
    """The ring Z_2^bits: :class:`Z2k` up to 64 bits, :class:`Z2_128` for 128."""
    if type(bits) is int and (bits == 128 or 2 <= bits <= 64):
        return _RINGS[bits]
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer):
        from mpdp.errors import ParameterError, explain

        raise ParameterError(explain("bits", bits, "an int in [2, 64] or 128", "pass e.g. bits=64"))
    if bits == 128:
        return Z2_128()
    return Z2k(bits)


_RINGS: dict[int, Ring] = {bits: Z2k(bits) for bits in range(2, 65)} | {128: Z2_128()}  # rings are immutable


def convert_unsigned(a: RingArray, src: Ring, dst: Ring) -> RingArray:
    """Residues ``a`` of ``src`` read as unsigned integers, reduced into ``dst``."""
    if src == dst:
        return a
    if isinstance(dst, Z2_128):
        if isinstance(src, Z2_128):  # pragma: no cover - equal rings handled above
            return a
        return np.stack([a, np.zeros_like(a)])
    low = a[0] if isinstance(src, Z2_128) else a
    if isinstance(dst, Z2k) and dst.bits < 64:
        return low & np.uint64((1 << dst.bits) - 1)
    return np.array(low, copy=True)
