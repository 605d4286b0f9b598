"""Distributed comparison functions with a vector payload: ``x -> beta [x < alpha]`` for ``beta`` in ``R^W``.

:mod:`mpdp.crypto.fss` shares ``beta [x < alpha]`` for one ring element ``beta``. Here ``beta`` is a vector of
``W`` ring elements (a *payload*), e.g. ``(1, lambda)`` for a value masked by ``lambda``: one key evaluated at a
public point gives additive shares of the indicator *and* of the indicator times the mask, so that an indicator
times a masked value, ``[x < alpha] (delta - lambda)``, is local (:mod:`mpdp.protocols.mpc.masked`). The
construction is the same (Boyle, Chandran, Gilboa, Gupta, Ishai, Kumar, Rathee, Eurocrypt 2021, Fig. 3, whose
output group may be any abelian group, here ``R^W``): the value a node expands into is ``W`` ring elements
instead of one, and every value correction word is a vector.

The PRG
-------
A node's 128-bit seed ``s`` expands on side ``d`` into the child's seed and control bit, ``H(s XOR T_(d,0))`` as in
:mod:`mpdp.crypto.fss`, and into its value, the first ``W w`` words (``w`` = ``ring.words``) of
``H(s XOR T_(d,1)) || ... || H(s XOR T_(d,J))``, ``J = ceil(W w / 2)``; the leaf value is read the same way from the
leaf tweaks. ``H`` is the fixed-key hash of :func:`mpdp.crypto.fss.fixed_key_hash`; the tweaks here are derived
under their own label, so the two modules' keys never share an expansion. An evaluation costs ``1 + J`` AES
blocks per point and level.

Key layout (``N`` keys of depth ``d``)
--------------------------------------
``seed``: ``(N, 2)`` words (the party's own). ``cw``: ``(d, 2 + W w, N)`` words, common to both parties: per level
the seed correction with its two control-bit corrections in the low bits of word 0 (as in :mod:`~mpdp.crypto.fss`)
and the value correction, an element of ``R^W`` in the ring's layout (value shape ``(W, N)``) flattened.
``last``: the leaf correction, a ring array of value shape ``(W, N)``. Per key and party
``16 + 8 (2 + W w) d + 8 W w`` bytes.

Security: as :mod:`mpdp.crypto.fss`; either key alone is pseudorandom and reveals neither ``alpha`` nor ``beta``
(fixed-key AES modelled as a random permutation).
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fss import MAX_DEPTH, fixed_key_hash
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import ParameterError, explain

__all__ = ["MAX_WIDTH", "dcf_eval_payload", "dcf_gen_payload", "payload_key_words"]

Words = npt.NDArray[np.uint64]

MAX_WIDTH = 64
"""The widest payload: at most 64 ring elements per key."""

_CLEAR = np.uint64(0xFFFFFFFFFFFFFFFC)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_BLOCK_POINTS = 1 << 14
_BLOCK_KEYS = 1 << 12


@functools.lru_cache(maxsize=64)
def _tweaks(blocks: int) -> tuple[Words, Words, Words]:
    """The public tweaks for values of ``blocks`` AES blocks: per side ``(1 + blocks, 2)`` words (seed block first),
    their XOR across the sides, and the leaf's ``(blocks, 2)`` (read-only: shared by the cache)."""

    def block(label: str) -> list[int]:
        digest = hashlib.sha256(b"mpdp.fss_payload tweak " + label.encode()).digest()
        return [int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]

    sides = np.array([[block(f"{d}/{j}") for j in range(1 + blocks)] for d in (0, 1)], dtype=np.uint64)
    leaf = np.array([block(f"leaf/{j}") for j in range(blocks)], dtype=np.uint64)
    delta = sides[0] ^ sides[1]
    for a in (sides, delta, leaf):
        a.flags.writeable = False
    return sides, delta, leaf


def _check(depth: int, width: int) -> None:
    if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise ParameterError(explain("DCF depth", depth, f"an int in [1, {MAX_DEPTH}]", "compare at most 64 bits"))
    if type(width) is not int or not 1 <= width <= MAX_WIDTH:
        raise ParameterError(explain("payload width", width, f"an int in [1, {MAX_WIDTH}]",
                                     "split the payload over several keys"))


def payload_key_words(depth: int, ring: Ring, width: int) -> int:
    """Words of one key of ``depth`` with a payload of ``width`` elements of ``ring`` (per key and party)."""
    return 2 + (2 + width * ring.words) * depth + width * ring.words


def _select(cond: Words, yes: RingArray, no: RingArray) -> RingArray:
    """``yes`` where the 0/1 words ``cond`` (broadcasting against the values' last axes) are 1, else ``no``."""
    out: RingArray = no ^ ((yes ^ no) & (_ZERO - cond))
    return out


def dcf_gen_payload(alpha: Words, beta: RingArray, seeds: tuple[Words, Words], depth: int,
                    ring: Ring) -> tuple[Words, RingArray]:
    """The common corrections of ``N`` key pairs of ``x -> beta [x < alpha]``: ``cw`` of shape
    ``(depth, 2 + W w, N)`` and ``last`` (value shape ``(W, N)``), for ``alpha`` (``(N,)`` words below ``2^depth``),
    payloads ``beta`` (ring elements of value shape ``(W, N)``) and the two parties' root ``seeds``
    (``(N, 2)`` words each, uniform). Key ``b`` is ``(seeds[b], cw, last)``."""
    alpha = np.asarray(alpha, dtype=np.uint64)
    n = alpha.shape[0]
    shape = ring.shape(beta)
    if len(shape) != 2 or shape[1] != n:
        raise ParameterError(explain("beta", shape, f"(W, {n}): a payload vector per key", "pass one per key"))
    _check(depth, shape[0])
    if n <= _BLOCK_KEYS:
        return _generate(alpha, beta, seeds, depth, ring)
    parts = [_generate(alpha[a: a + _BLOCK_KEYS], beta[..., a: a + _BLOCK_KEYS],
                       (seeds[0][a: a + _BLOCK_KEYS], seeds[1][a: a + _BLOCK_KEYS]), depth, ring)
             for a in range(0, n, _BLOCK_KEYS)]
    return np.concatenate([c for c, _ in parts], axis=-1), np.concatenate([v for _, v in parts], axis=-1)


def _generate(alpha: Words, beta: RingArray, seeds: tuple[Words, Words], depth: int,
              ring: Ring) -> tuple[Words, RingArray]:
    """:func:`dcf_gen_payload` on checked operands (a block of keys whose state stays in the cache), both parties'
    trees at once, block-major as :func:`dcf_eval_payload` (arrays ``(party, side, block, key, word)``)."""
    n = alpha.shape[0]
    width = ring.shape(beta)[0]
    words = width * ring.words
    blocks = (words + 1) // 2
    sides, _, leaf_tweaks = _tweaks(blocks)
    tweak = np.ascontiguousarray(np.broadcast_to(sides[None, :, :, None, :], (2, 2, 1 + blocks, n, 2)))
    leaf_tweak = np.ascontiguousarray(np.broadcast_to(leaf_tweaks[None, :, None, :], (2, blocks, n, 2)))
    s = np.stack([np.asarray(seeds[b], dtype=np.uint64).reshape(n, 2) for b in (0, 1)])  # (party, key, word)
    s[..., 0] &= _CLEAR
    t = np.stack([np.zeros(n, dtype=np.uint64), np.ones(n, dtype=np.uint64)])
    acc = ring.zeros((width, n))
    cw = np.empty((depth, 2 + words, n), dtype=np.uint64)
    for i in range(depth):
        bit = (alpha >> np.uint64(depth - 1 - i)) & _ONE
        right = bit.astype(bool)  # alpha_i = 1: keep the right child, lose the left
        out = fixed_key_hash(tweak ^ s[:, None, None])  # (party, side, 1 + J, key, word)
        kids = out[:, :, 0].copy()
        bits = kids[..., 0] & _ONE  # (party, side, key)
        kids[..., 0] &= _CLEAR
        vals = _block_values(out[:, :, 1:], ring, width)  # value shape (party, side, W, key)
        diff = ring.sub(ring.index(vals, 1), ring.index(vals, 0))  # party 1's minus party 0's, per side
        lose = _select(bit, ring.index(diff, 0), ring.index(diff, 1))
        keep = _select(bit, ring.index(diff, 1), ring.index(diff, 0))
        v_cw = ring.sub(lose, acc)
        v_cw = _select(bit, ring.add(v_cw, beta), v_cw)  # leaving to the left (alpha_i = 1): x < alpha, pay beta
        # the next level's sum of party 0's minus party 1's values along the path: keep's difference and the
        # correction's (signed by t_1: it cancels its own sign), i.e. lose - keep (+ beta)
        acc = ring.sub(_select(bit, ring.add(lose, beta), lose), keep)
        v_cw = _select(t[1], ring.neg(v_cw), v_cw)
        pick = right[None, :, None]
        keep_seed = np.where(pick, kids[:, 1], kids[:, 0])
        s_cw = np.where(pick, kids[:, 0], kids[:, 1])
        s_cw = s_cw[0] ^ s_cw[1]
        t_left = bits[0, 0] ^ bits[1, 0] ^ bit ^ _ONE
        t_right = bits[0, 1] ^ bits[1, 1] ^ bit
        cw[i, 0] = s_cw[:, 0] | t_left | (t_right << _ONE)
        cw[i, 1] = s_cw[:, 1]
        cw[i, 2:] = v_cw.reshape(words, n)
        t_keep = np.where(right, t_right, t_left)
        t_own = np.where(right, bits[:, 1], bits[:, 0])
        s = keep_seed ^ (s_cw & (_ZERO - t)[..., None])
        t = t_own ^ (t_keep & t)
    leaves = _block_values(fixed_key_hash(leaf_tweak ^ s[:, None]), ring, width)  # value shape (party, W, key)
    last = ring.sub(ring.sub(ring.index(leaves, 1), ring.index(leaves, 0)), acc)
    return cw, _select(t[1], ring.neg(last), last)


def _block_values(out: Words, ring: Ring, width: int) -> RingArray:
    """Ring elements of value shape ``(*lead, W, N)`` from hash blocks ``(*lead, J, N, 2)``: Z_2^128 element ``m``
    in block ``m``, otherwise element ``m`` the word ``m`` (block ``m // 2``)."""
    if ring.words == 2:
        wide: RingArray = np.stack([out[..., :width, :, 0], out[..., :width, :, 1]])
        return wide
    lead, j, n = out.shape[:-3], out.shape[-3], out.shape[-2]
    vals = np.ascontiguousarray(np.moveaxis(out, -1, -2).reshape((*lead, 2 * j, n))[..., :width, :])
    if ring.bits < 64:
        vals &= np.uint64((1 << ring.bits) - 1)
    return vals


def dcf_eval_payload(party: int, seed: Words, cw: Words, last: RingArray, x: Words, depth: int,
                     ring: Ring) -> RingArray:
    """Party ``party``'s shares of ``beta [x < alpha]`` at public points ``x``: ``(N,)`` (one per key) or ``(T, N)``
    (``T`` per key), words below ``2^depth``. The result is a ring array of value shape ``(W, *x.shape)``.

    The hash's blocks live block-major (``(1 + J, *points, 2)``: each block's words of every point contiguous), so
    that every array operation runs over all points (no short inner loops); the values accumulate as words
    (Z_2^128: low and high words with their carries) and become ring elements once. Many keys are evaluated in
    blocks of about ``2^14`` points, whose state stays in the cache."""
    n = x.shape[-1]
    words = cw.shape[1] - 2
    if words < 1 or words % ring.words or cw.shape != (depth, 2 + words, n) or seed.shape != (n, 2) \
            or x.ndim not in (1, 2):
        raise ParameterError(explain("payload DCF key", (seed.shape, cw.shape), f"seed ({n}, 2), corrections "
                                     f"({depth}, 2 + W words, {n}) for points (..., {n})",
                                     "evaluate the keys dealt for this input"))
    _check(depth, words // ring.words)
    step = max(1, _BLOCK_POINTS // (x.size // n))
    if n <= step:
        return _evaluate(party, seed, cw, last, x, depth, ring)
    parts = [_evaluate(party, seed[a: a + step], cw[:, :, a: a + step], last[..., a: a + step], x[..., a: a + step],
                       depth, ring) for a in range(0, n, step)]
    out: RingArray = np.concatenate(parts, axis=-1)
    return out


def _evaluate(party: int, seed: Words, cw: Words, last: RingArray, x: Words, depth: int, ring: Ring) -> RingArray:
    """:func:`dcf_eval_payload` on checked keys."""
    n = x.shape[-1]
    words = cw.shape[1] - 2
    width = words // ring.words
    blocks = (words + 1) // 2
    sides, _, leaf_tweaks = _tweaks(blocks)
    wide = ring.words == 2
    pts = x.shape
    lead = (1,) * len(pts)
    # the tweaks as 16-byte items, so that choosing a side per point moves whole blocks
    tweak = [np.ascontiguousarray(sides[d]).view("V16").reshape((1 + blocks, *lead)) for d in (0, 1)]
    s = np.empty((*pts, 2), dtype=np.uint64)
    s[...] = seed
    s[..., 0] &= _CLEAR
    t = np.full(pts, party, dtype=np.uint64)
    seed_lo = cw[:, 0] & _CLEAR
    acc = np.zeros((ring.words, width, *pts), dtype=np.uint64)
    for i in range(depth):
        right = ((x >> np.uint64(depth - 1 - i)) & _ONE).astype(bool)
        state = np.where(right, tweak[1], tweak[0])[..., None].view(np.uint64)  # (1 + J, *points, 2)
        state ^= s
        out = fixed_key_hash(state)
        mask = _ZERO - t
        level = cw[i]
        t_child = out[0, ..., 0] & _ONE
        t_child ^= (level[0] >> right.astype(np.uint64)) & t
        s = np.empty((*pts, 2), dtype=np.uint64)
        np.bitwise_and(out[0, ..., 0], _CLEAR, out=s[..., 0])
        s[..., 0] ^= seed_lo[i] & mask
        np.bitwise_and(level[1], mask, out=s[..., 1])
        s[..., 1] ^= out[0, ..., 1]
        _accumulate(acc, out[1:], level[2:], mask, width, wide)
        t = t_child
    leaf_in = np.empty((blocks, *pts, 2), dtype=np.uint64)
    for j in range(blocks):
        np.bitwise_xor(s, leaf_tweaks[j], out=leaf_in[j])
    leaf = fixed_key_hash(leaf_in)
    rows = last.reshape(words, n)  # the leaf correction's words, limb-major as the level corrections'
    _accumulate(acc, leaf, rows, _ZERO - t, width, wide)
    result: RingArray = acc if wide else np.ascontiguousarray(acc[0])
    if not wide and ring.bits < 64:
        result &= np.uint64((1 << ring.bits) - 1)
    return ring.neg(result) if party == 1 else result


def _limbs(values: Words, width: int, wide: bool) -> tuple[Words, Words | None]:
    """The payload elements' words from hash blocks ``values`` ``(D, J, *points, 2)``, each ``(D, W, *points)``:
    Z_2^128 (element ``m`` in block ``m``) the low and the high words, else (element ``m`` the word ``m``) the words
    and None."""
    if wide:
        return values[:, :width, ..., 0], values[:, :width, ..., 1]
    d, j = values.shape[:2]
    flat = np.moveaxis(values, -1, 2).reshape((d, 2 * j, *values.shape[2:-1]))
    return flat[:, :width], None


def _masked(rows: Words, masks: Words, width: int, wide: bool) -> tuple[Words, Words | None]:
    """Corrections ``rows`` ``(D, W w, N)`` (limb-major) ANDed with the points' ``masks`` ``(D, *points)``, as
    :func:`_limbs` gives the values: ``(D, W, *points)`` low and high words (or the words and None)."""
    d, _, n = rows.shape
    shape = (d, width, *(1,) * (masks.ndim - 2), n)
    m = masks[:, None]
    low = rows[:, :width].reshape(shape) & m
    return low, (rows[:, width: 2 * width].reshape(shape) & m) if wide else None


def _accumulate(acc: Words, values: Words, rows: Words, mask: Words, width: int, wide: bool) -> None:
    """``acc += value + (correction & mask)`` for one level: ``acc`` ``(limbs, W, *points)``, the hash's value
    blocks ``(J, *points, 2)``, the level's corrections ``(W w, N)``; Z_2^128 with the carries out of the low
    words."""
    v_lo, v_hi = _limbs(values[None], width, wide)
    c_lo, c_hi = _masked(rows[None], mask[None], width, wide)
    low = v_lo[0] + c_lo[0]
    if v_hi is None or c_hi is None:
        acc[0] += low
        return
    high = v_hi[0] + c_hi[0]
    high += low < c_lo[0]
    acc[0] += low
    high += acc[0] < low
    acc[1] += high
