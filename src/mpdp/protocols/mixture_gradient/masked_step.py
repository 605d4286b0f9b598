"""The step's MPC program on masked wires (:mod:`mpdp.protocols.mpc.masked`): the clipped gradient sum in 9 online
rounds, and its opening in a 10th (two computing parties and a dealer).

The same computation as :mod:`~mpdp.protocols.mixture_gradient.step` (the package docstring's steps 1-5), compiled
ahead of time into rounds whose correlations the dealer deals before the step (one request, prefetched a step
ahead like the circuit path's):

1. the parties open their own values masked: party 0 ``u = pi e_0``, party 1 ``e_1``, both their ``N`` and their
   statistics ``T`` (round 1); ``q = u e_1`` and ``S = sum_k q`` are then local (dealt cross terms);
2. ``q``, ``S`` and ``v = q_(k<K) - pi S`` are opened truncated (round 2); one comparison key per record with the
   thresholds ``2^(2j - 37)`` gives the power of four ``sigma`` that brings ``S~ = sigma S / 2`` into ``[1/4, 1)``
   (records below ``2^-37`` get ``sigma = 0``: they contribute nothing, as in the circuit step), opened (round 3);
3. ``q~ = sigma q / 2``, ``S~``, ``v~`` (round 4), then ``n~ = sum_k q~^2 N + sum_(k<K) v~^2 / C'^2`` and ``S~^2``
   (round 5), all from the same masked ``q~``, ``v~`` that the weights use;
4. two keys per record: ``n~`` against the powers of 16 up to the clipping domain ``2^H`` and ``[n~ >= S~^2]``, with
   payloads, give ``z = max(S~^2, n~) 16^-k`` in ``[1/16, 1)`` and the factor ``4^-k``, opened (round 6); a table of
   ``1/sqrt`` (:func:`rsqrt_table`) times the masked ``4^-k`` gives ``c' = 1/sqrt(max(S~^2, n~))``, opened (round 7);
5. ``w = q~ c'`` is opened exactly (round 8); the statistics' weighted sums ``T_j^T w`` are local (party ``j``'s
   ``T_j`` masked by a mask only ``j`` knows), and so are ``s = sum_i w_i`` and ``sum_i S~ c'``; the public gradient
   map, with this step's coefficients as run-time constants, is truncated onto the release grid (round 9);
6. :func:`~mpdp.protocols.mixture_gradient.step.release` adds the noise and opens (round 10).

The program depends on the step's shapes and on public bounds rounded up to powers of two, so consecutive steps
share one compiled program and one dealer plan; the coefficients (``pi``, ``1/C'^2``, the map's) are constants of
each run. :func:`masked_applies` says when the step's parameters fit this program (the ring's capacity, the clipping
factor's precision); otherwise the circuit step runs.

Accuracy
--------
Every value the circuit step's tail rounds to ``2^-24`` is rounded here to ``2^-24`` or finer (``q~``, ``S~``,
``v~`` and ``T`` at 24 fractional bits, ``N`` at 28, ``n~`` and ``S~^2`` exact from them), the products are exact in
the ring, and ``c'`` carries a relative error below ``eps_c / 4`` (the table's ``1e-7``, its own rounding to
:func:`clip_frac` bits, ``z``'s to ``2^-60``): the released sum stays within :func:`~mpdp.protocols.mixture_gradient.
gradient_error_bound`, and the clipping (privacy) argument of the package docstring holds with the same ``C'``:
``n~`` is computed from the very ``q~`` and ``v~`` that the weights use, within ``e_n`` of the released record's norm.

Security
--------
As the circuit step: semi-honest parties, a dealer colluding with none; every opening is uniformly masked, the
comparison keys and tables are evaluated at public points. ``T``, ``N`` and the factors are opened masked by masks
their owners alone know (the dealer knows them too).

References
----------
Paper 002 (Tajeddine, Jälkö, Kaski and Honkela, "Privacy-preserving Data Sharing on Vertically Partitioned Data",
arXiv 2010.09293, 2020), Eqs. 18-30, Algorithm 1; Patra et al., "ABY2.0", USENIX Security 2021 (masked wires);
Boyle et al., Eurocrypt 2021 (comparison keys with payloads).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.masked.tables import TableSpec
from mpdp.errors import ParameterError, explain
from mpdp.protocols.mixture_gradient.bounds import grid_extra_floor
from mpdp.protocols.mixture_gradient.parameters import NORM_LOW_EXP, PI_BITS, GradientPrecision, StepPublic
from mpdp.protocols.mixture_gradient.step import PartyInput, check_input, clipped_gradient_sum
from mpdp.protocols.mpc.masked.program import Compiled, Program
from mpdp.protocols.mpc.masked.run import execute
from mpdp.protocols.mpc.session import MPCSession
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["ROUNDS", "clip_frac", "gradient_sum", "masked_applies", "masked_gradient_sum", "rsqrt_table"]

ROUNDS = 9
"""The program's online rounds (the release's opening is one more)."""
F_IN, F_N, F_T, F_Q, F_TILDE, F_Z = 48, 28, 24, 64, 24, 60
_S_COMPARE = 45  # S's comparisons: 2^-45 against thresholds from 2^-37 (a misplaced record: S~ within 2^-8 of 1/4)
_N_COMPARE = 24  # n~'s and n~ - S~^2's comparisons
_INV_C2_BITS = 28
_S_LOW = -37  # records with S below 2^-37 contribute nothing


@functools.lru_cache(maxsize=4)
def rsqrt_table(degree: int = 8) -> TableSpec:
    """``1/sqrt(z)`` for ``z`` in ``[1/16 - 2^-9, 1 + 2^-9)`` at 60 fractional bits, entries of width 1/32: degree 8
    has a relative error below 1e-7, degree 10 below 3e-9 (``tests/protocols/mixture_gradient``)."""
    lo = math.floor((1 / 16 - 2.0**-9) * 2**F_Z)
    hi = math.ceil((1 + 2.0**-9) * 2**F_Z)  # z may pass 1 by the roundings of max(S~^2, n~) below 1
    return TableSpec("rsqrt", F_Z, lo, hi - lo, F_Z, F_Z - 5, degree, "cheb", 44, 40)


def clip_frac(high_exp: int, eps_c: float) -> int:
    """``c'``'s fractional bits: a relative error below ``eps_c / 8`` down to ``c' = 2^-(H/2 + 1)``."""
    return math.ceil(high_exp / 2 + 1 + math.log2(8 / eps_c))


def _pow2(x: float) -> float:
    return 2.0 ** math.ceil(math.log2(max(x, 2.0**-30)))


@dataclass(frozen=True)
class _Key:
    """What the compiled program depends on (public, identical at both parties)."""

    K: int
    B: int
    counts: tuple[int, int]
    stats: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    norm_bounds: tuple[float, float]
    stat_bounds: tuple[float, float]
    high_exp: int
    c_frac: int
    extra: int
    coef_top: float
    release_bits: int
    release_ring: int
    degree: int


def _key(public: StepPublic, precision: GradientPrecision) -> tuple[_Key | None, str]:
    """The program's key for this step, or None and why the masked program does not apply."""
    if len(public.maps) != 2 or precision.fmt.ring_bits != 128:
        return None, "two computing parties and a Z_2^128 format"
    eps_c = public.clip_params.max_error_bound(public.tail, NORM_LOW_EXP)
    H = public.clip_params.high_exp
    c_frac = clip_frac(H, eps_c)
    degree = 8 if eps_c >= 4e-7 else 10
    tb = [_pow2(b) for b in public.stat_bounds]
    coef_top = _pow2(max([1.0] + [float(np.max(np.abs(m.coef_stat), initial=0.0)) for m in public.maps]
                         + [float(np.max(np.abs(m.coef_sum), initial=0.0)) for m in public.maps]))
    raw = F_T + F_TILDE + c_frac + math.log2(4.2 * public.batch * max([*tb, 1.0])) + math.log2(coef_top)
    extra = min(40, math.floor(124 - raw))
    floor = grid_extra_floor(public)
    # n~'s normalisation lifts max(S~^2, n~) <= 2^H from 2 F~ + F_N to 4 (H // 4 + 1) more fractional bits
    if extra < max(floor, 16) or H + 2 * F_TILDE + F_N + 4 * (H // 4 + 1) > 126 or c_frac > 44:
        return None, f"room for the map's constants ({extra} bits, {floor} needed) and the clipping domain 2^{H}"
    stats = tuple((tuple(int(s) for s in m.stat), tuple(int(c) for c in m.comp)) for m in public.maps)
    key = _Key(public.components, public.batch, (public.stat_counts[0], public.stat_counts[1]), stats,
               (_pow2(public.sq_norm_bounds[0]), _pow2(public.sq_norm_bounds[1])), (tb[0], tb[1]), H, c_frac, extra,
               coef_top, precision.release_bits, public.release_fmt.ring_bits, degree)
    return key, ""


def masked_applies(session: MPCSession, public: StepPublic, precision: GradientPrecision) -> bool:
    """Whether the step runs on masked wires: a provider dealing masked plans (a dealer, two computing parties),
    a Z_2^128 format, and parameters the program holds (:func:`_key`)."""
    return bool(session.provider.deals_masked_plans) and public.batch > 0 and _key(public, precision)[0] is not None


def _buckets(k: _Key) -> int:
    """``J``: ``n~`` is compared with ``16^0 .. 16^J`` (``16^(J+1) > 2^H``)."""
    return k.high_exp // 4


@functools.lru_cache(maxsize=16)
def _program(k: _Key) -> Compiled:
    p = Program()
    K, B, J = k.K, k.B, _buckets(k)
    u0 = p.owned("u0", 0, (B, K), scale=F_IN, bound=1.0)
    u1 = p.owned("u1", 1, (B, K), scale=F_IN, bound=1.0)
    n0 = p.owned("n0", 0, (B, K), scale=F_N, bound=k.norm_bounds[0])
    n1 = p.owned("n1", 1, (B, K), scale=F_N, bound=k.norm_bounds[1])
    t0 = p.owned("t0", 0, (B, k.counts[0]), scale=F_T, bound=k.stat_bounds[0])
    t1 = p.owned("t1", 1, (B, k.counts[1]), scale=F_T, bound=k.stat_bounds[1])
    wu0, wu1, wn0, wn1, wt0, wt1 = p.open([u0, u1, n0, n1, t0, t1])  # round 1
    q = p.product([wu0, wu1], bound=1.0)
    total = q.sum(1).with_scale(q.scale, 1.0 + 1e-9)
    v = (q[:, : K - 1].lift(PI_BITS) - total.reshape(B, 1).mul_const("pi", (K - 1,), 1.0, PI_BITS)).with_scale(
        q.scale + PI_BITS, 1.0 + 1e-9)
    wq, ws, wv = p.open([q, total, v], shifts=[q.scale - F_Q, total.scale - F_Q, v.scale - F_Q])  # round 2
    # sigma = 2^(36 - 2j) for S in [2^(2j - 37), 2^(2j - 35)), j = 0..18; 0 below 2^-37
    points = [1 << (_S_COMPARE + _S_LOW + 2 * j) for j in range(19)]
    cmp_s = p.compare(ws, points, depth=_S_COMPARE + 2, shift=F_Q - _S_COMPARE)
    sig = [0] + [1 << (36 - 2 * j) for j in range(19)]
    sigma = p.select(cmp_s, [sig[j + 1] - sig[j] for j in range(19)], scale=0, bound=2.0**36)
    (wsig,) = p.open([sigma])  # round 3
    col = wsig.reshape(B, 1)
    # sigma q has the value 2 q~ at scale F_Q: read at F_Q + 1
    qt = p.product([col, wq]).with_scale(F_Q + 1, 1.0 + 1e-9)
    st = p.product([wsig, ws]).with_scale(F_Q + 1, 1.0 + 1e-9)
    vt = p.product([col, wv]).with_scale(F_Q + 1, 1.0 + 1e-9)
    shift = F_Q + 1 - F_TILDE
    wqt, wst, wvt = p.open([qt, st, vt], shifts=[shift, shift, shift])  # round 4
    top = 2.0**k.high_exp
    norms = p.product([wqt, wqt, wn0 + wn1], reduce=(1,), bound=top)  # scale 2 F_TILDE + F_N
    squares = p.product([wvt, wvt], reduce=(1,), bound=float(K)).mul_const("inv_c2", (), top, _INV_C2_BITS)
    scale5 = 2 * F_TILDE + F_N
    n_tilde = (norms + squares.with_scale(scale5, top)).with_scale(scale5, top)
    s2 = p.product([wst, wst], bound=1.0 + 1e-6).lift(scale5 - 2 * F_TILDE)
    # opened exactly (one mask atom each: the keys' payloads below carry one atom per wire)
    wn, ws2 = p.open([n_tilde, s2])  # round 5
    depth = k.high_exp + _N_COMPARE + 2
    guard = scale5 - _N_COMPARE
    cmp_n = p.compare(wn, [1 << (4 * j + _N_COMPARE) for j in range(J + 1)], depth=depth, shift=guard,
                      payload=[wn])
    d = wn - ws2
    half = 1 << depth
    cmp_d = p.compare(d, [half], depth=depth + 1, shift=guard, offset=-(half << guard), payload=[d])
    y = p.unmask(ws2) + p.select(cmp_d, [1], times=d, scale=scale5, bound=top)  # max(S~^2, n~)
    lift = 4 * (J + 1)
    steps = [16 ** (J + 1 - j - 1) - 16 ** (J + 1 - j) for j in range(J + 1)]  # C_(j+1) - C_j, C_k = 16^(J+1-k)
    z = (y.lift(lift) + p.select(cmp_n, steps, times=wn, scale=scale5 + lift, bound=top)).with_scale(
        scale5 + lift, 1.0)
    sc = [4 ** (J + 1 - j) for j in range(J + 2)]  # 4^-k at scale 2 (J + 1)
    sigma_c = p.select(cmp_n, [sc[j + 1] - sc[j] for j in range(J + 1)], const=sc[0], scale=0, bound=float(sc[0]))
    if z.scale < F_Z:
        z = z.lift(F_Z - z.scale)
    wz, wsc = p.open([z, sigma_c], shifts=[z.scale - F_Z, 0])  # round 6
    table = rsqrt_table(k.degree)
    c_pre = p.table(wz, table, times=wsc, bound=4.2 * sc[0])  # sigma_c / sqrt(z) = c' 4^(J+1)
    (wc,) = p.open([c_pre.with_scale(c_pre.scale + 2 * (J + 1), 4.2)],
                   shifts=[c_pre.scale + 2 * (J + 1) - k.c_frac])  # round 7
    w = p.product([wqt, wc.reshape(B, 1)], bound=1.0 + 1e-6)
    (ww,) = p.open([w])  # round 8: exact (its mask one atom: the products below sum over the records)
    c_total = p.product([wst, wc], reduce=(0,), bound=float(B))
    s_sum = p.unmask(ww).sum(0)
    weights = s_sum[: K - 1].lift(PI_BITS) - c_total.reshape(1).mul_const("pi", (K - 1,), 1.0, PI_BITS)
    grads = [weights]
    for j, (wt, (stat, comp)) in enumerate(zip((wt0, wt1), k.stats, strict=True)):
        m = p.product([wt.reshape(B, k.counts[j], 1), ww.reshape(B, 1, K)], reduce=(0,))
        idx = (np.array(stat, dtype=np.int64), np.array(comp, dtype=np.int64))
        size = len(stat)
        g = m[idx].mul_const(f"cs{j}", (size,), k.coef_top, k.extra) + \
            s_sum[np.array(comp, dtype=np.int64)].lift(F_T).mul_const(f"cm{j}", (size,), k.coef_top, k.extra)
        grads.append(g)
    opened = p.open(grads, shifts=[g.scale - k.release_bits for g in grads],
                    out_bits=[k.release_ring] * len(grads))  # round 9
    p.output("g", p.concat([p.unmask(g) for g in opened]))
    return p.compile()


def masked_gradient_sum(session: MPCSession, public: StepPublic, mine: PartyInput,
                        precision: GradientPrecision) -> SharedFixedPoint:
    """This party's shares of the clipped gradient sum on the release grid, as
    :func:`~mpdp.protocols.mixture_gradient.step.clipped_gradient_sum` returns it (same order, ring and scale), on
    masked wires (module docstring). Every computing party calls it with the same ``public``."""
    key, why = _key(public, precision)
    if key is None or not session.provider.deals_masked_plans or session.n != 2:
        raise ParameterError(explain("masked step", "this step", why or "a dealer with two computing parties",
                                     "run the circuit step (clipped_gradient_sum)"))
    me = session.index
    mine = check_input(mine, public, me)
    prog = _program(key)
    pi = public.weights
    owned = {"u0": mine.factors * pi if me == 0 else None, "u1": mine.factors if me == 1 else None,
             "n0": mine.sq_norms if me == 0 else None, "n1": mine.sq_norms if me == 1 else None,
             "t0": mine.stats if me == 0 else None, "t1": mine.stats if me == 1 else None}
    scale = 2.0**key.extra
    consts = {"pi": np.rint(pi[: key.K - 1] * 2.0**PI_BITS).astype(np.int64),
              "inv_c2": np.array(round(2.0**_INV_C2_BITS / public.clip**2), dtype=np.int64)}
    for j, m in enumerate(public.maps):
        consts[f"cs{j}"] = _ints(m.coef_stat * scale)
        consts[f"cm{j}"] = _ints(m.coef_sum * scale)
    out = execute(session, prog, {}, owned, fmt=public.release_fmt, consts=consts)
    return out["g"]


def _ints(values: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """Integer-valued floats as int64, or as exact Python ints (object array) beyond 2^62."""
    rounded = np.rint(values)
    if float(np.max(np.abs(rounded), initial=0.0)) < 2.0**62:
        small: npt.NDArray[Any] = rounded.astype(np.int64)
        return small
    out = np.empty(rounded.shape, dtype=object)
    out.reshape(-1)[:] = [int(v) for v in rounded.reshape(-1)]
    return out


def gradient_sum(session: MPCSession, public: StepPublic, mine: PartyInput,
                 precision: GradientPrecision) -> SharedFixedPoint:
    """The step's clipped gradient sum: on masked wires when the session computes its functions so
    (``MPCSession(functions="masked")``) and :func:`masked_applies`, else by the circuit step
    (:func:`~mpdp.protocols.mixture_gradient.step.clipped_gradient_sum`, the dealer-free paths' and the slower
    one). The two agree within :func:`~mpdp.protocols.mixture_gradient.gradient_error_bound` of float64."""
    if session.functions == "masked" and masked_applies(session, public, precision):
        return masked_gradient_sum(session, public, mine, precision)
    return clipped_gradient_sum(session, public, mine, precision)
