"""Secure mixture responsibilities from renormalized per-party factors (paper 002, Eqs. 22-26, 32-34).

Party ``j`` contributes its renormalized factors ``e_ikj`` (:func:`mpdp.crypto.renormalization.renormalize`)
as a shared ``(records, K)`` array. Under MPC: ``q_ik = pi_k prod_j e_ikj`` (secure products across
parties), ``S_i = sum_k q_ik`` and ``r_ik = q_ik / S_i``. The parties' constants ``m_ij`` never enter: they
cancel in ``r`` and are added back to ``log S_i`` in the clear by whoever is entitled to the log-likelihood.

The division is the Newton-Raphson reciprocal of :class:`~mpdp.crypto.approximations.ReciprocalParams`
carried out on the numerators: the normalisation finds ``S_i in [2^(k-1), 2^k)`` (comparisons, 7 rounds),
one product gives ``q~ = q 2^-k`` and ``z = S 2^-k`` in ``[1/2, 1)``; with ``y0 = a - b z`` and
``e0 = 1 - z y0``, ``1/z = y0 (1 + e0)(1 + e0^2)...``, so ``r = q~ y0 (1 + e0)(1 + e0^2)...``: each factor
is one product of the running numerators, side by side with the next residual square. ``iterations``
Newton-Raphson steps cost ``1 + iterations`` product rounds after ``q~``, against ``3 + iterations`` for
``reciprocal(S)`` followed by ``q * (1/S)`` (whose rescaling by ``2^-k`` also needs a split product).

Accuracy
--------
:func:`responsibility_error_bound`: every ``r_ik`` is within ``r0^(2^i) + (8 + 3 i) u`` (absolute, and
``r <= 1``) of ``q_ik / S_i`` computed exactly from the shared (encoded) factors, ``r0 = 0.05908`` the
initial residual, ``i`` the iterations, ``u = 2^-f``: the residual; the roundings of ``q~`` and ``z`` (one
each: ``|q~' / z' - q~ / z| <= 2u + 2u r``); one per product of the numerators (each later factor
``1 + e <= 1.06`` carries it on) and ``1.2 u`` per residual ``e_j`` used (as in ``ReciprocalParams``).
Inputs ``S_i`` below the reciprocal's domain (``strict=False``) give ``r = 0``.

Security: semi-honest, as the products and the comparisons; the weights ``pi`` are public model parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mpdp.crypto.approximations import ReciprocalParams
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.renormalization import RenormalizationParams
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.protocols.mpc.functions import _in_domain, _normalise, mul_known
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate

__all__ = ["responsibilities", "responsibility_error_bound"]


def responsibility_error_bound(params: ReciprocalParams, fmt: FixedPointFormat) -> float:
    """Absolute error bound of each secure ``r_ik`` against ``q_ik / S_i`` (see the module's Accuracy)."""
    i = params.iterations
    return float(params.INITIAL_RESIDUAL ** (2**i) + (8 + 3 * i) * fmt.resolution)


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
    return _ratios(q, s, reciprocal_params or ReciprocalParams(low_exp=low, high_exp=1)), s


def _ratios(q: SharedFixedPoint, s: SharedFixedPoint, p: ReciprocalParams) -> SharedFixedPoint:
    """``q / s`` row by row for ``0 <= q_ik`` with ``s_i = sum_k q_ik`` (the module's scheme)."""
    if not isinstance(p, ReciprocalParams):
        raise ParameterError(explain("reciprocal_params", p, "a ReciprocalParams", "pass ReciprocalParams(...)"))
    B, K = q.shape
    s = _in_domain(s, p.high_exp, p.strict, "reciprocal")
    (scale,) = _normalise(s, p.low_exp, p.high_exp, p.strict, [lambda k: 2.0**-k])
    # q 2^-k <= s 2^-k < 1 (and 0 outside the domain): the products are small though the scale may be large
    both = mul_known(concatenate([q.rescale(), s.reshape(B, 1)], axis=1), scale.reshape(B, 1), 1.0)
    numerators, z = both[:, :K], both[:, K]
    a, b, bits = p.INITIAL
    bz = (z * b).times_pow2(-bits)  # exact: integer product, then the scale
    y0 = (a * 2.0**-bits - bz).assume_bound(2.0)  # in [0.94, 1.71] on [1/2, 1], exact
    if p.iterations == 0:
        return (numerators * y0.reshape(B, 1)).assume_bound(1.0 + 1e-6)
    # one round: the numerators times y0, and z (b z) for the residual e0 = 1 - a z + b z^2
    first = concatenate([numerators.flatten(), z]) * concatenate([y0.reshape(B, 1).broadcast_to((B, K)).flatten(), bz])
    numerators = first[: B * K].reshape(B, K).assume_bound(2.0)
    residual = p.INITIAL_RESIDUAL + 4 * q.fmt.resolution
    e = ((z * a).times_pow2(-bits).__rsub__(1.0) + first[B * K :]).assume_bound(residual)
    for i in range(p.iterations):
        factor = (1.0 + e).reshape(B, 1).broadcast_to((B, K)).flatten()
        if i == p.iterations - 1:
            numerators = (numerators.flatten() * factor).reshape(B, K).assume_bound(1.0 + 1e-6)
        else:  # the numerators times (1 + e_i), and e_(i+1) = e_i^2, in one round
            step = concatenate([numerators.flatten(), e]) * concatenate([factor, e])
            residual = residual * residual + 2 * q.fmt.resolution
            numerators, e = step[: B * K].reshape(B, K).assume_bound(2.0), step[B * K :].assume_bound(residual)
    return numerators
