"""The CKKS backend's public parameters and what they imply: the spec check and the per-entry error bound.

Public values only, and no import of the spec, so that :class:`~mpdp.protocols.inner_product.CkksBackend` can
refuse a spec at construction and state its error bound while the protocol
(:mod:`mpdp.protocols.inner_product.ckks`) builds on the spec. The protocol, its security and its accuracy are
described there.

Accuracy
--------
Per entry the documented dot-product bound of ``ckks-8192-d1``
(:meth:`~mpdp.crypto.ckks.CkksParameters.dot_error_bound`: ``(3e-5 + 5e-7 sqrt(rows)) bound^2``; the slots'
errors add up to at most that, tested at 36,178 rows), plus ``2^-20`` for the float roundings of the slot masks'
sums (three roundings to nearest of values below ``2^31``, ulp ``2^-21``: the right's sum of all masks but the
last and its difference from ``R``, the left's sum of the slots), all times ``2^s`` when shares are scaled
(:func:`share_scale_bits`): 4.4e-3 at 45,222 rows, bound 1 and the default ``mask_bits = 23``.
"""

from __future__ import annotations

from mpdp.crypto.ckks import CkksParameters, parameters_for_depth
from mpdp.errors import PrecisionError, explain

__all__ = ["MASK_BITS", "PARAMETERS", "SLOT_PERIOD", "check_slot_period", "ckks_error_bound", "mask_span",
           "scale_bits", "share_scale_bits"]

#: The named parameter set of the backend: one plaintext product (depth 1), N = 8192.
PARAMETERS: CkksParameters = parameters_for_depth(1)
#: Largest mask exponent without scaling: masked values must stay below the set's ``max_magnitude`` (2^19).
MASK_BITS = 18
#: A shared reply's slots are masked modulo this period (scaled units): every slot stays below 2^19 in magnitude
#: (masks within ``P / 2 = 2^19 - 2^10``, partial sums below ``2^10``) and the key owner reduces the slots' sum
#: into ``[-P/2, P/2]``, where the masked entry lies.
SLOT_PERIOD = 2.0**20 - 2.0**11


def share_scale_bits(mask_bits: int) -> int:
    """``s``: columns are encrypted times ``2^-s`` so that a ``2^mask_bits`` mask fits the plaintext range."""
    return max(0, mask_bits - MASK_BITS)


def scale_bits(mask_bits: int, *, shared: bool) -> int:
    """``s`` of a product: :func:`share_scale_bits` for shares, 0 for a product revealed to the key owner."""
    return share_scale_bits(mask_bits) if shared else 0


def mask_span(mask_bits: int) -> float:
    """A shared entry's mask range ``2^(k - s)`` in scaled units (at most 2^18)."""
    return 2.0 ** (mask_bits - share_scale_bits(mask_bits))


def ckks_error_bound(rows: int, bound: float, mask_bits: int = 23) -> float:
    """Documented per-entry error of a CKKS cross product with shares (see the module docstring); ``mask_bits``
    0 for a product revealed to the key owner (no scaling)."""
    return (PARAMETERS.dot_error_bound(rows, bound, bound) + 2.0**-20) * 2.0 ** share_scale_bits(mask_bits)


def check_slot_period(rows: int, bound: float, mask_bits: int) -> None:
    """Refuse a shared CKKS product whose slots or masked entries would leave the slot period (public values
    only, so both holders refuse before any encryption): ``chunks bound^2 2^-s < 2^10`` per slot and
    ``B 2^-s + 2^(k - s) + 1 < SLOT_PERIOD / 2`` per entry, the 1 the room for the CKKS error."""
    scaled = bound**2 * 2.0 ** -share_scale_bits(mask_bits)
    chunks = -(-rows // PARAMETERS.slots)
    if chunks * scaled >= 2.0**10 or rows * scaled + mask_span(mask_bits) + 1.0 >= SLOT_PERIOD / 2:
        raise PrecisionError(explain("CKKS shared product", f"{rows} rows of bound {bound:g}",
                                     "entries within the slot period (about 2^18 after scaling)",
                                     "lower the backend's mask_bits or the entries' bound"))
