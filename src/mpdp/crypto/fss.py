"""Distributed comparison functions (DCF): two-party function secret sharing of ``x -> beta [x < alpha]``.

A DCF key pair ``(k_0, k_1)`` for a secret ``alpha`` (an unsigned ``depth``-bit integer) and a secret payload
``beta`` (a ring element) lets each party ``b`` compute, from any *public* ``x``, a ring element
``y_b = Eval(b, k_b, x)`` with ``y_0 + y_1 = beta [x < alpha]``; either key alone is pseudorandom and reveals
neither ``alpha`` nor ``beta``. This is the construction of Boyle, Chandran, Gilboa, Gupta, Ishai, Kumar and
Rathee, "Function Secret Sharing for Mixed-Mode and Fixed-Point Secure Computation" (Eurocrypt 2021, Fig. 3),
with the one-side-per-level evaluation AriaNN (Ryffel et al., PETS 2022) uses.

Everything is vectorised over elements: ``N`` independent keys (one ``alpha`` each) are generated and evaluated
level by level on numpy arrays, each level's pseudorandom expansions being one AES call over all elements.

The PRG
-------
A node's 128-bit seed ``s`` expands, for a side ``d`` (0 left, 1 right), into the child's seed, its control bit
``t`` and a value ``v`` by fixed-key AES in Matyas-Meyer-Oseas mode, ``H(z) = AES_K(z) XOR z`` with a public key
``K``: ``(s_d, t_d) = H(s XOR T_(d,0))`` (``t_d`` the lowest bit, cleared with the next one: seeds have 126 free
bits, the two low bits of a correction word carry its two control bits) and ``v_d = H(s XOR T_(d,1))``, for
four public tweaks ``T``; the leaf value is ``H(s XOR T_leaf)``. Fixed-key AES is modelled as a random
permutation (the standard assumption of fixed-key garbling and FSS libraries: Guo, Katz, Wang and Yu, "Efficient
and Secure Multiparty Computation from Fixed-Key Block Ciphers", IEEE S&P 2020). The evaluator expands only
the side its public bit takes: two AES blocks per element per level.

Key layout (``N`` keys of depth ``d`` in a ring of ``w`` words per element, 1 or 2)
------------------------------------------------------------------------------------
``seed``: ``(N, 2)`` words, the party's own root seed (uniform; its two low bits are ignored).
``cw``: ``(d, 2 + w, N)`` words, common to both keys: per level the seed correction (words 0-1, the left and
right control-bit corrections in bits 0 and 1 of word 0) and the value correction (words 2.., a ring element).
``last``: the leaf correction, a ring element per key.
Size per comparison and party: ``16 + 8 (2 + w) d + 8 w`` bytes (1.5 KiB for ``d = 63`` in Z_2^64).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import ParameterError, explain

__all__ = ["MAX_DEPTH", "dcf_eval", "dcf_gen", "fixed_key_hash", "key_words"]

Words = npt.NDArray[np.uint64]

MAX_DEPTH = 64
"""The deepest DCF: inputs of up to 64 bits (one word per element)."""

_KEY = hashlib.sha256(b"mpdp.fss fixed AES key").digest()[:16]
_TWEAKS = np.frombuffer(b"".join(hashlib.sha256(b"mpdp.fss tweak %d" % i).digest() for i in range(3)),
                        dtype="<u8").astype(np.uint64).reshape(3, 2, 2)
# _TWEAKS[d, j] for side d and output j (0: seed and bit, 1: value); the leaf tweak is _TWEAKS[2, 0]
_DELTA = _TWEAKS[0] ^ _TWEAKS[1]
_CLEAR = np.uint64(0xFFFFFFFFFFFFFFFC)
_ONE, _TWO = np.uint64(1), np.uint64(2)


class _FixedKeyAes(threading.local):
    """``H(z) = AES_K(z) XOR z`` on arrays of 128-bit blocks (``(..., 2)`` little-endian words), one AES call.
    One cipher context per thread (parties may run as threads of one process)."""

    def __init__(self) -> None:
        # ECB is the point: a fixed-key permutation applied blockwise (a hash, never an encryption of data)
        self._encryptor: Any = Cipher(algorithms.AES(_KEY), modes.ECB()).encryptor()  # noqa: S305

    def __call__(self, blocks: Words) -> Words:
        flat = np.ascontiguousarray(blocks, dtype=np.uint64).reshape(-1)
        out = np.empty(flat.size + 2, dtype=np.uint64)  # update_into wants a block of spare room
        self._encryptor.update_into(flat.view(np.uint8).data, out.view(np.uint8).data)
        if not np.little_endian:  # pragma: no cover - blocks are the little-endian bytes of the words
            raise ParameterError("the DCF needs a little-endian machine")
        result = out[: flat.size]
        result ^= flat
        return result.reshape(blocks.shape)


_HASH = _FixedKeyAes()


def fixed_key_hash(blocks: Words) -> Words:
    """``H(z) = AES_K(z) XOR z`` on an array of 128-bit blocks (``(..., 2)`` little-endian words), the fixed-key
    hash of the keys here (one AES call; one cipher context per thread). :mod:`mpdp.crypto.fss_payload` expands
    its seeds with it under its own tweaks."""
    return _HASH(blocks)


def _value(words: Words, ring: Ring) -> RingArray:
    """A ring element per 128-bit block ``(..., 2)``: its low word (masked to the ring) or both words."""
    if ring.words == 2:
        return np.ascontiguousarray(np.moveaxis(words, -1, 0))
    low = np.array(words[..., 0], copy=True)
    if ring.bits < 64:
        low &= np.uint64((1 << ring.bits) - 1)
    return low


def _expand(seeds: Words, side: Words | int) -> tuple[Words, Words, Words]:
    """The child on ``side`` (0/1 words per element, or one int for all) of every seed ``(..., 2)``: its seed (low
    bits cleared), its control bit (0/1 words) and its value block ``(..., 2)``."""
    blocks = np.empty((*seeds.shape[:-1], 2, 2), dtype=np.uint64)
    blocks[..., 0, :] = seeds
    blocks[..., 1, :] = seeds
    if isinstance(side, int):
        blocks ^= _TWEAKS[side]
    else:
        blocks ^= _TWEAKS[0]
        blocks ^= _DELTA & (np.uint64(0) - side)[..., None, None]
    out = _HASH(blocks)
    child = out[..., 0, :]
    bit = child[..., 0] & _ONE
    child[..., 0] &= _CLEAR
    return child, bit, out[..., 1, :]


def _leaf(seeds: Words, ring: Ring) -> RingArray:
    return _value(_HASH(seeds ^ _TWEAKS[2, 0]), ring)


def _select(cond: Words, ring: Ring, yes: RingArray, no: RingArray) -> RingArray:
    """``yes`` where the 0/1 word ``cond`` is 1, else ``no`` (ring elements, either layout)."""
    out: RingArray = no ^ ((yes ^ no) & (np.uint64(0) - cond))
    return out


def _check_depth(depth: int) -> None:
    if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise ParameterError(explain("DCF depth", depth, f"an int in [1, {MAX_DEPTH}]", "compare at most 64 bits"))


def key_words(depth: int, ring: Ring) -> int:
    """Words of one key of ``depth`` in ``ring`` (per element and party): seed, corrections, leaf correction."""
    return 2 + (2 + ring.words) * depth + ring.words


def dcf_gen(alpha: Words, beta: RingArray, seeds: tuple[Words, Words], depth: int,
            ring: Ring) -> tuple[Words, RingArray]:
    """The correction words of ``N`` DCF key pairs: ``cw`` of shape ``(depth, 2 + ring.words, N)`` and the leaf
    correction ``last`` (a ring element per key), for secret ``alpha`` (``(N,)`` words below ``2^depth``),
    payload ``beta`` (ring elements) and the two parties' root ``seeds`` (``(N, 2)`` words each, uniform).
    Key ``b`` is ``(seeds[b], cw, last)``."""
    _check_depth(depth)
    alpha = np.asarray(alpha, dtype=np.uint64)
    n = alpha.shape[0]
    # word-major state (numpy's loops run over the keys): per party its seed's two words and control bit
    s = [[np.array(seeds[b][:, 0], dtype=np.uint64) & _CLEAR, np.array(seeds[b][:, 1], dtype=np.uint64)]
         for b in (0, 1)]
    t = [np.zeros(n, dtype=np.uint64), np.ones(n, dtype=np.uint64)]
    acc = ring.zeros((n,))
    cw = np.empty((depth, 2 + ring.words, n), dtype=np.uint64)
    blocks = np.empty((2, n, 8), dtype=np.uint64)  # per party and key: (left seed, left value, right seed, ...)
    tweaks = _TWEAKS[:2].reshape(8)

    def value(words: tuple[Words, Words]) -> RingArray:
        return _value(np.stack(words, axis=-1), ring)

    for i in range(depth):
        bit = (alpha >> np.uint64(depth - 1 - i)) & _ONE
        right = np.uint64(0) - bit  # all ones where alpha_i = 1: keep the right child, lose the left
        for b in (0, 1):
            for w in range(8):
                np.bitwise_xor(s[b][w % 2], tweaks[w], out=blocks[b, :, w])
        out = _HASH(blocks)
        kept, lost, t_kid = [], [], []
        for b in (0, 1):
            o = out[b]
            t_kid.append((o[:, 0] & _ONE, o[:, 4] & _ONE))
            left = (o[:, 0] & _CLEAR, o[:, 1], o[:, 2], o[:, 3])  # seed words, value words
            rite = (o[:, 4] & _CLEAR, o[:, 5], o[:, 6], o[:, 7])
            swap = [(lw ^ rw) & right for lw, rw in zip(left, rite, strict=True)]
            kept.append(tuple(lw ^ sw for lw, sw in zip(left, swap, strict=True)))
            lost.append(tuple(rw ^ sw for rw, sw in zip(rite, swap, strict=True)))
        s_cw = (lost[0][0] ^ lost[1][0], lost[0][1] ^ lost[1][1])
        v_cw = ring.sub(ring.sub(value(lost[1][2:]), value(lost[0][2:])), acc)
        v_cw = _select(bit, ring, ring.add(v_cw, beta), v_cw)  # leaving to the left: x < alpha, pay beta
        v_cw = _select(t[1], ring, ring.neg(v_cw), v_cw)
        step = ring.add(ring.sub(value(kept[0][2:]), value(kept[1][2:])), _select(t[1], ring, ring.neg(v_cw), v_cw))
        acc = ring.add(acc, step)
        t_left = t_kid[0][0] ^ t_kid[1][0] ^ bit ^ _ONE
        t_right = t_kid[0][1] ^ t_kid[1][1] ^ bit
        cw[i, 0] = s_cw[0] | t_left | (t_right << _ONE)
        cw[i, 1] = s_cw[1]
        cw[i, 2:] = v_cw.reshape(ring.words, n)
        t_keep = t_left ^ ((t_left ^ t_right) & right)
        for b in (0, 1):
            mask = np.uint64(0) - t[b]  # all ones where t = 1
            t_own = t_kid[b][0] ^ ((t_kid[b][0] ^ t_kid[b][1]) & right)
            s[b] = [kept[b][0] ^ (s_cw[0] & mask), kept[b][1] ^ (s_cw[1] & mask)]
            t[b] = t_own ^ (t_keep & t[b])
    leaves = [_leaf(np.stack(s[b], axis=-1), ring) for b in (0, 1)]
    last = ring.sub(ring.sub(leaves[1], leaves[0]), acc)
    return cw, _select(t[1], ring, ring.neg(last), last)


def dcf_eval(party: int, seed: Words, cw: Words, last: RingArray, x: Words, depth: int, ring: Ring) -> RingArray:
    """Party ``party``'s (0 or 1) shares of ``beta [x < alpha]`` at public ``x``, one per key: ``x`` of shape
    ``(N,)`` (one point per key) or ``(T, N)`` (``T`` points per key, e.g. thresholds), words below ``2^depth``;
    the result has ``x``'s shape (Z_2^128: a leading limb axis). ``depth`` levels, each one AES call of two blocks
    per point and a few array operations over all points."""
    _check_depth(depth)
    n = x.shape[-1]
    if cw.shape != (depth, 2 + ring.words, n) or seed.shape != (n, 2) or x.ndim not in (1, 2):
        raise ParameterError(explain("DCF key", (seed.shape, cw.shape), f"seed ({n}, 2), corrections "
                                     f"({depth}, {2 + ring.words}, {n}) for points (..., {n})",
                                     "evaluate the keys dealt for this input"))
    lead = x.shape[:-1]
    spread = (ring.words, *(1,) * len(lead), n) if ring.words == 2 else (n,)  # a ring element per key, broadcast
    # The state lives word-major (each array one word of every point: numpy's loops run over the points); the
    # AES input interleaves it into blocks, one strided write per word.
    s0 = np.array(np.broadcast_to(seed[:, 0], x.shape), dtype=np.uint64)
    s1 = np.array(np.broadcast_to(seed[:, 1], x.shape), dtype=np.uint64)
    s0 &= _CLEAR
    t = np.full(x.shape, party, dtype=np.uint64)
    acc = ring.zeros(x.shape)
    blocks = np.empty((*x.shape, 4), dtype=np.uint64)
    tweak, delta = _TWEAKS[0].reshape(4), _DELTA.reshape(4)
    for i in range(depth):
        bit = (x >> np.uint64(depth - 1 - i)) & _ONE
        side = np.uint64(0) - bit
        for j, word in enumerate((s0, s1, s0, s1)):  # (seed, seed) XOR the side's two tweaks
            np.bitwise_and(side, delta[j], out=blocks[..., j])
            blocks[..., j] ^= word
            blocks[..., j] ^= tweak[j]
        out = _HASH(blocks)
        mask = np.uint64(0) - t
        level = cw[i]
        t_child = out[..., 0] & _ONE
        t_child ^= (level[0] >> bit) & t
        s0 = out[..., 0] & _CLEAR
        s0 ^= level[0] & _CLEAR & mask
        s1 = level[1] & mask
        s1 ^= out[..., 1]
        value = _value(out[..., 2:], ring)
        value = ring.add(value, (level[2] if ring.words == 1 else level[2:].reshape(spread)) & mask)
        acc = ring.add(acc, value)
        t = t_child
    final = np.stack([s0, s1], axis=-1)
    leaf = ring.add(_leaf(final, ring), last.reshape(spread) & (np.uint64(0) - t))
    acc = ring.add(acc, leaf)
    return ring.neg(acc) if party == 1 else acc
