"""One-round comparisons from dealer-made function secret sharing (two computing parties).

``ltz(x) = [x < 0]`` with a ``dcf`` correlation (:class:`~mpdp.protocols.mpc.provider.DcfKey`): additive shares
of a uniform ``r``, of ``b`` = bit ``d`` of ``r``, and DCF keys (:mod:`mpdp.crypto.fss`) of
``z -> (1 - 2 b) [z < r mod 2^d]``, where ``d + 1`` is the comparison's bit width ``w``:

1. Open ``c = x + r`` (one round, the only one).
2. In ``w`` bits, ``msb(x) = msb(c) XOR msb(r) XOR [c_low < r_low]`` (``low``: the ``d`` bits below the top one;
   :mod:`~mpdp.protocols.mpc.comparison`, step 2). Each party evaluates its key at the public ``c_low`` and adds
   its share of ``b``: the shares of ``b + (1 - 2 b) [c_low < r_low] = b XOR [c_low < r_low]``; the public
   ``a = msb(c)`` is folded in locally, ``a XOR g = a + (1 - 2 a) g``.

The result is an additive share of the bit in the value's own ring (scale 0), like the circuit comparison's, with
no conversion round. ``msb`` in ``w`` bits is the sign of ``x`` whenever ``|x| < 2^(w - 1)`` (raw units): ``w`` is
the *declared bit width*, derived from the value's public bound (or passed, and then checked against it: a value
whose bound does not fit is refused before anything is opened). In Z_2^64 the full width (``d = 63``) is exact
for every element; a tighter bound makes the keys shorter and their evaluation cheaper.

Security
--------
Semi-honest, two computing parties and a dealer that colludes with neither (the dealer knows ``r``: it could
unmask ``c``). ``c`` is uniformly masked; each party's key is pseudorandom on its own (the DCF's security,
fixed-key AES modelled as a random permutation), so the opened ``c`` and the party's key and shares reveal
nothing about ``x``. Each key is used for one opened value (several public points of it may be evaluated, as
:func:`at_least` does for thresholds: the evaluations are local).

Key size
--------
Per compared element and party, ``16 + 8 (2 + w_r) d + 8 w_r`` bytes of key (``w_r`` ring words: 1 in
Z_2^64, 2 in Z_2^128) plus the shares of ``r`` and ``b`` (``8 w_r`` bytes each): 1.55 KiB for ``d = 63`` in
Z_2^64, 0.67 KiB for a 28-bit comparison (a bound of 100 at 20 fractional bits). Party 0 gets its ``b``, party 1
nothing but the corrections; both draw ``r`` and their root seeds from their dealer streams.

References: Boyle, Chandran, Gilboa, Gupta, Ishai, Kumar, Rathee, Eurocrypt 2021 (DCF, signed comparison from
one DCF); Ryffel, Tholoniat, Pointcheval, Bach, "AriaNN", PETS 2022 (FSS comparisons with a dealer).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fss import dcf_eval
from mpdp.crypto.ring import Ring, RingArray, Z2k
from mpdp.errors import DomainError, KeyMismatchError, ParameterError, explain
from mpdp.protocols.mpc.channel import Channel
from mpdp.protocols.mpc.provider import DcfKey
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["applies", "at_least", "declared_depth", "key_bytes", "ltz"]

_MAX_DEPTH = 63


def declared_depth(x: SharedFixedPoint) -> int:
    """``d = w - 1`` for the smallest width ``w`` with ``|raw x| < 2^(w - 1)`` under ``x``'s public bound (one unit of
    slack for rounding), at most the ring's ``bits - 1``."""
    raw = math.floor(x.bound * 2.0**x.scale) + 1
    return min(max(1, raw.bit_length()), x.ring.bits - 1)


def applies(session: Channel, x: SharedFixedPoint) -> bool:
    """Whether :func:`ltz` can compare ``x``: a provider that deals DCF keys (two computing parties) and a
    declared width of at most 64 bits (always in Z_2^64)."""
    return session.provider.deals_dcf_keys and declared_depth(x) <= _MAX_DEPTH


def key_bytes(depth: int, ring: Ring) -> int:
    """Bytes of one party's correlation per compared element: key, and shares of ``r`` and ``b``."""
    return 8 * (2 + (2 + ring.words) * depth + ring.words) + 16 * ring.words


def _checked_key(session: Channel, key: DcfKey, shape: tuple[int, ...], depth: int, ring: Ring) -> None:
    issuer = session.provider.dcf_issuer
    if key.issuer != issuer:
        raise KeyMismatchError(explain("DCF key", key.issuer.hex(), f"a key dealt to this session ({issuer.hex()})",
                                       "use keys from this session's provider"))
    n = math.prod(shape)
    if key.depth != depth or key.cw.shape != (depth, 2 + ring.words, n) or key.seed.shape != (*shape, 2) \
            or ring.shape(key.r) != shape or key.party != session.index:
        raise KeyMismatchError(explain("DCF key", (key.party, key.depth, key.seed.shape[:-1]),
                                       f"party {session.index}'s key of depth {depth} for shape {shape}",
                                       "fetch keys for this value's shape and width"))


def _flat_key(key: DcfKey, ring: Ring) -> tuple[RingArray, RingArray, RingArray, RingArray]:
    """The key's seed ``(N, 2)``, corrections ``(d, 2 + w, N)``, leaf correction and ``b`` share, one per element."""
    n = key.cw.shape[2]
    layout = (ring.words, n) if ring.words == 2 else (n,)
    return key.seed.reshape(n, 2), key.cw, key.last.reshape(layout), key.b.reshape(layout)


def _signs(session: Channel, depth: int, party: int, key: tuple[RingArray, RingArray, RingArray, RingArray],
           points: RingArray, ring: Ring) -> RingArray:
    """Shares of ``msb_w(c - r)`` at the public low words ``points`` (``(N,)``, one per key element, or ``(T, N)``,
    ``T`` per element), ``w = depth + 1``: the key evaluated at ``c_low``, plus ``b``, folded with the public
    ``msb(c)`` (module docstring)."""
    seed, cw, last, b = key
    if points.ndim == 2 and ring.words == 2:
        b = b[:, None, :]
    a = (points >> np.uint64(depth)) & np.uint64(1)
    z = points & np.uint64((1 << depth) - 1)
    g = ring.add(dcf_eval(party, seed, cw, last, z, depth, ring), b)
    share = g ^ ((g ^ ring.neg(g)) & (np.uint64(0) - a))  # (1 - 2 a) g
    if session.leader:
        share = ring.add(share, a if ring.words == 1 else np.stack([a, np.zeros_like(a)]))
    out: RingArray = share
    return out


def _gather(key: DcfKey, ring: Ring, rows: npt.NDArray[np.int64], first: int
            ) -> tuple[RingArray, RingArray, RingArray, RingArray]:
    """The key elements of rows ``rows`` of a key for shape ``(first, *rest)``, flat in the order of ``rows``."""
    seed, cw, last, b = _flat_key(key, ring)
    n = seed.shape[0]
    rest = n // first if first else 0
    idx = (rows[:, None] * rest + np.arange(rest)[None, :]).reshape(-1)
    pick = (slice(None), idx) if ring.words == 2 else (idx,)
    return seed[idx], np.ascontiguousarray(cw[:, :, idx]), last[pick], b[pick]


def ltz(x: SharedFixedPoint, *, width: int | None = None, key: DcfKey | None = None) -> SharedFixedPoint:
    """``[x < 0]`` as a shared bit (scale 0), exactly, in one round (see the module docstring).

    ``width``: the comparison's bit width ``w`` (``|raw x| < 2^(w - 1)``); default the one ``x``'s bound declares.
    Refused (:class:`~mpdp.errors.DomainError`) when the bound does not fit in ``width``, before anything is
    opened. ``key``: this party's key, fetched beforehand (``session.provider.dcf_key``; default: fetched now);
    a key dealt to another session, or for another shape or width, is refused
    (:class:`~mpdp.errors.KeyMismatchError`) before anything is opened."""
    session, ring, shape = x.session, x.ring, x.shape
    needed = declared_depth(x)
    if width is None:
        depth = needed
    else:
        if type(width) is not int or not 2 <= width <= min(_MAX_DEPTH, ring.bits - 1) + 1:
            raise ParameterError(explain("width", width, f"an int in [2, {min(_MAX_DEPTH, ring.bits - 1) + 1}]",
                                         "compare at most 64 bits"))
        if needed > width - 1:
            raise DomainError(explain("comparison operand", f"bound {x.bound:g} (raw < 2^{needed})",
                                      f"|raw x| < 2^{width - 1} (declared width {width})",
                                      "declare a wider comparison or a tighter bound"))
        depth = width - 1
    if depth > _MAX_DEPTH:
        raise DomainError(explain("comparison width", depth + 1, f"at most {_MAX_DEPTH + 1} bits for a DCF key",
                                  "compare with the circuit (MPCSession(comparisons='circuit'))"))
    if key is None:
        key = session.provider.dcf_key(ring, shape, depth)
    _checked_key(session, key, shape, depth, ring)
    (c,) = session.open(ring, [ring.add(x.share, key.r)], sharing_id=session.new_id(), label="mpc.compare")
    points = (c[0] if ring.words == 2 else c).reshape(-1)
    share = _signs(session, depth, key.party, _flat_key(key, ring), points, ring)
    share = share.reshape((2, *shape) if ring.words == 2 else shape)
    return SharedFixedPoint(session, share, fmt=x.fmt, scale=0, bound=1.0, sharing_id=session.new_id())


_WORD = Z2k(64)
_CHUNK = 1 << 17  # points evaluated at once by at_least (a few tens of MB of working arrays)


def at_least(session: Channel, x: RingArray, thresholds: npt.NDArray[np.int64], ring: Ring, *,
             rows: npt.NDArray[np.int64] | None = None) -> RingArray:
    """:func:`~mpdp.protocols.mpc.bits.at_least` in one round: additive shares in ``ring`` (Z_2^64 or Z_2^128) of
    ``[x >= t_j]`` for Z_2^64 words ``x`` of signed integers with every ``x - t_j`` in ``[-2^63, 2^63)``.

    One DCF key of depth 63 per element of ``x`` and one opening of ``c = x + r mod 2^64`` (the low word of the
    key's ``r``, uniform); threshold ``j`` evaluates the same key at ``c - t_j`` (``x - t_j`` has the opening
    ``c - t_j`` under the same mask), locally: the round count does not grow with the thresholds, the work does
    (one key evaluation per threshold and element)."""
    x = np.asarray(x, dtype=np.uint64)
    shape = x.shape
    t = np.asarray(thresholds, dtype=np.int64).reshape(-1)
    key = session.provider.dcf_key(ring, shape, _MAX_DEPTH)
    _checked_key(session, key, shape, _MAX_DEPTH, ring)
    r_word = key.r[0] if ring.words == 2 else key.r
    (c,) = session.open(_WORD, [_WORD.add(x, r_word)], sharing_id=session.new_id(), label="mpc.thresholds")
    flat = c.reshape(-1)
    offsets = t.astype(np.uint64)
    rows_out = []
    with np.errstate(over="ignore"):
        if rows is None:
            full = _flat_key(key, ring)
            step = max(1, _CHUNK // max(flat.size, 1))  # thresholds per evaluation: bounded working memory
            for j in range(0, len(t), step):  # every key at several thresholds' points per evaluation
                points = flat[None, :] - offsets[j : j + step, None]
                rows_out.append(_signs(session, _MAX_DEPTH, key.party, full, points, ring))
            below = np.concatenate(rows_out, axis=1 if ring.words == 2 else 0)
            wide = (len(t), *shape)
        else:
            pick = np.asarray(rows, dtype=np.int64)
            if pick.shape != t.shape or x.ndim < 1 or np.any((pick < 0) | (pick >= shape[0])):
                raise ParameterError(explain("rows", pick.shape, f"one row of x (0..{shape[0] - 1}) per threshold",
                                             "pass rows of the thresholds' length"))
            rest = shape[1:]
            points = (c[pick] - offsets.reshape((-1,) + (1,) * len(rest))).reshape(-1)
            below = _signs(session, _MAX_DEPTH, key.party, _gather(key, ring, pick, shape[0]), points, ring)
            wide = (len(t), *rest)
    below = below.reshape((2, *wide) if ring.words == 2 else wide)
    above = ring.neg(below)  # [x >= t] = 1 - [x < t]
    return ring.add_int(above, 1) if session.leader else above
