"""Bit decomposition and many-threshold comparison of shared values in Z_2^l (l <= 64).

``bit_decompose(x)`` returns XOR shares of the bits of ``x``'s residue, packed in one 64-bit word per
element: open ``c = x + r`` with a comparison mask (``r`` shared additively and bitwise), then
``x = c - r`` is computed by a binary subtractor whose borrows come from a Kogge-Stone parallel prefix:
per bit ``G = r AND NOT c`` (a borrow starts), ``P = NOT (r XOR c)`` (a borrow passes), and at distance
``s = 1, 2, ..., 32``: ``G <- G XOR (P AND G << s)``, ``P <- P AND P << s``. Bit ``i`` of ``x`` is
``c_i XOR r_i XOR G_(i-1)``. Six rounds, two word-ANDs per element per round.

``lanes_to_ring`` converts chosen lanes of such XOR-shared words into additive shares in any ring with
daBits (one round), ready for public linear combinations of the bits.

``at_least(x, thresholds)`` compares one shared word with many public thresholds at once, the cheaper
route to the same bucket bits (:func:`~mpdp.protocols.mpc.functions.normalise_by_buckets` uses it): one opened
``c = x + r`` serves every threshold, since ``x - t + r = c - t`` (the public part shifts, the mask
stays), and the carry circuits of :func:`~mpdp.protocols.mpc.comparison.less_than_public` for all
thresholds run side by side; one daBit round turns the bits additive. The carry circuits' first level needs
only products of adjacent mask bits, which every threshold shares: they are computed once per element, in the
round that opens ``c`` (:func:`~mpdp.protocols.mpc.comparison.open_with_pairs`), and five rounds of the tree
remain. Seven rounds for any number of thresholds, against 14 for a bit decomposition followed by a
prefix-OR leading-one word and daBits, at the price of one carry circuit per threshold instead of one
decomposition per element.

Security: semi-honest, up to n - 1 colluding parties; all opened values are uniformly masked.
References: Kogge and Stone, IEEE Trans. Computers 1973 (parallel prefix); Escudero et al., CRYPTO 2020
(arithmetic-to-binary with edaBit-style masks); Rotaru and Wood, INDOCRYPT 2019 (daBits).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpdp.crypto.beaver import b2a_combine
from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.ring import Ring, RingArray, Z2k
from mpdp.errors import ParameterError, explain
from mpdp.protocols.mpc import fss_compare
from mpdp.protocols.mpc.channel import Channel
from mpdp.protocols.mpc.comparison import and_many, less_than_public_pairs, open_with_pairs, pair_circuit_specs
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["at_least", "bit_decompose", "lanes_to_ring"]

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def bit_decompose(x: SharedFixedPoint) -> RingArray:
    """XOR shares of the bits of ``x``'s raw residue (one uint64 word per element), 7 rounds."""
    ring = x.ring
    if not isinstance(ring, Z2k):
        raise ParameterError(explain("ring", ring, "Z_2^l with l <= 64", "convert with x.to_format(...) first"))
    session, shape = x.session, x.shape
    provider = session.provider
    provider.prefetch([CorrelationSpec("compare", ring.bits, shape)]
                      + [CorrelationSpec("and", 64, (2, *shape)) for _ in range(5)]
                      + [CorrelationSpec("and", 64, shape)])
    mask = provider.compare_mask(ring, shape)
    (c,) = session.open(ring, [ring.add(x.share, mask.r)], sharing_id=session.new_id(), label="mpc.bits")
    r = mask.bits[0]
    if ring.bits < 64:
        r = r & np.uint64((1 << ring.bits) - 1)
    g = r & ~c
    p = r ^ ~c if session.leader else r.copy()
    shift = 1
    while shift < 64:
        s = np.uint64(shift)
        if shift < 32:
            both = and_many(session, np.stack([p, p]), np.stack([g << s, p << s]), session.new_id())
            g, p = g ^ both[0], both[1]
        else:
            g = g ^ and_many(session, p, g << s, session.new_id())
        shift *= 2
    out = r ^ (g << np.uint64(1))
    if session.leader:
        out = out ^ c
    if ring.bits < 64:
        out &= np.uint64((1 << ring.bits) - 1)
    words: RingArray = out
    return words


def lanes_to_ring(session: Channel, words: RingArray, lanes: npt.NDArray[np.int64], ring: Ring) -> RingArray:
    """Additive shares in ``ring`` of bit ``lanes[j]`` of each XOR-shared word: shape ``(len(lanes), *shape)``."""
    shifts = lanes.astype(np.uint64).reshape((-1,) + (1,) * words.ndim)
    selected = ((words[None] >> shifts) & np.uint64(1)).astype(np.uint8)
    dabit = session.provider.dabit(ring, tuple(selected.shape))
    v = session.open_bits(selected ^ dabit.bit, sharing_id=session.new_id(), label="mpc.b2a")
    return b2a_combine(ring, v, dabit.s, leader=session.leader)


_WORD = Z2k(64)
_LOW63 = np.uint64((1 << 63) - 1)


def at_least(session: Channel, x: RingArray, thresholds: npt.NDArray[np.int64], ring: Ring, *,
             rows: npt.NDArray[np.int64] | None = None) -> RingArray:
    """Additive shares in ``ring`` of ``[x >= t_j]`` for each public threshold: shape ``(len(t), *shape)``.

    ``x`` holds this party's Z_2^64 shares (uint64 words) of signed integers; every compared ``x - t_j`` must
    lie in ``[-2^63, 2^63)`` (the caller's bounds guarantee it). With ``rows``, ``x`` is ``(n, *shape)`` and
    threshold ``j`` is compared with ``x[rows[j]]`` only (shape ``(len(t), *shape)``). Exact. With
    ``c = x + r`` opened once (``r`` a comparison mask), ``x - t_j`` has the opening ``c - t_j`` under the
    same mask, and its sign is ``msb(c - t_j) XOR msb(r) XOR [(c - t_j)_low < r_low]`` (module
    :mod:`.comparison`, step 2); nothing is opened beyond ``c`` and the uniformly masked AND and daBit
    openings. 7 rounds (the first level of the carry circuits rides in ``c``'s opening); one round with the
    dealer's DCF keys when the session compares by FSS (:func:`~mpdp.protocols.mpc.fss_compare.at_least`).
    """
    if session.comparisons == "fss" and session.provider.deals_dcf_keys and ring.bits in (64, 128):
        return fss_compare.at_least(session, x, thresholds, ring, rows=rows)
    x = np.asarray(x, dtype=np.uint64)
    shape = x.shape
    t = np.asarray(thresholds, dtype=np.int64)
    if rows is None:
        pick: npt.NDArray[np.int64] | slice = slice(None)
        t = t.reshape((-1,) + (1,) * len(shape))
        wide = (len(t), *shape)
    else:
        pick = np.asarray(rows, dtype=np.int64)
        if pick.shape != t.shape or t.ndim != 1 or x.ndim < 1 or np.any((pick < 0) | (pick >= shape[0])):
            raise ParameterError(explain("rows", pick.shape, f"one row of x (0..{shape[0] - 1}) per threshold",
                                         "pass rows of the thresholds' length"))
        t = t.reshape((-1,) + (1,) * (len(shape) - 1))
        wide = (len(t), *shape[1:])
    provider = session.provider
    provider.prefetch([CorrelationSpec("compare", 64, shape), *pair_circuit_specs(1, shape, wide),
                       CorrelationSpec("dabit", ring.bits, wide)])
    mask = provider.compare_mask(_WORD, shape)
    r_all = mask.bits[0]
    r_low = r_all & _LOW63
    (c,), pairs = open_with_pairs(session, _WORD, [_WORD.add(x, mask.r)], r_low, label="mpc.thresholds")
    c_sel, r_sel, s_sel = (c[None], r_all[None], pairs[None]) if rows is None \
        else (c[pick], r_all[pick], pairs[pick])
    with np.errstate(over="ignore"):
        shifted = c_sel - t.astype(np.uint64)  # c - t_j mod 2^64, public
    # r and its pair products broadcast against the thresholds (one row per threshold with rows)
    lt = less_than_public_pairs(session, (shifted & _LOW63)[None], (r_sel & _LOW63)[None], s_sel[None])
    below = (r_sel >> np.uint64(63)) ^ lt  # XOR shares of [x < t_j]: msb(x - t_j)
    if session.leader:
        below = below ^ (shifted >> np.uint64(63)) ^ np.uint64(1)  # and the leader flips it: [x >= t_j]
    dabit = provider.dabit(ring, wide)
    v = session.open_bits(below.astype(np.uint8) ^ dabit.bit, sharing_id=session.new_id(), label="mpc.b2a")
    return b2a_combine(ring, v, dabit.s, leader=session.leader)
