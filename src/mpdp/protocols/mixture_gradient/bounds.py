"""The step's error bounds, from public values only: the clipping factor's input domain
(:func:`clip_domain_bound`, privacy-critical), the computed norm's error, the fractional bits the gradient map's
constants get, and the released sum's distance from float64 (:func:`gradient_error_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import ParameterError, PrecisionError, explain
from mpdp.protocols.mixture_gradient.parameters import NORM_LOW_EXP, PI_BITS, GradientPrecision, StepPublic
from mpdp.protocols.mixture_gradient.stat_map import FloatArray, StatMap

__all__ = ["clip_domain_bound", "gradient_error_bound", "grid_extra_floor"]


def tilde_norm_error(K: int, P: int, inv_c2: float, u: float) -> float:
    """Absolute error bound of the computed ``n~ = sum_k q~ (q~ N) + sum_(k<K) v^2 / C'^2`` against the same sums
    of the shared ``q~``, ``S~ = sum_k q~`` with the exact ``N`` and ``pi``, all in the tail (``u = 2^-f_tail``):
    per component ``P u / 2`` (the inputs' encodings of ``N``, times ``q~^2 <= 1``), ``u`` (the product
    ``q~ N``, times ``q~ <= 1``) and ``u`` (the product with ``q~``), whatever the size of ``N``; per weight
    coordinate, ``v`` within ``dv = (2 + K) u + 2^-(PI_BITS + 1)`` of ``q~ - pi S~`` (the switch's roundings
    of ``v`` and ``q~`` and ``K`` of ``S~``, and the weights' own on ``PI_BITS`` bits), so ``v^2`` within
    ``2 dv + 2 u`` (with its rounding), times ``1/C'^2`` (encoded within ``u / 2``: ``u / 2`` more), plus the
    product's ``u``."""
    dv = (2 + K) * u + 2.0 ** -(PI_BITS + 1)
    return K * u * (P / 2 + 2) + (K - 1) * ((2 * dv + 2 * u) * inv_c2 + 2 * u)


def clip_domain_bound(sq_norm_bound: float, inv_clip2_bound: float, components: int, parties: int,
                      resolution: float) -> float:
    """A public bound of ``max(S~^2, n~)``, the clipping factor's input: its domain ``[.., 2^H]`` is sized from
    it, and a computed value beyond ``2^H`` would get a wrong factor, so this bound is privacy-critical.

    ``sq_norm_bound`` bounds every ``N_k = sum_j N_ikj / C'^2`` (each party's input is refused above its
    public share of it), ``inv_clip2_bound`` bounds ``1 / C'^2``, ``resolution`` is the tail's ``u``.
    With ``a_k = q~_k >= 0``, each within ``u`` of ``q_k 2^-k``, so ``sum_k a_k <= S~ + K u <= 1 + K u``:

    * ``sum_k a_k^2 N_k <= max_k N_k sum_k a_k^2 <= max_k N_k (sum_k a_k)^2 <= (1 + K u)^2 sq_norm_bound``
      (no factor ``K``: the squares of a non-negative vector sum to at most its sum squared);
    * ``sum_(k<K) (a_k - pi_k S~)^2 <= sum a_k^2 + S~^2 sum pi_k^2 <= (1 + K u)^2 + 1`` (the cross terms
      ``2 a_k pi_k S~`` are non-negative), times ``1 / C'^2``;
    * the computed ``n~`` is within :func:`tilde_norm_error` of these exact sums, and ``S~^2 < 1``.

    ``(1 + K u)^2 <= (1 + 1e-3)^2`` is checked. A factor ``K`` on the first two terms would make the domain
    about ``K`` times wider than needed: 3 to 4 more bits to compare for ``K = 10``, and a larger relative error
    of the clipping factor.
    """
    K = int(components)
    if not K * resolution <= 1e-3:
        raise PrecisionError(explain("components x tail resolution", f"{K} x {resolution:.3g}", "<= 1e-3",
                                     "use a tail format with more fractional bits"))
    grow = (1 + 1e-3) ** 2
    return grow * float(sq_norm_bound) + (grow + 1.0) * float(inv_clip2_bound) \
        + tilde_norm_error(K, int(parties), float(inv_clip2_bound), resolution) + 1.0


def grid_extra_bits(fmt: FixedPointFormat, scale: int, bound: float, top: float, rows: int = 2) -> int:
    """The fractional bits :func:`_linear_to_grid` gives its constants (``max |coef| = top``) for values up to
    ``bound`` at ``scale``: as many as the ring's capacity leaves, at most 40; fewer for larger bounds."""
    total = bound * top * rows
    headroom = fmt.raw_capacity_bits - scale - math.ceil(math.log2(max(total, 2.0**-30))) - 1
    return int(min(40, headroom, 61 - math.ceil(math.log2(max(top, 1.0)))))


def grid_floor_of(public_like: tuple[FloatArray, Sequence[StatMap], float, int], fmt: FixedPointFormat) -> int:
    """A lower bound of the constants' fractional bits in the step's :func:`_linear_to_grid`, from public values
    only: ``(M, s, sum_i c_i)`` are bounded by ``(max(max|T|, 1) (1 + 1e-3) + 1e-3) B + 1``."""
    pi, maps, t_max, batch = public_like
    top = max([1.0, float(np.max(pi[:-1], initial=0.0))]
              + [float(np.max(np.abs(m.coef_stat), initial=0.0)) for m in maps]
              + [float(np.max(np.abs(m.coef_sum), initial=0.0)) for m in maps])
    over = (max(t_max, 1.0) * (1 + 1e-3) + 1e-3) * batch + 1.0
    return grid_extra_bits(fmt, fmt.frac_bits, over, top)


def grid_extra_floor(public: StepPublic) -> int:
    """The fractional bits :func:`gradient_error_bound` assumes the gradient map's constants get (the floor of
    :func:`grid_extra_bits` in the step's tail, from public values)."""
    t = max(public.stat_bounds) if public.stat_bounds else 0.0
    return grid_floor_of((public.weights, public.maps, t, public.batch), public.tail)


def gradient_error_bound(public: StepPublic, precision: GradientPrecision, *,
                         min_sum: float | None = None) -> FloatArray:
    """Per released coordinate: how far the secure sum (without noise) may lie from the float64 computation of
    the same step on the same factors (floored with ``floor_factors``; records with ``S_i`` below the
    normalisation's domain dropped), stated sums and clipping constant.

    Before the switch to the tail (``u_h = 2^-f``): the factors' encodings and their products put each ``q_ik``
    within ``e_q = (P - 1) u_h + P u_h / 2 + 2^-52`` of the float one, so ``r = q / S`` moves by at most
    ``(K + 1) e_q / S_i``; ``min_sum`` is a lower bound on the batch's kept ``S_i`` (default the
    normalisation domain's edge ``2^sum_low_exp``: records whose parties' factors barely overlap keep only
    ``f + floor_log2`` bits). A record whose ``S_i`` lies within ``e_q`` of that edge may be kept by one
    computation and dropped by the other; the bound does not cover that (``e_q ~ 2^-47``).
    From the switch on (``u = 2^-f_tail``): ``w = c r`` and ``c`` carry the inverse square root's relative
    error ``eps_c``, ``2 e_n`` from the norm (relative to ``max(S~^2, n~) >= 1/4``, halved by the root),
    ``2 (K + 1) u`` from ``r = q~ / S~`` (the switch rounds each ``q~`` by less than ``u``) and ``3.5 u`` from
    their products; every later product rounds by less than ``u``; each record moves a coordinate by at
    most ``|coef_stat| max|T| + |coef_sum|`` per unit of weight error, by ``|coef_stat| u / 2`` through its
    statistics' encoding and by ``2^-(e + 1) (max|T| + 1)`` through the map's constants (``e >= 20`` fractional
    bits, :func:`_linear_to_grid`); the truncation to the grid adds ``2^-release_bits``. Near the clipping threshold
    (``n_i`` within ``eps`` of 1) the two computations may differ in whether they clip, which the bound covers
    since ``c`` is continuous there.
    """
    tail = public.tail
    u, u_h = tail.resolution, precision.fmt.resolution
    K, P = public.components, len(public.maps)
    low = 2.0 ** precision.sum_low_exp() if min_sum is None else float(min_sum)
    if not (math.isfinite(low) and low > 0):
        raise ParameterError(explain("min_sum", min_sum, "a number > 0", "pass the batch's smallest S_i"))
    e_q = (P - 1) * u_h + P * u_h / 2 + 2.0**-52
    e_n = tilde_norm_error(K, P, 1.0 / public.clip**2, u)
    eps_w = public.clip_params.max_error_bound(tail, NORM_LOW_EXP) + 3 * e_n + (2 * K + 10) * u \
        + (K + 1) * e_q / low
    t = max(public.stat_bounds) if public.stat_bounds else 1.0
    grid = 2.0 ** -(grid_floor_of((public.weights, public.maps, t, public.batch), tail) + 1) * (1 + 1e-3)
    per_record = [np.ones(public.components - 1) * (1.0 + 1.0)]
    encoding = [np.full(public.components - 1, grid)]  # and the map's constants' roundings
    for m in public.maps:
        per_record.append(np.abs(m.coef_stat) * t + np.abs(m.coef_sum))
        encoding.append(np.abs(m.coef_stat) * u / 2 * (1 + 1e-3) + grid * (t + 1))
    scale = np.concatenate(per_record)
    out: FloatArray = scale * public.batch * (eps_w + u) + public.batch * np.concatenate(encoding) \
        + 2.0 ** -precision.release_bits + u * (scale + 2)
    return out
