"""The public parameters of the secure step: its constants, the caller's :class:`GradientPrecision` (formats and
approximation settings) and one step's plan, :class:`StepPublic` (built by
:func:`~mpdp.protocols.mixture_gradient.plan.plan_step`). Every computing party holds the same values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpdp.crypto.fixed_point import HIGH_PRECISION, FixedPointFormat
from mpdp.crypto.renormalization import RenormalizationParams
from mpdp.errors import ParameterError, PrecisionError, explain
from mpdp.protocols.mixture_gradient.stat_map import FloatArray, StatMap
from mpdp.protocols.mpc.clipping import ClipFactorParams

__all__ = ["CLIP_EXP_STEP", "GRID_EXTRA_BITS", "NORM_LOW_EXP", "PI_BITS", "TAIL_FORMAT", "TAIL_MAX_CLIP_LOSS",
           "TAIL_MIN_FRAC_BITS", "UNRENORMALIZED_SHIFT", "GradientPrecision", "StepPublic"]

#: Without renormalization, factors are ``min(exp(a_ikj) 2^-UNRENORMALIZED_SHIFT, 1)``.
UNRENORMALIZED_SHIFT = 8
#: Fractional bits of the public weights in ``(q - pi S) 2^-k`` (combined exactly before the product).
PI_BITS = 29
#: ``max(S~^2, n~) >= S~^2 >= 1/4 - (rounding)``: the normaliser's domain starts at ``2^NORM_LOW_EXP``.
NORM_LOW_EXP = -3
#: The default format after the normalisation (:attr:`GradientPrecision.tail_fmt`): Z_2^64 with 24 fractional bits.
TAIL_FORMAT = FixedPointFormat(64, 24)
#: The tail's least fractional bits (its roundings enter ``C'``; below ~2^-16 they eat visible clipping margin).
TAIL_MIN_FRAC_BITS = 16
#: :func:`_linear_to_grid` gives the gradient coefficients at least this many fractional bits (else it refuses),
#: so the release grid may be up to this much finer than the tail's.
GRID_EXTRA_BITS = 20
#: The clipping factor's domain ``[.., 2^H]`` grows in steps of ``2^CLIP_EXP_STEP`` (see :func:`plan_step`).
CLIP_EXP_STEP = 4
#: Largest relative loss ``1 - C'/C`` of the clipping bound with the tail format; beyond, the step's tail runs in
#: ``fmt`` (:func:`plan_step`). The loss costs utility only, never privacy: the noise stays ``z C`` (the release's
#: sensitivity is still at most ``C``) while the gradients are clipped at ``C'``, which weighs like a noise
#: multiplier at most ``1 / (1 - loss)`` times larger (about 2% here). ``python -m bench.probes.dpvi_tail`` reports
#: the loss along Figure 3's trajectories.
TAIL_MAX_CLIP_LOSS = 2e-2


@dataclass(frozen=True)
class GradientPrecision:
    """Formats and approximation settings of the secure step.

    Parameters
    ----------
    fmt:
        The format of the inputs' factors and of everything up to the normalisation of ``S_i`` (default
        Z_2^128, f = 48: ``S_i`` down to ``2^floor_log2`` keeps ``48 + floor_log2`` significant bits).
    release_bits:
        The released sum lies on the grid ``2^-release_bits``, where the noise is drawn; at most ``f`` and at
        most ``f_tail + 20`` (the gradient's coefficients get 20 or more fractional bits of their own, so the
        grid may be finer than the tail's own resolution; its roundings are accounted separately).
    tail_fmt:
        The format of everything after the normalisation (default Z_2^64, f = 24, :data:`TAIL_FORMAT`): the
        product ``q 2^-k`` truncates straight into it (no extra round), and the parties share their
        ``N_ikj`` and statistics in it; the weighted sums are lifted back into ``fmt`` for the gradient map,
        the release and the noise shares (:attr:`release_fmt`) unless the map fits the tail
        (:attr:`StepPublic.release_fmt`). Every value in the tail is of order 1, so its
        roundings ``u_tail = 2^-f_tail`` are absolute errors far below the DP noise; they enter ``C'``
        (:func:`plan_step`). ``None``: everything
        in ``fmt`` (the all-Z_2^128 step). At least 16 fractional bits (squares of values of order 1 fit any
        valid format: ``f <= 30`` in Z_2^64); the matrix product ``T^T w`` must hold ``B max|T|`` at scale
        ``2 f_tail`` (:func:`plan_step` checks it: ``B max|T| < 2^14`` for f = 24).
    floor_log2:
        The normalisation of ``S_i`` covers ``[2^(floor(floor_log2) - 1), 2]`` (:meth:`sum_low_exp`); a record
        below it contributes nothing (its scale is 0: ``q~ = 0``, hence ``w = c = 0``), in the release and in
        :func:`gradient_error_bound`'s reference alike. Such records are those whose parties rate every
        component as nearly impossible between them (``sum_k pi_k prod_j e_ikj < 2^-37`` with each party's
        largest factor 1): rare (see ``floor_factors`` for their effect on Figure 3).
    floor_factors:
        Paper 002's Algorithm 4 instead: each party floors its renormalized factors at ``2^(floor_log2 / P)``,
        so that ``S_i >= 2^floor_log2`` by construction. This biases the model (hence the default False): with
        the floor, a component that one party rates ``e^-30`` below its best keeps a responsibility of up to
        ``2^(floor_log2 / P) = 2^-18`` instead of ``~1e-13``, times gradients that reach ``1e4`` once the
        components are sharp, in the same direction at every step. ``mpdp reproduce 002-floor``
        (:mod:`mpdp.learning.dpvi.experiments`) compares, in float64 at Figure 3's settings with identical noise,
        the floor with dropping the records below the domain.
    clip_degree, clip_buckets:
        Degree of the inverse square root's polynomial and buckets per octave of its normalisation
        (:class:`~mpdp.protocols.mpc.clipping.ClipFactorParams`). Default: half powers of two and degree 3
        (relative error 3.3e-5), evaluated with one product of powers (``t^2`` alongside ``v root t``, see
        :func:`~mpdp.protocols.mpc.clipping.inv_sqrt_max`); degree 4 (2.6e-6) needs one product round more, 5
        or 6 (2e-7 or 1.7e-8) two. Quarter or eighth powers with degree 2 (5.3e-5 or 6.5e-6, one product of
        powers) double or quadruple the comparisons' thresholds, which cost more than the round they save;
        octaves (1) and degree 8 (5.9e-8).
    renormalize:
        False reproduces paper 002's Figure 2 failure: factors ``exp(a_ikj)`` without the per-record constants
        (scaled by the public ``2^-UNRENORMALIZED_SHIFT`` and clamped to 1 so that they fit the same bounds; a
        common constant cancels in ``r`` but cannot keep tiny products away from 0), no floor. Products that
        round to 0 give ``S_i`` below the normalisation's domain, whose scale is then 0: the record's
        contribution vanishes (no learning from it), as the paper describes for CrypTen's division.
    """

    fmt: FixedPointFormat = HIGH_PRECISION
    release_bits: int = 30
    floor_log2: float = -36.0
    clip_degree: int = 3
    clip_buckets: int = 2
    renormalize: bool = True
    tail_fmt: FixedPointFormat | None = TAIL_FORMAT
    floor_factors: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.fmt, FixedPointFormat):
            raise ParameterError(explain("fmt", self.fmt, "a FixedPointFormat", "pass e.g. HIGH_PRECISION"))
        if self.tail_fmt is not None:
            self._check_tail(self.tail_fmt)
        tail = self.tail
        top = min(self.fmt.frac_bits, tail.frac_bits + GRID_EXTRA_BITS)
        if isinstance(self.release_bits, bool) or not isinstance(self.release_bits, int) \
                or not 8 <= self.release_bits <= top:
            raise PrecisionError(explain("release_bits", self.release_bits,
                                         f"an int in [8, {top}] (min(f, f_tail + {GRID_EXTRA_BITS}) for {self.fmt} "
                                         f"and the tail {tail})",
                                         "release on a grid no finer than the shares' (e.g. 30)"))
        if not isinstance(self.floor_factors, bool) or not isinstance(self.renormalize, bool):
            raise ParameterError(explain("floor_factors / renormalize", (self.floor_factors, self.renormalize),
                                         "booleans", "pass True or False"))
        if not (math.isfinite(self.floor_log2) and -60 <= self.floor_log2 < 0):
            raise ParameterError(explain("floor_log2", self.floor_log2, "a number in [-60, 0)", "pass e.g. -36"))
        if self.fmt.frac_bits + self.floor_log2 < 8:
            raise PrecisionError(explain("floor_log2", self.floor_log2, f">= {8 - self.fmt.frac_bits} for {self.fmt}",
                                         "S_i down to 2^floor_log2 must keep 8 significant bits: raise floor_log2 "
                                         "or use more fractional bits"))
        if self.fmt.product_capacity < 4:
            raise PrecisionError(explain("fmt", str(self.fmt), "a product capacity of at least 4",
                                         "use FixedPointFormat(128, 48)"))
        ClipFactorParams(degree=self.clip_degree, buckets_per_octave=self.clip_buckets)  # validates both
        if 2 * self.fmt.frac_bits + PI_BITS + 1 > self.fmt.raw_capacity_bits:
            # (q - pi S) 2^-k and the weights' last product hold f + 29 + f and f + 28 + f (+ 2) bits
            raise PrecisionError(explain("fmt", str(self.fmt),
                                         f"2 f + {PI_BITS + 1} <= {self.fmt.raw_capacity_bits} bits of capacity",
                                         "use FixedPointFormat(128, 48) or fewer fractional bits"))

    def _check_tail(self, tail: FixedPointFormat) -> None:
        if not isinstance(tail, FixedPointFormat):
            raise ParameterError(explain("tail_fmt", tail, "a FixedPointFormat or None",
                                         f"pass e.g. {TAIL_FORMAT!r} or None (everything in fmt)"))
        if tail.ring_bits > self.fmt.ring_bits or tail.frac_bits > self.fmt.frac_bits:
            raise PrecisionError(explain("tail_fmt", str(tail), f"a ring and f no larger than {self.fmt}'s",
                                         "the tail runs after the normalisation at lower precision: pass e.g. "
                                         f"{TAIL_FORMAT} or None"))
        # (every valid format holds products up to 4 at f <= 30 in Z_2^64, the squares of values of order 1)
        if tail.frac_bits < TAIL_MIN_FRAC_BITS:
            raise PrecisionError(explain("tail_fmt", str(tail), f"f >= {TAIL_MIN_FRAC_BITS}",
                                         "use FixedPointFormat(64, 24) (the default) or None"))

    @property
    def tail(self) -> FixedPointFormat:
        """The format of everything after the normalisation (``tail_fmt``, or ``fmt`` when None)."""
        return self.fmt if self.tail_fmt is None else self.tail_fmt

    @property
    def release_fmt(self) -> FixedPointFormat:
        """The format (ring) of the released sum and of the noise shares added to it: ``fmt``'s. The gradient
        map's constants grow with the model's parameters (hundreds after a few epochs on Adult), and their
        products with the weighted sums need the wide ring's capacity: the sums are lifted back into ``fmt``
        (one round) before the map (:func:`clipped_gradient_sum`). A step whose map fits the tail runs it, the
        noise and the opening there instead (:attr:`StepPublic.release_fmt`); the grid and the noise's law are
        the same either way."""
        return self.fmt

    def renormalization(self, parties: int) -> RenormalizationParams:
        if not self.renormalize:
            return RenormalizationParams(parties=parties, min_log2=self.floor_log2)
        return RenormalizationParams(parties=parties, min_log2=self.floor_log2,
                                     floor_log2=self.floor_log2 if self.floor_factors else None)

    def sum_low_exp(self) -> int:
        """``S_i`` is normalised on ``[2^sum_low_exp, 2]`` (below: scale 0, the record contributes nothing)."""
        return math.floor(self.floor_log2) - 1 if self.renormalize else -(self.fmt.frac_bits - 8)


@dataclass(frozen=True)
class StepPublic:
    """Everything public about one step, identical at every computing party (built by :func:`plan_step`)."""

    weights: FloatArray
    maps: tuple[StatMap, ...]
    stat_counts: tuple[int, ...]
    stat_bounds: tuple[float, ...]
    sq_norm_bounds: tuple[float, ...]
    clip: float
    clip_params: ClipFactorParams
    batch: int
    tail: FixedPointFormat = TAIL_FORMAT
    #: Where the gradient map, the noise shares and the opening run: the tail when the map fits it (early in
    #: training, while the map's constants are small), else ``GradientPrecision.release_fmt`` (:func:`plan_step`).
    release_fmt: FixedPointFormat = HIGH_PRECISION

    @property
    def components(self) -> int:
        return int(self.weights.size)

    @property
    def dim(self) -> int:
        """Released coordinates: ``K - 1`` weights, then each party's :class:`StatMap` coordinates."""
        return self.components - 1 + sum(m.size for m in self.maps)
