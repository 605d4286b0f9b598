"""One DP-SGD step of a vertically partitioned mixture under MPC: the clipped, noisy gradient sum (paper 002).

Setting (paper 002, sections 4.3-4.5, Algorithm 1): party ``j`` holds features ``x^(j)`` of the same records;
the mixture's components factorise, ``p(x) = sum_k pi_k prod_j f_j(x^(j) | theta_kj)``; ``theta`` (hence ``pi``)
is public at each step (drawn from the public variational posterior). Per record ``i`` in the minibatch and
component ``k``, party ``j`` computes *locally*

* ``e_ikj = exp(a_ikj - m_ij)`` with ``a_ikj = log f_j(x_i^(j) | theta_kj)`` and the renormalization constant
  ``m_ij = max_k a_ikj`` (:func:`mpdp.crypto.renormalization.renormalize`; not floored by default, see
  :class:`GradientPrecision`);
* ``N_ikj = ||d a_ikj / d theta_kj||^2 / C'^2`` (its part of the squared gradient norm);
* its sufficient statistics ``T_i^(j)`` (exponential families: the gradient of a weighted sum of
  log-densities needs only weighted sums of ``T``, see :class:`StatMap`).

Under MPC (every value below is secret-shared: up to the normalisation in the high-precision format, Z_2^128
with f = 48 by default; from it on, where every value is of order 1, in the tail format, Z_2^64 with f = 24 by
default, see :class:`GradientPrecision`):

1. ``q_ik = pi_k prod_j e_ikj`` (secure products of the parties' own factors, which are never shared:
   :func:`~mpdp.protocols.mpc.arithmetic.mul_owned`; party 0 multiplies the public ``pi`` into its own factors
   first) and ``S_i = sum_k q_ik``; the constants ``m_ij`` cancel in everything below. The
   responsibilities are ``r_ik = q_ik / S_i``, but no division is computed: the normalisation finds
   ``S_i in [2^(k-1), 2^k)`` (comparisons with public powers of two, :func:`~mpdp.protocols.mpc.functions.
   _normalise`) and one product gives ``q~ = q 2^-k`` and ``v = (q - pi S) 2^-k``, with ``S~ = sum_k q~`` in
   ``[1/2, 1)`` (so ``r = q~ / S~``, ``r - pi = v / S~``); that product's truncation delivers ``q~`` and ``v``
   in the tail format directly (no extra round), and the parties share their ``N_ikj`` in it in the input
   round (the statistics are never shared, step 4);
2. the whole per-example gradient's squared norm over ``C'^2`` is
   ``n_i = sum_k r_ik^2 sum_j N_ikj + sum_(k < K) (r_ik - pi_k)^2 / C'^2``
   (components' and parties' coordinates are disjoint, and ``d log p / d beta_k = r_ik - pi_k``); computed is
   ``n~_i = n_i S~_i^2 = sum_k q~ (q~ N) + sum_(k<K) v^2 / C'^2``, and ``S~_i^2``, in two rounds of products;
3. the clipping factor ``c_i = 1 / sqrt(max(n_i, 1)) = S~ / sqrt(max(S~^2, n~))`` and the weights
   ``w_ik = c_i r_ik = q~_ik / sqrt(max(S~^2, n~))``: one inverse square root of a maximum whose bucket
   comes from comparisons (:func:`~mpdp.protocols.mpc.clipping.inv_sqrt_max`), applied to ``(q~, S~)``;
4. ``M = T^T w``, party ``j``'s rows ``T^(j)T w`` from its own statistics in the clear
   (:func:`~mpdp.protocols.mpc.arithmetic.matmul_owned`: the product's two rounds for every party at once; no
   share of ``T`` is drawn or sent, and each party computes one local product per block instead of two),
   ``s_k = sum_i w_ik``, ``sum_i c_i``; lifted back into ``fmt``
   (one round, exact) when the map's constants need the wide ring's capacity: they grow with the model's
   parameters (into the hundreds after three epochs on Adult). While they are small (early training), the
   map, the noise and the opening stay in the tail's ring (:attr:`StepPublic.release_fmt`, chosen by
   :func:`plan_step` from public values): no lift, one round less;
5. the clipped gradient sum is a *public* linear map of ``(M, s, sum_i c_i)``: weights
   ``s_k - pi_k sum_i c_i``; party ``j``'s coordinates per :class:`StatMap`; computed exactly on the raw
   shares and truncated once, onto the release grid ``2^-release_bits``;
6. noise (discrete Gaussian in grid units, from the parties or a trusted noise party) is added to the shares
   and the sum is opened (:func:`release`).

Security
--------
Semi-honest computing parties, any coalition of up to ``P - 1`` (plus the dealer, which must not collude):
they see uniformly masked openings only, and the single released vector. The released vector is the DP
output; what it protects towards whom is the accountant's business (the learning module). The minibatch
indices and ``theta`` are public to the computing parties.

Accuracy
--------
:class:`GradientPrecision` refuses formats that cannot hold ``S_i >= 2^floor_log2`` with 8 significant
bits; a record whose ``S_i`` lies below the normalisation's domain (``2^(floor(floor_log2) - 1)``: its parties
rate every component as nearly impossible between them) contributes nothing. Everything after the
normalisation works on values of order 1 (``S~ >= 1/2``) in the tail format, so its roundings are absolute
errors of order ``u = 2^-f_tail`` (the switch's own truncation included: it rounds ``q~`` and ``v`` by less
than ``u``); the inverse square root carries its relative error ``eps_c``
(:meth:`~mpdp.protocols.mpc.clipping.ClipFactorParams.max_error_bound` for the tail format). The roundings
before the switch (``2^-f``) only move the shared ``q~``, a valid input whatever it is: the clipping is
exact relative to it. :func:`plan_step` turns the tail's errors into the clipping constant ``C'`` that keeps
the released sum's sensitivity at ``C`` (:func:`mpdp.dp.sensitivities.dpvi.mpc_clip_constant`): the computed
``n~`` is within ``e_n`` of the exact one of the shared ``q~`` (:func:`_tilde_norm_error`, independent of the
size of ``N``), and ``max(S~^2, n~) >= 1/4``, so the clipped norm is at most ``C' (1 + eps_c) sqrt(1 + 4.1
e_n)``; the weights' roundings (``6 u``), the statistics' encodings in the tail (``u / 2`` each, the
``record_error``) and the sum's roundings come off ``C`` first. With the defaults on Adult (K = 10, clip 2)
``C'`` is ~7e-5 below ``C`` (the all-Z_2^128 step: ~3e-6); with per-record gradients in the hundreds (``n``
up to ``2^24``) ~0.1%, and more as training sharpens the model, up to ``TAIL_MAX_CLIP_LOSS`` (2%) before
the step runs its tail wide. Compared with the float64 computation on the same factors, each released
coordinate is within ``|coef| B (eps_c + 3 e_n + (2K + 11) u + (K + 1) e_q / min S_i)`` plus the encodings,
the coefficients' roundings and ``2^-release_bits``, see :func:`gradient_error_bound` (``e_q ~ 2.5 2^-f``:
records whose parties' factors barely overlap, ``S_i`` near the domain's edge, keep only ``f + floor_log2``
bits).

References
----------
Paper 002 (``/work/shared/papers/002_c49a9709e0e6dfb2.txt``), Eqs. 18-30, section 4.5.1 (renormalization),
Algorithm 1; Abadi et al., CCS 2016 (DP-SGD); Kairouz, Liu, Steinke, ICML 2021 (distributed discrete Gaussian).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import HIGH_PRECISION, FixedPointFormat
from mpdp.crypto.renormalization import RenormalizationParams
from mpdp.crypto.ring import RingArray
from mpdp.dp.sensitivities.dpvi import mpc_clip_constant
from mpdp.errors import DomainError, ParameterError, PrecisionError, ShapeMismatchError, explain
from mpdp.protocols.mpc.arithmetic import convert, matmul_owned, mul_owned
from mpdp.protocols.mpc.clipping import ClipFactorParams, inv_sqrt_max
from mpdp.protocols.mpc.functions import _mul, _normalise, mul_known
from mpdp.protocols.mpc.session import MPCSession
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = [
    "UNRENORMALIZED_SHIFT",
    "GradientPrecision",
    "PartyInput",
    "StatMap",
    "StepPublic",
    "clip_domain_bound",
    "clipped_gradient_sum",
    "gradient_error_bound",
    "plan_step",
    "release",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

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
#: multiplier at most ``1 / (1 - loss)`` times larger (about 2% here). Measured (session 13): in ``mpdp run dpvi
#: --dataset adult --epsilon 1 --seed 3`` (10 epochs) the Z_2^64 tail's loss grows from 0.01% to 1.27% by the last
#: epoch, so the whole run keeps the 64-bit tail, where the previous limit (0.1%) sent two thirds of the steps to
#: Z_2^128: 72.9 s -> 63.4 s, test NLL 9.4458 -> 9.4503; Figure 3 (``mpdp reproduce 002-fig3 --seed 2026``, 33
#: epochs): final test NLL +1.28% -> +1.34% against float64. Session 14, Figure 3's settings (``python -m
#: bench.probes.dpvi_tail``: the float64 trajectories of three seeds, 20 thetas from each epoch's posterior): the
#: clipping domain reaches 2^28 by epoch 7-9, the median loss peaks at 1.05-1.49%, and no theta of the 33 epochs
#: runs the tail wide.
TAIL_MAX_CLIP_LOSS = 2e-2


@dataclass(frozen=True)
class StatMap:
    """The public linear map from a party's weighted statistics to its gradient coordinates.

    For coordinate ``d``: ``grad[d] = coef_stat[d] * M[stat[d], comp[d]] + coef_sum[d] * s[comp[d]]`` with
    ``M = T^T w`` (statistics x components) and ``s = sum_i w_i`` (components).
    """

    stat: IntArray
    comp: IntArray
    coef_stat: FloatArray
    coef_sum: FloatArray

    def __post_init__(self) -> None:
        n = self.stat.shape
        if self.stat.ndim != 1 or any(a.shape != n for a in (self.comp, self.coef_stat, self.coef_sum)):
            raise ShapeMismatchError(explain("StatMap arrays", [self.stat.shape, self.comp.shape,
                                             self.coef_stat.shape, self.coef_sum.shape], "four vectors of one length",
                                             "build it with FeatureBlock.stat_map"))
        if not (_all_finite(self.coef_stat) and _all_finite(self.coef_sum)):
            raise ParameterError(explain("StatMap coefficients", "NaN or inf", "finite numbers",
                                         "the model's parameters overflowed; lower the learning rate"))

    @property
    def size(self) -> int:
        return int(self.stat.size)

    def apply(self, M: FloatArray, s: FloatArray) -> FloatArray:
        """The map in float64 (the plaintext reference)."""
        out: FloatArray = self.coef_stat * M[self.stat, self.comp] + self.coef_sum * s[self.comp]
        return out


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
        largest factor 1): rare, and dropping them did not move Figure 3's result (below).
    floor_factors:
        Paper 002's Algorithm 4 instead: each party floors its renormalized factors at ``2^(floor_log2 / P)``,
        so that ``S_i >= 2^floor_log2`` by construction. We measured that this biases the model (default
        False): with the floor, a component that one party rates ``e^-30`` below its best keeps a
        responsibility of up to ``2^(floor_log2 / P) = 2^-18`` instead of ``~1e-13``, times gradients that
        reach ``1e4`` once the components are sharp, in the same direction at every step. In float64 at
        Figure 3's settings (Adult, 33 epochs, identical noise: ``mpdp reproduce 002-floor``, recorded in
        :mod:`mpdp.learning.dpvi.experiments`), the floor raised the final test NLL by 2.7-3.4% (seeds 1-3),
        while dropping the records below the domain instead left it unchanged to three decimals.
    clip_degree, clip_buckets:
        Degree of the inverse square root's polynomial and buckets per octave of its normalisation
        (:class:`~mpdp.protocols.mpc.clipping.ClipFactorParams`). Default: half powers of two and degree 3
        (relative error 3.3e-5), evaluated with one product of powers (``t^2`` alongside ``v root t``, see
        :func:`~mpdp.protocols.mpc.clipping.inv_sqrt_max`); degree 4 (2.6e-6) needs one product round more, 5
        or 6 (2e-7 or 1.7e-8) two. Quarter or eighth powers with degree 2 (5.3e-5 or 6.5e-6, one product of
        powers) double or quadruple the comparisons' thresholds, which cost more than the round they save
        (DPVI step, callgrind: +1.6 M instructions of 75.7 M with quarter powers); octaves (1) and degree 8
        (5.9e-8).
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


@dataclass(frozen=True)
class PartyInput:
    """One party's private contribution to a step (rows = the minibatch, in the public order)."""

    factors: FloatArray  # (B, K) renormalized e_ikj in [0, 1]
    sq_norms: FloatArray  # (B, K) N_ikj / C'^2
    stats: FloatArray  # (B, s_j)


def _tilde_norm_error(K: int, P: int, inv_c2: float, u: float) -> float:
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
    * the computed ``n~`` is within :func:`_tilde_norm_error` of these exact sums, and ``S~^2 < 1``.

    ``(1 + K u)^2 <= (1 + 1e-3)^2`` is checked. Up to session 4, :func:`plan_step` used
    ``K ((1 + 1e-3)^2 N + 4 / C^2) + 1``: an unneeded factor ``K`` (a domain ~10x wider than needed, i.e. 3 to
    4 more bits to compare and a larger relative error of the clipping factor).
    """
    K = int(components)
    if not K * resolution <= 1e-3:
        raise PrecisionError(explain("components x tail resolution", f"{K} x {resolution:.3g}", "<= 1e-3",
                                     "use a tail format with more fractional bits"))
    grow = (1 + 1e-3) ** 2
    return grow * float(sq_norm_bound) + (grow + 1.0) * float(inv_clip2_bound) \
        + _tilde_norm_error(K, int(parties), float(inv_clip2_bound), resolution) + 1.0


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
    # with the clipping domain (the model's gradient bounds grow as training sharpens it: on Adult the Z_2^64
    # tail leaves C' 0.2% below C at epoch 5 and 1.3% at epoch 10). When the tail would cost more than
    # TAIL_MAX_CLIP_LOSS of C, the step runs its tail in ``fmt`` instead: every party decides the same from public
    # values.
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
        norm_error = 4.1 * _tilde_norm_error(K, P, 4.0 / clip**2, u)  # relative to max(S~^2, n~) >= 1/4
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


Shares = list[SharedFixedPoint]


def _share_inputs(session: MPCSession, public: StepPublic, mine: PartyInput, fmt: FixedPointFormat,
                  tail: FixedPointFormat) -> tuple[SharedFixedPoint, Shares]:
    """``q_ik = pi_k prod_j e_ikj`` in ``fmt`` and every party's ``sq_norms`` in ``tail``, from this party's
    checked input (:func:`_check_input`).

    The factors are never shared: the last party's enter shared trivially (its share the values, the others'
    zero, nothing drawn or sent) and every other party's are multiplied in as owned operands
    (:func:`~mpdp.protocols.mpc.arithmetic.mul_owned`; party 0's carry ``pi``): the two rounds of a product per
    party after the last, as a product of shared factors. The norms are seeded inputs
    (:meth:`~mpdp.protocols.mpc.session.MPCSession.input_seeded`: the shapes and bounds are public), so no
    message and no round: the others' shares come from the keys each pair agreed on at the session's first step.
    The statistics are not shared either: each party multiplies its own into the weights
    (:func:`~mpdp.protocols.mpc.arithmetic.matmul_owned`)."""
    K, B = public.components, public.batch
    parties = session.parties
    me = parties.index(session.comm.name)
    factors = mine.factors * public.weights if me == 0 else mine.factors  # party 0's carry pi: pi_k e_ik0
    ids = [session.new_id() for _ in parties]
    norms = []
    for j, owner in enumerate(parties):
        bound = public.sq_norm_bounds[j]
        values = mine.sq_norms if j == me else None
        shared = session.input_seeded(owner, values, shape=(B, K), bound=max(1.0, bound), fmt=tail, sharing_id=ids[j])
        norms.append(shared.assume_bound(bound))

    def bound_of(j: int) -> float:
        return float(public.weights.max()) if j == 0 else 1.0

    last = len(parties) - 1
    q = session.from_shares(fmt.encode(factors) if me == last else fmt.ring.zeros((B, K)), bound=bound_of(last),
                            fmt=fmt)
    for j in range(last - 1, -1, -1):
        q = mul_owned(q, factors if me == j else None, parties[j], bound_of(j))
    return q.assume_bound(float(public.weights.max())), norms


def _check_input(mine: PartyInput, public: StepPublic, me: int) -> PartyInput:
    """This party's contribution, refused if it breaks the public bounds; its norms and statistics clipped to
    their bounds exactly (they may exceed them by a relative 1e-9 of float64 rounding)."""
    K, B = public.components, public.batch
    expected = {"factors": (B, K), "sq_norms": (B, K), "stats": (B, public.stat_counts[me])}
    for name, shape in expected.items():
        value = getattr(mine, name)
        if not isinstance(value, np.ndarray) or value.shape != shape:
            raise ShapeMismatchError(explain(name, getattr(value, "shape", value), f"{shape}",
                                             "pass one row per minibatch record"))
        if not _all_finite(value):
            raise DomainError(explain(name, "NaN or inf", "finite values", "check the local computation"))
    low, high = _range(mine.factors)
    if low < 0 or high > 1:
        raise DomainError(explain("factors", "values outside [0, 1]", "renormalized factors in [0, 1]",
                                  "renormalize (mpdp.crypto.renormalization.renormalize)"))
    low, high = _range(mine.sq_norms)
    if low < 0 or high > public.sq_norm_bounds[me] * (1 + 1e-9):
        raise DomainError(explain("sq_norms", high, f"in [0, {public.sq_norm_bounds[me]:.6g}]",
                                  "scale by 1 / clip'^2 and keep the public bound"))
    low, high = _range(mine.stats)
    if max(-low, high) > public.stat_bounds[me] * (1 + 1e-9):
        raise DomainError(explain("stats", max(-low, high), f"|t| <= {public.stat_bounds[me]:.6g}",
                                  "keep the statistics within their public bound"))
    norm_bound, stat_bound = public.sq_norm_bounds[me], public.stat_bounds[me]
    return PartyInput(factors=mine.factors, sq_norms=np.minimum(mine.sq_norms, norm_bound),
                      stats=np.clip(mine.stats, -stat_bound, stat_bound))


def _all_finite(a: FloatArray) -> bool:
    """No NaN or inf in ``a`` (the ufunc reductions called directly: numpy's ``np.all`` and ``ndarray.all`` go
    through Python-level wrappers, which cost more than the check on a step's small arrays)."""
    return bool(np.logical_and.reduce(np.isfinite(a), axis=None))


def _range(a: FloatArray) -> tuple[float, float]:
    """``(min, max)`` of finite ``a`` (``(inf, -inf)`` when empty), by the ufunc reductions as :func:`_all_finite`."""
    return (float(np.minimum.reduce(a, axis=None, initial=np.inf)),
            float(np.maximum.reduce(a, axis=None, initial=-np.inf)))


def clipped_gradient_sum(session: MPCSession, public: StepPublic, mine: PartyInput,
                         precision: GradientPrecision) -> SharedFixedPoint:
    """This party's shares of the clipped gradient sum, on the release grid (scale ``release_bits``), no noise.

    Every computing party of ``session`` calls it with the same ``public`` and its own ``mine``. The result's
    coordinates are ordered as :attr:`StepPublic.dim` says.
    """
    fmt, tail = precision.fmt, public.tail
    P, K, B = session.n, public.components, public.batch
    if len(public.maps) != P:
        raise ShapeMismatchError(explain("public.maps", len(public.maps), f"{P} (one per computing party)",
                                         "plan the step for this session's parties"))
    pi = public.weights
    me = session.parties.index(session.comm.name)
    mine = _check_input(mine, public, me)
    # 1. q_ik = pi_k prod_j e_ikj (party 0's factors carry pi) and S_i, normalised: q~ = q 2^-k, S~ in [1/2, 1)
    q, norms = _share_inputs(session, public, mine, fmt, tail)
    total = q.sum(axis=1).assume_bound(1.0 + 1e-9)
    (scale,) = _normalise(total, precision.sum_low_exp(), 1, False, [lambda k: 2.0**-k])
    # q 2^-k and (q - pi' S) 2^-k (pi' = pi on PI_BITS fractional bits, combined exactly) in one product
    ring = q.ring
    q = q.rescale()
    lifted = q.share if PI_BITS == 0 else ring.mul_int(q.share, 1 << PI_BITS)
    pi_ints = np.rint(pi[: K - 1] * 2.0**PI_BITS).astype(np.int64)
    centred = ring.sub(ring.apply(lifted, lambda a: a[:, : K - 1]),
                       ring.mul_int(ring.apply(total.rescale().share, lambda a: a[:, None]), pi_ints))
    both = q.derive(ring.combine([lifted, centred], lambda arrays: np.concatenate(arrays, axis=1)),
                    scale=q.scale + PI_BITS, bound=1.0)
    # ... truncated straight into the tail format: from here on every value is of order 1
    normalised = mul_known(both, scale.reshape(B, 1), 1.0, fmt=None if tail == fmt else tail)
    qt = normalised[:, :K]
    st = qt.sum(axis=1).reshape(B, 1).assume_bound(1.0 + K * tail.resolution)
    # 2. n~ = n_i S~^2 = sum_k q~ (q~ N) + sum_(k<K) (q~ - pi S~)^2 / C'^2 and S~^2, in two rounds of products;
    # q~ N first, then times q~, so that N's size does not multiply a rounding
    n_sum = norms[0]
    for other in norms[1:]:
        n_sum = n_sum + other
    v = normalised[:, K:]
    prods = _mul(concatenate([qt, st, v], axis=1), concatenate([n_sum, st, v], axis=1))  # q~ N, S~^2, v^2
    inv_c2 = session.public(np.full((B, K - 1), 1.0 / public.clip**2), fmt=tail)
    qn, v2 = prods[:, :K], prods[:, K + 1 :].assume_bound(1.0 + 4 * tail.resolution)
    known = max(qn.bound * qt.bound, v2.bound * inv_c2.bound)  # the products' own bounds, not their maximum's
    left, right = concatenate([qn, v2], axis=1), concatenate([qt, inv_c2], axis=1)
    terms = mul_known(left, right, known) if tail.raw_bound_ok(known, 2 * tail.frac_bits) else _mul(left, right)
    n_tilde = terms.sum(axis=1).assume_bound(2.0 ** public.clip_params.high_exp)
    # 3. w = q~ / sqrt(max(S~^2, n~)) = c r and c = S~ / sqrt(max(S~^2, n~)) = 1 / sqrt(max(1, n_i))
    out = inv_sqrt_max(prods[:, K].assume_bound(1.0 + 4 * K * tail.resolution), n_tilde,
                       concatenate([qt, st], axis=1), public.clip_params, low_exp=NORM_LOW_EXP)
    w, c = out[:, :K].assume_bound(1.0 + 1e-3), out[:, K].assume_bound(1.0 + 1e-3)
    # 4. the statistics' weighted sums, T_j^T w per party j: its statistics T_j stay its own (never shared)
    blocks = matmul_owned(w, mine.stats.T, [(count, B) for count in public.stat_counts], public.stat_bounds)
    M = concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]  # (statistics, K)
    s = w.sum(axis=0)
    total_c = c.sum(axis=0).reshape((1,))
    # 5. the public linear map, on raw shares, one truncation onto the release grid
    values = concatenate([M.flatten(), s, total_c]).rescale()
    if values.fmt != public.release_fmt:  # lifted into the wide ring for the map's large constants (1 round)
        values = convert(values, public.release_fmt)
    n_stat = int(M.shape[0])
    idx_s, idx_c = n_stat * K, n_stat * K + K
    first = [np.arange(K - 1) + idx_s]
    second = [np.full(K - 1, idx_c)]
    coef1 = [np.ones(K - 1)]
    coef2 = [-pi[: K - 1]]
    offset = 0
    for m, count in zip(public.maps, public.stat_counts, strict=True):
        first.append((m.stat + offset) * K + m.comp)
        second.append(idx_s + m.comp)
        coef1.append(m.coef_stat)
        coef2.append(m.coef_sum)
        offset += count
    gathered = stack([values[np.concatenate(first)], values[np.concatenate(second)]])
    coefs = np.stack([np.concatenate(coef1), np.concatenate(coef2)])
    return _linear_to_grid(gathered, coefs, precision.release_bits)


#: The noisy sum must stay below ``2^(l - 2)`` in grid units with the noise at up to this many standard deviations
#: (a discrete Gaussian exceeds ``64 sigma`` with probability below ``2 e^-2048``).
RELEASE_NOISE_SIGMAS = 64


def _release_format(public_like: tuple[FloatArray, Sequence[StatMap], float, int], tail: FixedPointFormat,
                    precision: GradientPrecision, clip: float, noise_std: float) -> tuple[FixedPointFormat, int]:
    """Where the step's map, noise and opening run, with the map's constants' fractional bits there
    (:func:`_grid_extra_floor`): ``tail`` when it differs from ``precision.release_fmt`` and (a) the map's
    constants get at least ``GRID_EXTRA_BITS`` fractional bits in it, (b) the grid ``2^-release_bits`` is no
    finer than the map's scale ``f_tail + extra``, and (c) the released sum (at most ``batch C`` in norm) plus
    ``RELEASE_NOISE_SIGMAS`` noise deviations stays below ``2^(l - 2)`` grid units; else
    ``precision.release_fmt``. Public values only: every party decides the same."""
    wide = precision.release_fmt
    if tail != wide and math.isfinite(noise_std) and noise_std >= 0:
        extra = _grid_extra_floor(public_like, tail)
        reach = (public_like[3] * clip * (1 + 1e-3) + RELEASE_NOISE_SIGMAS * noise_std + 1.0) \
            * 2.0**precision.release_bits
        if extra >= GRID_EXTRA_BITS and precision.release_bits <= tail.frac_bits + extra \
                and reach < 2.0 ** (tail.ring_bits - 2):
            return tail, extra
    return wide, _grid_extra_floor(public_like, wide)


def _grid_extra_bits(fmt: FixedPointFormat, scale: int, bound: float, top: float, rows: int = 2) -> int:
    """The fractional bits :func:`_linear_to_grid` gives its constants (``max |coef| = top``) for values up to
    ``bound`` at ``scale``: as many as the ring's capacity leaves, at most 40; fewer for larger bounds."""
    total = bound * top * rows
    headroom = fmt.raw_capacity_bits - scale - math.ceil(math.log2(max(total, 2.0**-30))) - 1
    return int(min(40, headroom, 61 - math.ceil(math.log2(max(top, 1.0)))))


def _grid_extra_floor(public_like: tuple[FloatArray, Sequence[StatMap], float, int], fmt: FixedPointFormat) -> int:
    """A lower bound of the constants' fractional bits in the step's :func:`_linear_to_grid`, from public values
    only: ``(M, s, sum_i c_i)`` are bounded by ``(max(max|T|, 1) (1 + 1e-3) + 1e-3) B + 1``."""
    pi, maps, t_max, batch = public_like
    top = max([1.0, float(np.max(pi[:-1], initial=0.0))]
              + [float(np.max(np.abs(m.coef_stat), initial=0.0)) for m in maps]
              + [float(np.max(np.abs(m.coef_sum), initial=0.0)) for m in maps])
    over = (max(t_max, 1.0) * (1 + 1e-3) + 1e-3) * batch + 1.0
    return _grid_extra_bits(fmt, fmt.frac_bits, over, top)


def _linear_to_grid(x: SharedFixedPoint, coefs: FloatArray, bits: int) -> SharedFixedPoint:
    """``sum_0 (coefs * x)`` for public real ``coefs``, exactly on the raw shares, then one truncation to
    scale ``bits``. The constants get ``extra`` fractional bits (:func:`_grid_extra_bits`, at least
    ``GRID_EXTRA_BITS``), so each is within ``2^-(extra + 1)`` of its value."""
    fmt = x.fmt
    top = float(np.max(np.abs(coefs))) if coefs.size else 0.0
    bound = x.bound * top * coefs.shape[0]
    extra = _grid_extra_bits(fmt, x.scale, x.bound, top, coefs.shape[0])
    if extra < GRID_EXTRA_BITS:
        raise PrecisionError(explain("gradient coefficients", f"max |coef| = {top:.6g} on values up to {x.bound:.6g}",
                                     f"room for {GRID_EXTRA_BITS} fractional bits of the constants in {fmt}",
                                     "lower the learning rate (the model's parameters are exploding) or use a "
                                     "wider format"))
    ints = np.rint(coefs * 2.0**extra).astype(np.int64)
    ring = x.ring
    raw = ring.sum(ring.mul_int(x.share, ints), 0)
    exact = x.derive(raw, scale=x.scale + extra, bound=bound + 1.0)
    return exact.truncate(exact.scale - bits)


def release(total: SharedFixedPoint, noise_units: RingArray | None) -> FloatArray:
    """Add this party's noise share (integers in units of the release grid, or None) and open the sum."""
    if noise_units is None:
        return total.reveal()
    ring = total.ring
    if ring.shape(noise_units) != total.shape:
        raise ShapeMismatchError(explain("noise", ring.shape(noise_units), f"{total.shape}", "one draw per coordinate"))
    return total.derive(ring.add(total.share, noise_units)).reveal()


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
    e_n = _tilde_norm_error(K, P, 1.0 / public.clip**2, u)
    eps_w = public.clip_params.max_error_bound(tail, NORM_LOW_EXP) + 3 * e_n + (2 * K + 10) * u \
        + (K + 1) * e_q / low
    t = max(public.stat_bounds) if public.stat_bounds else 1.0
    grid = 2.0 ** -(_grid_extra_floor((public.weights, public.maps, t, public.batch), tail) + 1) * (1 + 1e-3)
    per_record = [np.ones(public.components - 1) * (1.0 + 1.0)]
    encoding = [np.full(public.components - 1, grid)]  # and the map's constants' roundings
    for m in public.maps:
        per_record.append(np.abs(m.coef_stat) * t + np.abs(m.coef_sum))
        encoding.append(np.abs(m.coef_stat) * u / 2 * (1 + 1e-3) + grid * (t + 1))
    scale = np.concatenate(per_record)
    out: FloatArray = scale * public.batch * (eps_w + u) + public.batch * np.concatenate(encoding) \
        + 2.0 ** -precision.release_bits + u * (scale + 2)
    return out
