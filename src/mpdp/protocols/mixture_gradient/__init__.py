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
   normalise_by_buckets`) and one product gives ``q~ = q 2^-k`` and ``v = (q - pi S) 2^-k``, with ``S~ = sum_k q~`` in
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

Layout
------
:mod:`~mpdp.protocols.mixture_gradient.stat_map` (the statistics' linear map, :class:`StatMap`) and
:mod:`~mpdp.protocols.mixture_gradient.parameters` (the constants, :class:`GradientPrecision` and the plan's type
:class:`StepPublic`) are the public values; :mod:`~mpdp.protocols.mixture_gradient.bounds` derives the error bounds
and the clipping domain from them, :mod:`~mpdp.protocols.mixture_gradient.plan` the plan of a step
(:func:`plan_step`), and :mod:`~mpdp.protocols.mixture_gradient.step` runs the MPC program
(:func:`clipped_gradient_sum`, :func:`release`); :mod:`~mpdp.protocols.mixture_gradient.masked_step` runs the same
computation on masked wires in 10 online rounds instead of 22 to 37 (:func:`masked_gradient_sum`; :func:`gradient_sum`
picks it where the session computes on masked wires and the step's parameters fit: DPVI's default with two data
parties; the circuit step is the option for three or more, and the one with the least CPU). Each module imports only
those named before it.

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
``n~`` is within ``e_n`` of the exact one of the shared ``q~`` (:func:`tilde_norm_error`, independent of the
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
Paper 002 (Tajeddine et al., arXiv 2020; :data:`mpdp.learning.papers.PAPERS`), Eqs. 18-30, section 4.5.1
(renormalization), Algorithm 1; Abadi et al., CCS 2016 (DP-SGD); Kairouz, Liu, Steinke, ICML 2021 (distributed
discrete Gaussian).
"""

from mpdp.protocols.mixture_gradient.bounds import clip_domain_bound, gradient_error_bound
from mpdp.protocols.mixture_gradient.masked_step import gradient_sum, masked_gradient_sum
from mpdp.protocols.mixture_gradient.parameters import (
    CLIP_EXP_STEP,
    NORM_LOW_EXP,
    TAIL_FORMAT,
    TAIL_MAX_CLIP_LOSS,
    UNRENORMALIZED_SHIFT,
    GradientPrecision,
    StepPublic,
)
from mpdp.protocols.mixture_gradient.plan import plan_step
from mpdp.protocols.mixture_gradient.stat_map import StatMap
from mpdp.protocols.mixture_gradient.step import PartyInput, clipped_gradient_sum, release

__all__ = [
    "CLIP_EXP_STEP",
    "NORM_LOW_EXP",
    "TAIL_FORMAT",
    "TAIL_MAX_CLIP_LOSS",
    "UNRENORMALIZED_SHIFT",
    "GradientPrecision",
    "PartyInput",
    "StatMap",
    "StepPublic",
    "clip_domain_bound",
    "clipped_gradient_sum",
    "gradient_error_bound",
    "gradient_sum",
    "masked_gradient_sum",
    "plan_step",
    "release",
]
