"""The public plan of a step (:func:`plan_step`): the clipping constant ``C'`` that keeps the release's sensitivity
at ``C``, the tail format, the clipping factor's domain and where the gradient map runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.sensitivities.dpvi import mpc_clip_constant
from mpdp.errors import ParameterError, PrecisionError, ShapeMismatchError, explain
from mpdp.protocols.mixture_gradient.bounds import clip_domain_bound, grid_floor_of, tilde_norm_error
from mpdp.protocols.mixture_gradient.parameters import (
    CLIP_EXP_STEP,
    GRID_EXTRA_BITS,
    NORM_LOW_EXP,
    TAIL_MAX_CLIP_LOSS,
    GradientPrecision,
    StepPublic,
)
from mpdp.protocols.mixture_gradient.stat_map import FloatArray, StatMap
from mpdp.protocols.mpc.clipping import ClipFactorParams

__all__ = ["RELEASE_NOISE_SIGMAS", "plan_step"]


#: The noisy sum must stay below ``2^(l - 2)`` in grid units with the noise at up to this many standard deviations
#: (a discrete Gaussian exceeds ``64 sigma`` with probability below ``2 e^-2048``).
RELEASE_NOISE_SIGMAS = 64


def _release_format(public_like: tuple[FloatArray, Sequence[StatMap], float, int], tail: FixedPointFormat,
                    precision: GradientPrecision, clip: float, noise_std: float) -> tuple[FixedPointFormat, int]:
    """Where the step's map, noise and opening run, with the map's constants' fractional bits there
    (:func:`grid_floor_of`): ``tail`` when it differs from ``precision.release_fmt`` and (a) the map's
    constants get at least ``GRID_EXTRA_BITS`` fractional bits in it, (b) the grid ``2^-release_bits`` is no
    finer than the map's scale ``f_tail + extra``, and (c) the released sum (at most ``batch C`` in norm) plus
    ``RELEASE_NOISE_SIGMAS`` noise deviations stays below ``2^(l - 2)`` grid units; else
    ``precision.release_fmt``. Public values only: every party decides the same."""
    wide = precision.release_fmt
    if tail != wide and math.isfinite(noise_std) and noise_std >= 0:
        extra = grid_floor_of(public_like, tail)
        reach = (public_like[3] * clip * (1 + 1e-3) + RELEASE_NOISE_SIGMAS * noise_std + 1.0) \
            * 2.0**precision.release_bits
        if extra >= GRID_EXTRA_BITS and precision.release_bits <= tail.frac_bits + extra \
                and reach < 2.0 ** (tail.ring_bits - 2):
            return tail, extra
    return wide, grid_floor_of(public_like, wide)


def plan_step(*, weights: FloatArray, maps: Sequence[StatMap], stat_counts: Sequence[int],
              stat_bounds: Sequence[float], sq_norm_bounds: Sequence[float], clip: float, batch: int,
              precision: GradientPrecision, noise_std: float = 0.0) -> StepPublic:
    """The public plan of a step: the clipping constant ``C'`` (so that the release has sensitivity ``clip``)
    and the scaled bounds. ``sq_norm_bounds`` are the parties' unscaled bounds on ``N_ikj``; ``noise_std`` is
    the standard deviation of the noise added to the released sum (``z C``, in gradient units).

    The gradient map, the noise and the opening run in the tail's ring when the map's constants get at least
    ``GRID_EXTRA_BITS`` fractional bits there and the noisy sum cannot wrap (:func:`_release_format`): one round
    (the lift into ``fmt``) and the wide ring's arithmetic saved. Otherwise in ``precision.release_fmt``."""
    pi = np.asarray(weights, dtype=np.float64)
    K = int(pi.size)
    if not (len(maps) == len(stat_counts) == len(stat_bounds) == len(sq_norm_bounds)) or not maps:
        raise ShapeMismatchError(explain("per-party arguments", [len(maps), len(stat_counts), len(stat_bounds),
                                         len(sq_norm_bounds)], "one entry per computing party", "align them"))
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ParameterError(explain("batch", batch, "an int >= 1", "an empty minibatch releases noise only"))
    # The tail's roundings are absolute (2^-f_tail); relative to the smallest clipping factors 2^-(H/2) they grow
    # with the clipping domain (the model's gradient bounds grow as training sharpens it). When the tail would cost
    # more than TAIL_MAX_CLIP_LOSS of C, the step runs its tail in ``fmt`` instead: every party decides the same from
    # public values.
    candidates = (precision.tail, precision.fmt) if precision.tail != precision.fmt else (precision.fmt,)
    for tail in candidates:
        u = tail.resolution  # every rounding that reaches the release happens at or after the switch to the tail
        n_total = float(sum(sq_norm_bounds))
        P = len(maps)
        t_max = max((float(b) for b in stat_bounds), default=0.0)
        if not tail.raw_bound_ok(t_max * batch * (1 + 1e-3), 2 * tail.frac_bits):
            raise PrecisionError(explain("batch x statistics bound", f"{batch} x {t_max:.6g}",
                                         f"T^T w within the product capacity of the tail {tail}",
                                         "use smaller minibatches, or a tail format with fewer fractional bits "
                                         "(GradientPrecision(tail_fmt=FixedPointFormat(64, 20))) or none "
                                         "(tail_fmt=None)"))
        scaled = 4.0 * n_total / clip**2  # C' >= C / 2 assumed (mpc_clip_constant checks it)
        norm_error = 4.1 * tilde_norm_error(K, P, 4.0 / clip**2, u)  # relative to max(S~^2, n~) >= 1/4
        coef_t = np.concatenate([np.zeros(K - 1)] + [np.abs(m.coef_stat) for m in maps])
        coef = np.concatenate([np.ones(K - 1), coef_t[K - 1 :]])
        coef_sum = np.concatenate([pi[:-1]] + [np.abs(m.coef_sum) for m in maps])
        sum_errors = 2.0**-precision.release_bits + u * (coef + coef_sum + 2.0)
        # one record's statistics, encoded in the tail within u / 2, move its contribution by (u / 2) |coef| w
        record_error = 0.5 * u * (1 + 1e-3) * float(np.linalg.norm(coef_t))
        # the linear map's constants, rounded to 2^-(e + 1) (_linear_to_grid), move it by that times w (|T| + 1)
        # per statistics' coordinate and c per weight's
        release_fmt, extra = _release_format((pi, maps, t_max, batch), tail, precision, clip, noise_std)
        if extra < GRID_EXTRA_BITS:
            raise PrecisionError(explain("gradient coefficients", f"a linear map needing {GRID_EXTRA_BITS} bits",
                                         f"room for {GRID_EXTRA_BITS} fractional bits of the constants in "
                                         f"{release_fmt} (where the map runs)",
                                         "lower the learning rate (the model's parameters are exploding) or use "
                                         "smaller minibatches"))
        record_error += 2.0 ** -(extra + 1) * (1 + 1e-3) * math.sqrt(sum(m.size for m in maps) * (t_max + 1) ** 2
                                                                     + K - 1)
        x_bound = clip_domain_bound(scaled, 4.0 / clip**2, K, P, u)  # C' >= C / 2
        # rounded up to a power of 2^4: the bound moves with theta (it grows as training sharpens the model), and
        # each H needs its own comparison shapes; on this coarse grid consecutive steps share one plan of
        # correlations (PlannedProvider) instead of alternating between two (up to 6 more half-power buckets)
        x_bound = 2.0 ** (CLIP_EXP_STEP * math.ceil(math.log2(max(x_bound, 2.0)) / CLIP_EXP_STEP))
        clip_params = ClipFactorParams.for_bound(x_bound, degree=precision.clip_degree,
                                                 buckets_per_octave=precision.clip_buckets)
        eps_c = clip_params.max_error_bound(tail, NORM_LOW_EXP)
        try:
            inner = mpc_clip_constant(clip, clip_factor_error=eps_c, norm_error=norm_error, weight_resolution=6 * u,
                                      components=K, sq_norm_bound=n_total, sum_errors=sum_errors,
                                      record_error=record_error)
        except PrecisionError:
            if tail == precision.fmt:
                raise
            continue
        if tail != precision.fmt and inner < clip * (1.0 - TAIL_MAX_CLIP_LOSS):
            continue
        return StepPublic(weights=pi, maps=tuple(maps), stat_counts=tuple(int(c) for c in stat_counts),
                          stat_bounds=tuple(float(b) for b in stat_bounds),
                          sq_norm_bounds=tuple(float(b) / inner**2 for b in sq_norm_bounds), clip=inner,
                          clip_params=clip_params, batch=batch, tail=tail, release_fmt=release_fmt)
    raise PrecisionError("no tail format for this step")  # pragma: no cover - fmt is always the last candidate
