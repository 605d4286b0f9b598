"""Interactive arithmetic on shared fixed-point values: products, truncation, ring conversion.

Security
--------
Semi-honest, any coalition of up to n - 1 computing parties (and, separately, the dealer) learns nothing:
every opened value is masked by a uniform ring element from the provider (Beaver's ``x - a``, the wrap
mask ``x + 2^(l-2) + r``). Not secure against malicious parties (no MACs).

Accuracy
--------
* ``x * y``, ``x @ y`` and products with non-integer public constants: the exact ring product at scale
  ``2f``, then the wrap-corrected truncation of :mod:`mpdp.crypto.beaver`, whose result is the exact value
  rounded down or up to the grid ``2^-f`` (stochastic rounding, unbiased): ``|error| < 2^-f`` relative to
  the product of the encoded operands, with no failure probability as long as the public bounds hold.
  The bounds are checked before computing (:class:`~mpdp.errors.PrecisionError` otherwise).
* :func:`mul_split` (paper 002, Algorithm 2): the same error bound, for products up to the value capacity
  ``2^(l-2-f)`` instead of the product capacity ``2^(l-2-2f)``.
* :func:`convert` between rings: exact when lifting, one stochastic rounding when dropping bits. A product's
  own truncation may also drop into a narrower ring and fewer fractional bits at once
  (:func:`~mpdp.protocols.mpc.functions.mul_known` with ``fmt``): the same two rounds, error below the
  target format's ``2^-f``.

Rounds: a product costs 2 (open the Beaver masks, open the truncation mask); ``mul_split`` 3.

References
----------
Beaver, CRYPTO 1991 (triples); Escudero, Ghosh, Keller, Rachuri, Scholl, "Improved primitives for MPC over
mixed arithmetic-binary circuits", CRYPTO 2020 (truncation from a mask with a known top bit); paper 002
(Tajeddine et al., arXiv 2020; :data:`mpdp.learning.papers.PAPERS`), section 4.5, Algorithm 2 (split multiplication).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.beaver import beaver_combine, square_combine, wrap_shift_output
from mpdp.crypto.correlations import CorrelationSpec, matmul_shape
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import DomainError, ParameterError, PrecisionError, ShapeMismatchError, explain
from mpdp.protocols.mpc.channel import Channel, check_bound
from mpdp.protocols.mpc.tensor import SharedFixedPoint, broadcast_shape

__all__ = ["convert", "matmul", "matmul_owned", "matmul_public", "mul", "mul_owned", "mul_public", "mul_split",
           "square", "truncate", "truncated_masked_product", "wrap_shift_many"]


def _need(fmt: FixedPointFormat, bound: float, scale: int, what: str) -> None:
    if not fmt.raw_bound_ok(bound, scale):
        raise PrecisionError(
            explain(what, f"a result bounded by {bound:.6g} at scale 2^{scale}",
                    f"|raw| < 2^{fmt.raw_capacity_bits} in {fmt} (|x y| < {fmt.product_capacity:.6g} for products)",
                    "declare tighter bounds, use x.mul_split(y) (paper 002), or a wider format "
                    "(FixedPointFormat(128, ...))")
        )


# -- truncation and conversion ----------------------------------------------------------------------------
def wrap_shift_many(session: Channel, ring_in: Ring, ring_out: Ring, shares: Sequence[RingArray],
                    shifts: Sequence[int], *, sharing_id: bytes) -> list[RingArray]:
    """Wrap-corrected shifts of several share arrays in one round (see :mod:`mpdp.crypto.beaver`).

    Each input must hold a value with ``|x| < 2^(l-2)``; the output (in ``ring_out``) is ``x / 2^shift``
    rounded down or up.
    """
    provider = session.provider
    specs = [CorrelationSpec("wrap", ring_in.bits, ring_in.shape(s), out_ring_bits=ring_out.bits, shift=k)
             for s, k in zip(shares, shifts, strict=True)]
    for k in shifts:
        if not 0 <= k <= ring_in.bits - 2:
            raise ParameterError(explain("shift", k, f"0 <= shift <= {ring_in.bits - 2}", "shift fewer bits"))
    provider.prefetch(specs)
    masks = [provider.wrap_mask(ring_in, ring_out, ring_in.shape(s), k) for s, k in zip(shares, shifts, strict=True)]
    offset = 1 << (ring_in.bits - 2)
    masked = []
    for s, m in zip(shares, masks, strict=True):
        y = ring_in.add(s, m.r)
        masked.append(ring_in.add_int(y, offset) if session.leader else y)
    opened = session.open(ring_in, masked, sharing_id=sharing_id, label="mpc.trunc")
    return [wrap_shift_output(ring_in, ring_out, c, m.msb, m.low, k, leader=session.leader)
            for c, m, k in zip(opened, masks, shifts, strict=True)]


def truncate(x: SharedFixedPoint, bits: int) -> SharedFixedPoint:
    """``x`` with its raw integers divided by ``2^bits`` (scale drops by ``bits``), stochastic rounding."""
    if not isinstance(bits, int) or not 0 <= bits <= x.scale:
        raise ParameterError(explain("bits", bits, f"0 <= bits <= scale ({x.scale})", "truncate fewer bits"))
    if bits == 0:
        return x
    sid = x.session.new_id()
    (share,) = wrap_shift_many(x.session, x.ring, x.ring, [x.share], [bits], sharing_id=sid)
    new_scale = x.scale - bits
    return SharedFixedPoint(x.session, share, fmt=x.fmt, scale=new_scale, bound=x.bound + 2.0**-new_scale,
                            sharing_id=sid)


def convert(x: SharedFixedPoint, fmt: FixedPointFormat) -> SharedFixedPoint:
    """The value of ``x`` in format ``fmt`` (another ring and/or number of fractional bits).

    Going to a wider ring is exact (the wrap of the shares is corrected, not ignored); dropping fractional
    bits rounds stochastically; the value must fit the target format (checked on the public bound).
    """
    src = x.fmt
    # Work at the source scale: first bring the scale to the target's f if that loses bits.
    drop = max(0, x.scale - fmt.frac_bits)
    _need(fmt, x.bound, fmt.frac_bits, "conversion")
    if src.ring == fmt.ring:
        y = truncate(x, drop) if drop else x
        out = SharedFixedPoint(x.session, y.share, fmt=fmt, scale=y.scale, bound=y.bound, sharing_id=y.sharing_id)
        return out._lift(fmt.frac_bits)
    sid = x.session.new_id()
    (share,) = wrap_shift_many(x.session, src.ring, fmt.ring, [x.share], [drop], sharing_id=sid)
    scale = x.scale - drop
    out = SharedFixedPoint(x.session, share, fmt=fmt, scale=scale, bound=x.bound + 2.0**-scale, sharing_id=sid)
    return out._lift(fmt.frac_bits)


def finish_product(x: SharedFixedPoint, share: RingArray, scale: int, bound: float, sid: bytes) -> SharedFixedPoint:
    """Wrap a product's share and truncate it back to ``f`` fractional bits if needed."""
    fmt = x.fmt
    if scale <= fmt.frac_bits:
        return SharedFixedPoint(x.session, share, fmt=fmt, scale=scale, bound=bound, sharing_id=sid)._lift(
            fmt.frac_bits)
    drop = scale - fmt.frac_bits
    sid2 = x.session.new_id()
    (out,) = wrap_shift_many(x.session, fmt.ring, fmt.ring, [share], [drop], sharing_id=sid2)
    return SharedFixedPoint(x.session, out, fmt=fmt, scale=fmt.frac_bits, bound=bound + fmt.resolution,
                            sharing_id=sid2)


def _prefetch_product(x: SharedFixedPoint, kind: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                      scale: int) -> None:
    specs = [CorrelationSpec(kind, x.ring.bits, a_shape, b_shape)]
    if scale > x.fmt.frac_bits:
        out_shape = matmul_shape(a_shape, b_shape) if kind == "matmul" else \
            a_shape if kind == "square" else broadcast_shape(a_shape, b_shape)
        specs.append(CorrelationSpec("wrap", x.ring.bits, out_shape, out_ring_bits=x.ring.bits,
                                     shift=scale - x.fmt.frac_bits))
    x.session.provider.prefetch(specs)


def truncated_masked_product(x: SharedFixedPoint, y: SharedFixedPoint | None, kind: str, scale: int,
                    bound: float, out_fmt: FixedPointFormat | None = None,
                    addend: RingArray | None = None) -> SharedFixedPoint:
    """``x * y``, ``x @ y`` or ``x * x`` (``y`` None) truncated to ``f`` bits from a masked product
    correlation (:class:`~mpdp.protocols.mpc.provider.MaskedProduct`): the Beaver step yields shares of
    ``z + r``, opened at once for the wrap-corrected shift. Same two rounds, messages and result as a
    triple followed by :func:`wrap_shift_many`, with one correlated element per value fewer.

    With ``out_fmt`` (a ring at most as wide as ``x``'s) the truncation delivers the result in ``out_fmt`` at
    its ``f`` instead: a change of format at no extra round (the caller checks both capacities). ``addend``:
    raw shares at the product's scale added under the same mask (``x y + a``, one truncation)."""
    ring, session = x.ring, x.session
    fmt = out_fmt or x.fmt
    out_ring = fmt.ring
    drop = scale - fmt.frac_bits
    if not 0 < drop <= ring.bits - 2 or out_ring.bits > ring.bits:
        raise ParameterError(explain("product format", f"{x.fmt} at scale 2^{scale} into {fmt}",
                                     f"a truncation of 1 to {ring.bits - 2} bits into a ring at most as wide",
                                     "pick an output format with fewer fractional bits and no wider ring"))
    b_shape = () if y is None else y.shape
    session.provider.prefetch([CorrelationSpec(kind + "_wrap", ring.bits, x.shape, b_shape,
                                               out_ring_bits=out_ring.bits, shift=drop)])
    t = session.provider.masked_product(kind, ring, x.shape, b_shape, drop,
                                        out_ring=None if out_ring == ring else out_ring)
    sid = session.new_id()
    if y is None:
        (d,) = session.open(ring, [ring.sub(x.share, t.a)], sharing_id=sid, label="mpc.square")
        masked = square_combine(ring, d, t.a, t.c, leader=session.leader)
    else:
        d, e = session.open(ring, [ring.sub(x.share, t.a), ring.sub(y.share, t.b)], sharing_id=sid,
                            label=f"mpc.{kind}")
        masked = beaver_combine(ring, d, e, t.a, t.b, t.c, leader=session.leader, matmul=kind == "matmul")
    if addend is not None:
        masked = ring.add(masked, addend)
    if session.leader:
        masked = ring.add_int(masked, 1 << (ring.bits - 2))
    sid2 = session.new_id()
    (opened,) = session.open(ring, [masked], sharing_id=sid2, label="mpc.trunc")
    out = wrap_shift_output(ring, out_ring, opened, t.msb, t.low, drop, leader=session.leader)
    return SharedFixedPoint(session, out, fmt=fmt, scale=fmt.frac_bits, bound=bound + fmt.resolution,
                            sharing_id=sid2)


# -- products of shared values ----------------------------------------------------------------------------
def mul(x: SharedFixedPoint, y: SharedFixedPoint) -> SharedFixedPoint:
    """Elementwise ``x * y`` by a Beaver triple, truncated to ``f`` bits."""
    if y is x:
        return square(x)
    x._check_peer(y)
    broadcast_shape(x.shape, y.shape)
    scale, bound = x.scale + y.scale, x.bound * y.bound
    _need(x.fmt, bound, scale, "product")
    if scale > x.fmt.frac_bits:
        return truncated_masked_product(x, y, "mul", scale, bound)
    ring, session = x.ring, x.session
    _prefetch_product(x, "mul", x.shape, y.shape, scale)
    t = session.provider.mul_triple(ring, x.shape, y.shape)
    sid = session.new_id()
    d, e = session.open(ring, [ring.sub(x.share, t.a), ring.sub(y.share, t.b)], sharing_id=sid, label="mpc.mul")
    z = beaver_combine(ring, d, e, t.a, t.b, t.c, leader=session.leader)
    return finish_product(x, z, scale, bound, sid)


def square(x: SharedFixedPoint) -> SharedFixedPoint:
    """``x * x`` with a square pair: one opened array instead of two."""
    scale, bound = 2 * x.scale, x.bound * x.bound
    _need(x.fmt, bound, scale, "square")
    if scale > x.fmt.frac_bits:
        return truncated_masked_product(x, None, "square", scale, bound)
    ring, session = x.ring, x.session
    _prefetch_product(x, "square", x.shape, (), scale)
    pair = session.provider.square_pair(ring, x.shape)
    sid = session.new_id()
    (d,) = session.open(ring, [ring.sub(x.share, pair.a)], sharing_id=sid, label="mpc.square")
    z = square_combine(ring, d, pair.a, pair.c, leader=session.leader)
    return finish_product(x, z, scale, bound, sid)


def matmul(x: SharedFixedPoint, y: SharedFixedPoint) -> SharedFixedPoint:
    """``x @ y`` (numpy matmul rules) by a matrix triple, truncated once to ``f`` bits."""
    x._check_peer(y)
    shape = matmul_shape(x.shape, y.shape)
    inner = x.shape[-1]
    scale, bound = x.scale + y.scale, x.bound * y.bound * inner
    _need(x.fmt, bound, scale, "matrix product")
    if scale > x.fmt.frac_bits:
        return truncated_masked_product(x, y, "matmul", scale, bound)
    ring, session = x.ring, x.session
    _prefetch_product(x, "matmul", x.shape, y.shape, scale)
    t = session.provider.matmul_triple(ring, x.shape, y.shape)
    sid = session.new_id()
    d, e = session.open(ring, [ring.sub(x.share, t.a), ring.sub(y.share, t.b)], sharing_id=sid, label="mpc.matmul")
    z = beaver_combine(ring, d, e, t.a, t.b, t.c, leader=session.leader, matmul=True)
    if ring.shape(z) != shape:  # pragma: no cover - guarded by matmul_shape
        raise ShapeMismatchError(explain("matmul result", ring.shape(z), f"{shape}", "report this bug"))
    return finish_product(x, z, scale, bound, sid)


def matmul_owned(y: SharedFixedPoint, mine: npt.ArrayLike, shapes: Sequence[tuple[int, int]],
                 bounds: Sequence[float]) -> list[SharedFixedPoint]:
    """``X_j @ y`` for every computing party ``j``'s own matrix ``X_j``, which ``j`` holds in the clear and never
    shares (``mine``: this party's; ``shapes`` and the bounds ``|X_j| <= bounds[j]`` are public, one per party in
    the session's order). Two rounds for all the parties' products together, as one :func:`matmul`.

    With a provider that deals owned products (:attr:`~mpdp.protocols.mpc.provider.CorrelationProvider.
    deals_owned_products`: a dealer), each block ``j`` takes a ``matmul_owned_wrap`` correlation: ``A`` (the mask
    of ``X_j``) known to ``j`` alone, ``B`` (the mask of ``y``) shared by the others (``j``'s share is zero),
    ``C = A @ B + r``. In one exchange ``j`` sends ``d = X_j - A`` to the others and each other party ``k``
    sends ``j`` its ``y_k - B_k``, so that ``j`` knows ``e = y - B``; then

        X_j @ y = X_j @ e + d @ B + C - r

    ``j`` computes ``X_j @ e`` (it knows ``X_j`` and ``e``), each other party ``k`` its ``d @ B_k``, everyone
    adds its share of ``C``, and the sum masked by ``r`` is opened for the wrap-corrected truncation, as in
    :func:`matmul`. Against a product of shared operands (``X_j`` input as shares, then a matrix triple) this
    draws and sends no shares of ``X_j``, half the opened words (``d`` from its owner only, ``e`` to it only)
    and half the local products (one per party and block instead of two). Security: ``d`` is uniform to the
    others (``A`` is known to ``j`` and the dealer only), ``y_k - B_k`` uniform to ``j`` (``B_k`` is ``k``'s),
    the opened sum uniform to all (``r`` is the dealer's); semi-honest, the dealer colluding with nobody, as
    every dealt correlation. Accuracy: that of :func:`matmul` (one stochastic rounding below ``2^-f``).

    Other providers (triples from homomorphic encryption): the blocks stacked, each party's rows its own and
    zero elsewhere (a sharing no one draws), times ``y`` by :func:`matmul`: the same rounds and result.
    """
    session, fmt, ring = y.session, y.fmt, y.ring
    parties = session.parties
    me = parties.index(session.comm.name)
    if len(shapes) != len(parties) or len(bounds) != len(parties):
        raise ShapeMismatchError(explain("shapes and bounds", (len(shapes), len(bounds)),
                                         f"one per computing party ({len(parties)})", "list every party's block"))
    if len(y.shape) != 2:
        raise ShapeMismatchError(explain("y", y.shape, "a matrix (2-D)", "reshape the right operand"))
    blocks: list[tuple[int, ...]] = [tuple(int(d) for d in shape) for shape in shapes]
    for shape in blocks:
        matmul_shape(shape, y.shape)  # ShapeMismatchError unless (m, inner) with inner = y's rows
        if len(shape) != 2:
            raise ShapeMismatchError(explain("block shape", shape, f"(rows, {y.shape[0]})", "pass matrices"))
    for b in bounds:  # public bounds on |X_j| the format holds, as every shared value's
        check_bound(b, fmt)
    encoded = _own_operand(fmt, mine, blocks[me], bounds[me], f"{session.comm.name}'s matrix")
    inner = y.shape[0]
    scale = fmt.frac_bits + y.scale
    out_bounds = [float(b) * y.bound * inner for b in bounds]
    for b in out_bounds:
        _need(fmt, b, scale, "matrix product")
    if scale <= fmt.frac_bits or not session.provider.deals_owned_products:
        rows = [encoded if j == me else ring.zeros(shape) for j, shape in enumerate(blocks)]
        stacked = ring.combine(rows, lambda arrays: np.concatenate(arrays, axis=-2))
        product = matmul(SharedFixedPoint(session, stacked, fmt=fmt, scale=fmt.frac_bits,
                                          bound=float(max(bounds, default=0.0)), sharing_id=session.new_id()), y)
        starts = np.cumsum([0] + [shape[0] for shape in blocks])
        return [product[int(lo):int(hi)].assume_bound(b + fmt.resolution)
                for lo, hi, b in zip(starts[:-1], starts[1:], out_bounds, strict=True)]
    return _owned_products("matmul", y, encoded, list(enumerate(blocks)), out_bounds)


def mul_owned(y: SharedFixedPoint, mine: npt.ArrayLike | None, owner: str, bound: float) -> SharedFixedPoint:
    """``x * y`` (elementwise, ``x`` of ``y``'s shape) for an ``x`` that ``owner`` holds in the clear and never
    shares (``mine``: its values at the owner, None elsewhere; ``|x| <= bound``, public): the two rounds of
    :func:`mul`, one array sent by each party instead of two, one local product instead of a Beaver
    combination, no share of ``x`` drawn. The protocol, its security and accuracy are :func:`matmul_owned`'s
    (a ``mul_owned_wrap`` correlation). A ``y`` that another party holds in the clear may be passed shared
    trivially (its share the values, the others' zero): the owners' products, as the DPVI step's factors.
    Providers that deal no owned products: ``x`` shared trivially, times ``y`` by :func:`mul`."""
    session, fmt, ring = y.session, y.fmt, y.ring
    if owner not in session.parties:
        raise ParameterError(explain("owner", owner, f"one of {session.parties}", "name a computing party"))
    o = session.parties.index(owner)
    check_bound(bound, fmt)
    mine_here = session.comm.name == owner
    if (mine is None) == mine_here:
        raise ParameterError(explain("mine", "values" if mine is not None else None,
                                     f"{owner}'s values at {owner}, None elsewhere",
                                     "pass the owner's data there only"))
    encoded = ring.zeros(y.shape) if mine is None else _own_operand(fmt, mine, y.shape, bound, f"{owner}'s values")
    scale, out_bound = fmt.frac_bits + y.scale, float(bound) * y.bound
    _need(fmt, out_bound, scale, "product")
    if scale <= fmt.frac_bits or not session.provider.deals_owned_products:
        return SharedFixedPoint(session, encoded, fmt=fmt, scale=fmt.frac_bits, bound=float(bound),
                                sharing_id=session.new_id()) * y
    (out,) = _owned_products("mul", y, encoded if mine_here else None, [(o, y.shape)], [out_bound])
    return out


def _own_operand(fmt: FixedPointFormat, values: npt.ArrayLike, shape: tuple[int, ...], bound: float,
                 what: str) -> RingArray:
    """This party's clear operand of an owned product, encoded in ``fmt``; refused unless it has the public
    ``shape`` and stays within the public ``bound``."""
    x = np.asarray(values, dtype=np.float64)
    if x.shape != shape:
        raise ShapeMismatchError(explain(what, x.shape, f"the public shape {shape}", "pass this party's operand"))
    worst = float(np.maximum.reduce(np.abs(x), axis=None)) if x.size else 0.0
    if not worst <= bound:
        raise DomainError(explain(what, f"max |x| = {worst:.6g}", f"|x| <= bound = {bound:g}",
                                  "clip the values or declare a larger bound"))
    return fmt.encode(x, name=what)


def _owned_products(kind: str, y: SharedFixedPoint, mine: RingArray | None,
                    owners: Sequence[tuple[int, tuple[int, ...]]], bounds: Sequence[float]) -> list[SharedFixedPoint]:
    """``X_j @ y`` (``kind`` "matmul") or ``X_j * y`` ("mul") for each ``(j, shape of X_j)`` in ``owners`` (party
    positions, each at most once), ``mine`` this party's encoded ``X`` if it is among them: one exchange and one
    opening for the truncation, with owned-product correlations (see :func:`matmul_owned`)."""
    session, fmt, ring = y.session, y.fmt, y.ring
    parties, provider = session.parties, session.provider
    me = parties.index(session.comm.name)
    if mine is None and any(j == me for j, _ in owners):  # pragma: no cover - the public functions pass it
        raise ParameterError(explain("mine", None, "this party's encoded operand", "report this bug"))
    x = y.share if mine is None else mine  # (x is used only where this party owns a block)
    drop = y.scale  # the product's scale f + y.scale, truncated to f
    provider.prefetch([CorrelationSpec(kind + "_owned_wrap", ring.bits, shape, y.shape, out_ring_bits=ring.bits,
                                       shift=drop, owner=j) for j, shape in owners])
    masks = [provider.owned_product(kind, j, ring, shape, y.shape, drop) for j, shape in owners]
    # between this party and peer k, per block in order: the owner's d = X - A one way and the other's y - B the other
    outgoing: dict[str, list[RingArray]] = {}
    expect: dict[str, list[tuple[int, ...]]] = {}
    for (j, shape), t in zip(owners, masks, strict=True):
        if j == me:
            d = ring.sub(x, t.mask)
            for p in parties:
                if p != session.comm.name:
                    outgoing.setdefault(p, []).append(d)
                    expect.setdefault(p, []).append(y.shape)
        else:
            outgoing.setdefault(parties[j], []).append(ring.sub(y.share, t.mask))
            expect.setdefault(parties[j], []).append(shape)
    got = session.exchange(ring, outgoing, expect, sharing_id=session.new_id(), label=f"mpc.{kind}_owned")
    taken = dict.fromkeys(got, 0)  # per peer: how many of its arrays are read
    product = ring.matmul if kind == "matmul" else ring.mul
    masked = []
    for (j, _), t in zip(owners, masks, strict=True):
        if j == me:  # y - B: this party's share of y (its share of B is zero) and the others' y_k - B_k
            e = y.share
            for p in got:
                e = ring.add(e, got[p][taken[p]])
                taken[p] += 1
            z = product(x, e)
        else:
            owner = parties[j]
            z = product(got[owner][taken[owner]], t.mask)
            taken[owner] += 1
        z = ring.add(z, t.c)
        masked.append(ring.add_int(z, 1 << (ring.bits - 2)) if session.leader else z)
    opened = session.open(ring, masked, sharing_id=session.new_id(), label="mpc.trunc")
    return [SharedFixedPoint(session, wrap_shift_output(ring, ring, c, t.msb, t.low, drop, leader=session.leader),
                             fmt=fmt, scale=fmt.frac_bits, bound=b + fmt.resolution, sharing_id=session.new_id())
            for c, t, b in zip(opened, masks, bounds, strict=True)]


def mul_split(x: SharedFixedPoint, y: SharedFixedPoint) -> SharedFixedPoint:
    """Paper 002's integer/fraction split multiplication (Algorithm 2), in 3 rounds.

    With ``X = x 2^f = A 2^f + B`` (``A`` the integer part from an exact-range truncation, ``B = X - A 2^f``
    in ``[-2^f, 2^f)``) and likewise ``Y = C 2^f + D``::

        X Y / 2^f = A Y + B C + (B D) / 2^f

    ``A Y`` and ``B C`` are already at scale ``2^f`` and need no truncation; only ``B D < 2^(2f)`` is
    truncated. So the raw integers never exceed ``~|x y| 2^f``: products up to the format's value capacity
    ``2^(l-2-f)`` work, where the ordinary product needs ``|x y| < 2^(l-2-2f)``. With f = 24 in Z_2^64 that
    is ``|x y| < 2^38`` instead of ``2^14``. The error is that of one truncation, below ``2^-f``.
    """
    x._check_peer(y)
    fmt, ring, session = x.fmt, x.ring, x.session
    f = fmt.frac_bits
    x, y = x.rescale(), y.rescale()
    out_shape = broadcast_shape(x.shape, y.shape)
    bound = (x.bound + 1.0) * y.bound + y.bound + 2.0
    _need(fmt, bound, f, "split product")
    sid = session.new_id()
    a_int, c_int = wrap_shift_many(session, ring, ring, [x.share, y.share], [f, f], sharing_id=sid)
    two_f = 1 << f
    b_frac = ring.sub(x.share, ring.mul_int(a_int, two_f))
    d_frac = ring.sub(y.share, ring.mul_int(c_int, two_f))
    pairs = [(a_int, y.share), (b_frac, c_int), (b_frac, d_frac)]
    provider = session.provider
    provider.prefetch([CorrelationSpec("mul", ring.bits, ring.shape(p), ring.shape(q)) for p, q in pairs]
                      + [CorrelationSpec("wrap", ring.bits, out_shape, out_ring_bits=ring.bits, shift=f)])
    triples = [provider.mul_triple(ring, ring.shape(p), ring.shape(q)) for p, q in pairs]
    masked = []
    for (p, q), t in zip(pairs, triples, strict=True):
        masked += [ring.sub(p, t.a), ring.sub(q, t.b)]
    sid2 = session.new_id()
    opened = session.open(ring, masked, sharing_id=sid2, label="mpc.mul_split")
    prods = [beaver_combine(ring, opened[2 * i], opened[2 * i + 1], t.a, t.b, t.c, leader=session.leader)
             for i, t in enumerate(triples)]
    sid3 = session.new_id()
    (bd,) = wrap_shift_many(session, ring, ring, [prods[2]], [f], sharing_id=sid3)
    total = ring.add(ring.add(prods[0], prods[1]), bd)
    return SharedFixedPoint(session, total, fmt=fmt, scale=f, bound=bound, sharing_id=sid3)


# -- products with public values --------------------------------------------------------------------------
def public_ints(c: npt.NDArray[np.float64], x: SharedFixedPoint, count: int = 1) -> tuple[npt.NDArray[Any], int]:
    """Public reals as integers at scale 2^bits, and bits (0 when they are small integers already).

    The constant gets as many fractional bits as the capacity leaves (at least f, at most what keeps the
    integers below 2^62), so its own rounding error stays far below the truncation's 2^-f.
    """
    if c.size == 0 or (c == np.rint(c)).all():
        return _as_ints(c), 0
    fmt = x.fmt
    top = float(np.abs(c).max())
    headroom = fmt.raw_capacity_bits - x.scale - math.log2(max(x.bound * top * count, 2.0**-30)) - 1
    bits = int(min(headroom, 61 - math.log2(top), fmt.raw_capacity_bits - x.scale))
    bits = max(bits, fmt.frac_bits)
    return _as_ints(np.rint(c * 2.0**bits)), bits


def mul_constants(ring: Ring, share: RingArray, values: tuple[int, ...], shape: tuple[int, ...]) -> RingArray:
    """``share * k`` for the public integers ``values`` as an array of ``shape`` (broadcasting): the product
    that :meth:`Ring.mul_int` computes, with the ring form of constants beyond 2^62 cached (a training asks
    for the same bucket constants at every step; converting Python ints to limbs costs more than the product)."""
    k = _constants(ring, values, shape)
    return ring.mul_int(share, k) if k.dtype == np.int64 else ring.mul(share, k)


@functools.lru_cache(maxsize=256)
def _constants(ring: Ring, values: tuple[int, ...], shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """int64 constants, or their ring elements when some are beyond 2^62 (read-only: shared by the cache)."""
    if all(abs(v) < 2**62 for v in values):
        out: npt.NDArray[Any] = np.array(values, dtype=np.int64).reshape(shape)
    else:
        big = np.empty(len(values), dtype=object)
        big[:] = values
        out = ring.from_int(big.reshape(shape))
    out.flags.writeable = False
    return out


def _as_ints(v: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """Integer-valued floats as int64, or as exact Python ints (object array) beyond 2^62."""
    if v.size == 0 or float(np.abs(v).max()) < 2.0**62:
        return v.astype(np.int64)
    out = np.empty(v.shape, dtype=object)
    out.reshape(-1)[:] = [int(e) for e in v.reshape(-1)]
    return out


def mul_public(x: SharedFixedPoint, c: npt.NDArray[np.float64]) -> SharedFixedPoint:
    """``x * c`` for public ``c``: exact for small integers, else one truncation.

    Error below ``2^-f + |x| 2^-(b+1)`` where ``b >= f`` is the number of bits given to the constant
    (see :func:`public_ints`; typically 40 or more, so the first term dominates).
    """
    broadcast_shape(x.shape, c.shape)
    k, extra = public_ints(c, x)
    bound = x.bound * (float(np.abs(c).max()) if c.size else 0.0)
    scale = x.scale + extra
    _need(x.fmt, bound, scale, "product with a public constant")
    share = x.ring.mul_int(x.share, k)
    if extra == 0:
        return x.derive(share, bound=bound)
    if scale > x.fmt.frac_bits:
        x.session.provider.prefetch([CorrelationSpec("wrap", x.ring.bits, x.ring.shape(share),
                                                     out_ring_bits=x.ring.bits, shift=scale - x.fmt.frac_bits)])
    return finish_product(x, share, scale, bound, x.session.new_id())


def matmul_public(x: SharedFixedPoint, c: npt.NDArray[np.float64], *, left: bool) -> SharedFixedPoint:
    """``c @ x`` (``left``) or ``x @ c`` for a public matrix ``c``."""
    shape = matmul_shape(c.shape, x.shape) if left else matmul_shape(x.shape, c.shape)
    inner = x.shape[0] if left and x.ndim >= 1 else x.shape[-1]
    k, extra = public_ints(c, x, inner)
    bound = x.bound * (float(np.abs(c).max()) if c.size else 0.0) * inner
    scale = x.scale + extra
    _need(x.fmt, bound, scale, "matrix product with a public matrix")
    kr = x.ring.from_int(k)
    share = x.ring.matmul(kr, x.share) if left else x.ring.matmul(x.share, kr)
    if x.ring.shape(share) != shape:  # pragma: no cover
        raise ShapeMismatchError(explain("matmul result", x.ring.shape(share), f"{shape}", "report this bug"))
    if scale > x.fmt.frac_bits:
        x.session.provider.prefetch([CorrelationSpec("wrap", x.ring.bits, shape, out_ring_bits=x.ring.bits,
                                                     shift=scale - x.fmt.frac_bits)])
    return finish_product(x, share, scale, bound, x.session.new_id())
