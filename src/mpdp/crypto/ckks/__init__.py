"""CKKS approximate homomorphic encryption on TenSEAL, with vetted 128-bit parameter sets.

* :mod:`~mpdp.crypto.ckks.params`: named parameter sets, chosen by depth, with documented precision;
* :mod:`~mpdp.crypto.ckks.context`: private and public contexts and their serialisation;
* :mod:`~mpdp.crypto.ckks.vector`: :class:`CkksVector`, vectors of any length in explicit chunks;
* :mod:`~mpdp.crypto.ckks.dots`: many masked products of received vectors with plaintext columns encoded once
  (dot products, or per-slot partial sums for the receiver to add), on SEAL directly.

>>> ctx = CkksContext.generate(parameters_for_depth(1))
>>> x = CkksVector.encrypt(ctx.public(), [0.5, -0.25, 1.0])
>>> abs(float(x.dot([1.0, 2.0, 0.5]).decrypt(ctx)[0]) - 0.5) < 1e-4  # CKKS is approximate
True
"""

from mpdp.crypto.ckks.context import CkksContext
from mpdp.crypto.ckks.params import PARAMETER_SETS, SEAL_MAX_COEFF_BITS_128, CkksParameters, parameters_for_depth
from mpdp.crypto.ckks.vector import CkksVector

__all__ = [
    "PARAMETER_SETS",
    "SEAL_MAX_COEFF_BITS_128",
    "CkksContext",
    "CkksParameters",
    "CkksVector",
    "parameters_for_depth",
]
