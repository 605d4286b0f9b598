"""The step's MPC program: every computing party's shares of the clipped gradient sum
(:func:`clipped_gradient_sum`, steps 1-5 of :mod:`mpdp.protocols.mixture_gradient`) and its noisy opening
(:func:`release`, step 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import RingArray
from mpdp.errors import DomainError, PrecisionError, ShapeMismatchError, explain
from mpdp.protocols.mixture_gradient.bounds import grid_extra_bits
from mpdp.protocols.mixture_gradient.parameters import (
    GRID_EXTRA_BITS,
    NORM_LOW_EXP,
    PI_BITS,
    GradientPrecision,
    StepPublic,
)
from mpdp.protocols.mixture_gradient.stat_map import FloatArray, all_finite, finite_range
from mpdp.protocols.mpc.arithmetic import convert, matmul_owned, mul_owned
from mpdp.protocols.mpc.clipping import inv_sqrt_max
from mpdp.protocols.mpc.functions import mul_any_bound, mul_known, normalise_by_buckets
from mpdp.protocols.mpc.session import MPCSession
from mpdp.protocols.mpc.tensor import SharedFixedPoint, concatenate, stack

__all__ = ["PartyInput", "check_input", "clipped_gradient_sum", "release"]


@dataclass(frozen=True)
class PartyInput:
    """One party's private contribution to a step (rows = the minibatch, in the public order)."""

    factors: FloatArray  # (B, K) renormalized e_ikj in [0, 1]
    sq_norms: FloatArray  # (B, K) N_ikj / C'^2
    stats: FloatArray  # (B, s_j)


Shares = list[SharedFixedPoint]


def _share_inputs(session: MPCSession, public: StepPublic, mine: PartyInput, fmt: FixedPointFormat,
                  tail: FixedPointFormat) -> tuple[SharedFixedPoint, Shares]:
    """``q_ik = pi_k prod_j e_ikj`` in ``fmt`` and every party's ``sq_norms`` in ``tail``, from this party's
    checked input (:func:`check_input`).

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


def check_input(mine: PartyInput, public: StepPublic, me: int) -> PartyInput:
    """This party's contribution, refused if it breaks the public bounds; its norms and statistics clipped to
    their bounds exactly (they may exceed them by a relative 1e-9 of float64 rounding)."""
    K, B = public.components, public.batch
    expected = {"factors": (B, K), "sq_norms": (B, K), "stats": (B, public.stat_counts[me])}
    for name, shape in expected.items():
        value = getattr(mine, name)
        if not isinstance(value, np.ndarray) or value.shape != shape:
            raise ShapeMismatchError(explain(name, getattr(value, "shape", value), f"{shape}",
                                             "pass one row per minibatch record"))
        if not all_finite(value):
            raise DomainError(explain(name, "NaN or inf", "finite values", "check the local computation"))
    low, high = finite_range(mine.factors)
    if low < 0 or high > 1:
        raise DomainError(explain("factors", "values outside [0, 1]", "renormalized factors in [0, 1]",
                                  "renormalize (mpdp.crypto.renormalization.renormalize)"))
    low, high = finite_range(mine.sq_norms)
    if low < 0 or high > public.sq_norm_bounds[me] * (1 + 1e-9):
        raise DomainError(explain("sq_norms", high, f"in [0, {public.sq_norm_bounds[me]:.6g}]",
                                  "scale by 1 / clip'^2 and keep the public bound"))
    low, high = finite_range(mine.stats)
    if max(-low, high) > public.stat_bounds[me] * (1 + 1e-9):
        raise DomainError(explain("stats", max(-low, high), f"|t| <= {public.stat_bounds[me]:.6g}",
                                  "keep the statistics within their public bound"))
    norm_bound, stat_bound = public.sq_norm_bounds[me], public.stat_bounds[me]
    return PartyInput(factors=mine.factors, sq_norms=np.minimum(mine.sq_norms, norm_bound),
                      stats=np.clip(mine.stats, -stat_bound, stat_bound))


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
    mine = check_input(mine, public, me)
    # 1. q_ik = pi_k prod_j e_ikj (party 0's factors carry pi) and S_i, normalised: q~ = q 2^-k, S~ in [1/2, 1)
    q, norms = _share_inputs(session, public, mine, fmt, tail)
    total = q.sum(axis=1).assume_bound(1.0 + 1e-9)
    (scale,) = normalise_by_buckets(total, precision.sum_low_exp(), 1, False, [lambda k: 2.0**-k])
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
    prods = mul_any_bound(concatenate([qt, st, v], axis=1), concatenate([n_sum, st, v], axis=1))  # q~ N, S~^2, v^2
    inv_c2 = session.public(np.full((B, K - 1), 1.0 / public.clip**2), fmt=tail)
    qn, v2 = prods[:, :K], prods[:, K + 1 :].assume_bound(1.0 + 4 * tail.resolution)
    known = max(qn.bound * qt.bound, v2.bound * inv_c2.bound)  # the products' own bounds, not their maximum's
    left, right = concatenate([qn, v2], axis=1), concatenate([qt, inv_c2], axis=1)
    fits = tail.raw_bound_ok(known, 2 * tail.frac_bits)
    terms = mul_known(left, right, known) if fits else mul_any_bound(left, right)
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


def _linear_to_grid(x: SharedFixedPoint, coefs: FloatArray, bits: int) -> SharedFixedPoint:
    """``sum_0 (coefs * x)`` for public real ``coefs``, exactly on the raw shares, then one truncation to
    scale ``bits``. The constants get ``extra`` fractional bits (:func:`grid_extra_bits`, at least
    ``GRID_EXTRA_BITS``), so each is within ``2^-(extra + 1)`` of its value."""
    fmt = x.fmt
    top = float(np.max(np.abs(coefs))) if coefs.size else 0.0
    bound = x.bound * top * coefs.shape[0]
    extra = grid_extra_bits(fmt, x.scale, x.bound, top, coefs.shape[0])
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
