"""Additive n-of-n secret sharing over Z_2^l.

``share(x)`` draws ``x_1, ..., x_{n-1}`` uniformly and sets ``x_0 = x - sum_i x_i`` (mod 2^l), so any
``n - 1`` shares are jointly uniform and independent of ``x`` (perfect secrecy); all ``n`` sum to ``x``.

Every sharing carries a random 16-byte ``sharing_id``. :func:`reconstruct` refuses shares of different
sharings (:class:`~mpdp.errors.KeyMismatchError`) instead of adding them into a meaningless value, and
refuses incomplete or duplicated share sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import KeyMismatchError, ParameterError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["AdditiveShare", "reconstruct", "share"]


@dataclass(frozen=True)
class AdditiveShare:
    """Party ``index``'s share (of ``parties``) of the sharing ``sharing_id``."""

    ring: Ring
    index: int
    parties: int
    sharing_id: bytes
    value: RingArray = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.parties, int) or self.parties < 1:
            raise ParameterError(explain("parties", self.parties, "an int >= 1", "pass the number of parties"))
        if not isinstance(self.index, int) or not 0 <= self.index < self.parties:
            raise ParameterError(explain("index", self.index, f"0 <= index < {self.parties}", "number parties 0..n-1"))
        if not isinstance(self.sharing_id, bytes) or len(self.sharing_id) != 16:
            raise ParameterError(explain("sharing_id", self.sharing_id, "16 bytes", "use share() to make shares"))
        self.ring.check(self.value, "share value")


def share(secret: RingArray, ring: Ring, parties: int, *, rng: RandomSource | None = None) -> list[AdditiveShare]:
    """Split ring elements ``secret`` into ``parties`` additive shares (uniform, perfectly hiding)."""
    if isinstance(parties, bool) or not isinstance(parties, int) or not 1 <= parties <= 1 << 16:
        raise ParameterError(explain("parties", parties, "an int in [1, 65536]", "pass e.g. parties=3"))
    source = resolve(rng)
    secret = ring.check(secret, "secret")
    shape = ring.shape(secret)
    sharing_id = source.bytes(16)
    others = [ring.random(source, shape) for _ in range(parties - 1)]
    first = secret
    for other in others:
        first = ring.sub(first, other)
    values = [first, *others]
    return [AdditiveShare(ring, i, parties, sharing_id, v) for i, v in enumerate(values)]


def reconstruct(shares: Sequence[AdditiveShare]) -> RingArray:
    """The secret: the ring sum of all ``n`` shares of one sharing."""
    if not isinstance(shares, Sequence) or not all(isinstance(s, AdditiveShare) for s in shares):
        raise ParameterError(explain("shares", type(shares).__name__, "a list of AdditiveShare",
                                     "pass the shares share() made"))
    if not shares:
        raise ParameterError(explain("shares", [], "all n shares of one sharing", "pass every party's share"))
    first = shares[0]
    for s in shares:
        if s.sharing_id != first.sharing_id:
            raise KeyMismatchError(
                explain("sharing_id", s.sharing_id.hex(), f"{first.sharing_id.hex()} (one sharing)",
                        "reconstruct only shares produced by the same share() call")
            )
        if s.ring != first.ring or s.parties != first.parties:
            raise KeyMismatchError(explain("share ring/parties", (s.ring, s.parties), f"{(first.ring, first.parties)}",
                                           "reconstruct shares of one sharing"))
        if s.ring.shape(s.value) != first.ring.shape(first.value):
            raise ShapeMismatchError(
                explain("share shape", s.ring.shape(s.value), f"{first.ring.shape(first.value)}",
                        "pass matching shares")
            )
    indices = sorted(s.index for s in shares)
    if indices != list(range(first.parties)):
        raise ParameterError(
            explain("share indices", indices, f"each of 0..{first.parties - 1} exactly once",
                    "additive sharing is n-of-n: collect every party's share")
        )
    total = np.array(first.value, copy=True)
    for s in shares[1:]:
        total = first.ring.add(total, s.value)
    return total
