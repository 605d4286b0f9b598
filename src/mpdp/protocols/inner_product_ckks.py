"""The CKKS backend's public names under ``mpdp.protocols.inner_product_ckks``, for callers that import them
from here; they are defined in :mod:`mpdp.protocols.inner_product.ckks` (the protocol and its keys) and
:mod:`mpdp.protocols.inner_product.ckks_parameters` (the parameters, the spec check and the error bound)."""

from mpdp.protocols.inner_product.ckks import CkksKeys, ckks_holder, new_context
from mpdp.protocols.inner_product.ckks_parameters import (
    MASK_BITS,
    PARAMETERS,
    SLOT_PERIOD,
    check_slot_period,
    ckks_error_bound,
    share_scale_bits,
)

__all__ = ["MASK_BITS", "PARAMETERS", "SLOT_PERIOD", "CkksKeys", "check_slot_period", "ckks_error_bound",
           "ckks_holder", "new_context", "share_scale_bits"]
