"""Secure mixture responsibilities from renormalized per-party factors (paper 002, Eqs. 22-26, 32-34).

Party ``j`` contributes its renormalized factors ``e_ikj`` (:func:`mpdp.crypto.renormalization.renormalize`)
as a shared ``(records, K)`` array. Under MPC: ``q_ik = pi_k prod_j e_ikj`` (secure products across
parties), ``S_i = sum_k q_ik`` and ``r_ik = q_ik / S_i`` (Newton-Raphson reciprocal of ``S_i``). The
parties' constants ``m_ij`` never enter: they cancel in ``r`` and are added back to ``log S_i`` in the clear
by whoever is entitled to the log-likelihood.

Accuracy: the reciprocal runs on ``[min_k pi_k 2^min_log2, 2]`` (:class:`ReciprocalParams` built here,
strict: a smaller ``S_i`` is refused with :class:`~mpdp.errors.DomainError`); each ``r_ik`` is within
``~4 * 2^-f / S_i`` of the exact ratio of the (encoded) factors.

Security: semi-honest, as the products and the reciprocal; the weights ``pi`` are public model parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mpdp.crypto.approximations import ReciprocalParams
from mpdp.crypto.renormalization import RenormalizationParams
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.protocols.mpc.functions import _mul, reciprocal
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["responsibilities"]


def responsibilities(factors: Sequence[SharedFixedPoint], weights: npt.ArrayLike,
                     params: RenormalizationParams, *, reciprocal_params: ReciprocalParams | None = None,
                     ) -> tuple[SharedFixedPoint, SharedFixedPoint]:
    """``(r, S)``: responsibilities ``(records, K)`` and normalisers ``S`` ``(records,)``.

    ``factors[j]`` is party ``j``'s shared ``e_ikj`` (values in ``[0, 1]``, from ``renormalize``).
    ``reciprocal_params`` overrides the reciprocal's (default: the domain ``[min_k pi_k 2^min_log2, 2]``,
    checked securely). With floored factors (``params.floor_log2``) ``S >= 2^floor_log2`` holds by
    construction, so a caller may pass ``ReciprocalParams(low_exp=floor(floor_log2) - 1, high_exp=1,
    strict=False)`` and skip the check (and fewer iterations where less accuracy suffices).
    """
    pi = np.asarray(weights, dtype=np.float64)
    if not factors:
        raise ParameterError(explain("factors", [], "one shared (records, K) array per party", "pass them"))
    if len(factors) != params.parties:
        raise ParameterError(explain("factors", len(factors), f"{params.parties} (params.parties)",
                                     "pass one factor array per party"))
    shape = factors[0].shape
    if len(shape) != 2 or any(f.shape != shape for f in factors) or pi.shape != (shape[1],):
        raise ShapeMismatchError(explain("factor shapes", [f.shape for f in factors],
                                         f"equal (records, K) arrays and K = {pi.shape} weights",
                                         "align the parties' records and components"))
    if np.any(pi <= 0) or not math.isclose(float(pi.sum()), 1.0, rel_tol=1e-9):
        raise ParameterError(explain("weights", pi, "positive mixture weights summing to 1", "normalise pi"))
    product = factors[0].assume_bound(1.0)
    for f in factors[1:]:
        product = (product * f.assume_bound(1.0)).assume_bound(1.0)
    q = (product * pi).assume_bound(float(pi.max()))
    s = q.sum(axis=1).assume_bound(1.0 + 1e-9)
    low = math.floor(params.min_log2 + math.log2(float(pi.min()))) - 1
    inv = reciprocal(s, reciprocal_params or ReciprocalParams(low_exp=low, high_exp=1))
    r = _mul(q, inv._reshape_op(lambda a: a[:, None])).assume_bound(1.0 + 1e-6)
    return r, s
