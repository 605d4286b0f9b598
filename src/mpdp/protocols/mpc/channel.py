"""What every operation of the engine needs of a party's session: the :class:`Channel` interface.

An operation on shares (a product, a truncation, a comparison circuit) runs the same code on every computing
party and talks to the others only through its session: who the computing parties are and which one is the
leader, the correlation provider, the next sharing id, and the openings (each one round). :class:`Channel`
lists exactly that, as a :class:`typing.Protocol`, so that the operation modules depend on this small interface
and not on :class:`~mpdp.protocols.mpc.session.MPCSession`, which implements it (and sits at the top of the
package: it binds the operations that :class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint`'s operators call).

:func:`check_bound` is the check every layer applies to a public bound on ``|values|``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import ParameterError, explain
from mpdp.protocols.mpc.provider import CorrelationProvider
from mpdp.runtime import Comm

__all__ = ["Channel", "check_bound"]


class Channel(Protocol):
    """One computing party's side of a session, as the operations on shares use it.

    Every party runs the same program, so all of them call the same openings in the same order with the same
    sharing ids; an opening refuses a peer's message for another sharing
    (:class:`~mpdp.errors.KeyMismatchError`) or of another shape (:class:`~mpdp.errors.MalformedMessageError`).
    """

    comm: Comm
    """This party's Comm (``comm.name`` is this party)."""
    parties: tuple[str, ...]
    """The computing parties in canonical order; party 0 is the leader."""
    index: int
    """This party's position in :attr:`parties`."""
    leader: bool
    """Whether this party is party 0, the one that adds public constants to its shares."""
    peers: tuple[str, ...]
    """The other computing parties."""
    provider: CorrelationProvider
    """This party's source of correlated randomness."""
    fmt: FixedPointFormat
    """The default fixed-point format of new shared values."""
    comparisons: str
    """How ``[x < 0]`` is computed: ``"circuit"`` (the carry circuit, any provider and number of parties) or
    ``"fss"`` (one round with the dealer's DCF keys where the provider deals them, else the circuit)."""
    functions: str
    """How the high-precision functions are computed: ``"circuit"`` or ``"masked"`` (on masked wires where the
    provider deals masked plans, :mod:`~mpdp.protocols.mpc.masked`)."""
    session_id: bytes
    """The 8 random bytes every sharing id of this session starts with."""
    new_id: Callable[[], bytes]
    """The next sharing id (identical on every party running the same program)."""

    def open(self, ring: Ring, shares: Sequence[RingArray], *, sharing_id: bytes, label: str) -> list[RingArray]:
        """Open additive shares to every computing party (one round): the ring sums."""
        ...

    def open_to(self, ring: Ring, shares: Sequence[RingArray], receiver: str, *, sharing_id: bytes,
                label: str) -> list[RingArray] | None:
        """Open to ``receiver`` only; returns the sums there and None elsewhere."""
        ...

    def open_xor(self, words: Sequence[RingArray], *, sharing_id: bytes, label: str) -> list[RingArray]:
        """Open XOR-shared uint64 words to every computing party."""
        ...

    def open_with_words(self, ring: Ring, shares: Sequence[RingArray], words: Sequence[RingArray], *,
                        sharing_id: bytes, label: str) -> tuple[list[RingArray], list[RingArray]]:
        """:meth:`open` of ``shares`` and :meth:`open_xor` of ``words`` in one message (one round)."""
        ...

    def open_bits(self, bits: npt.NDArray[Any], *, sharing_id: bytes, label: str) -> npt.NDArray[np.uint8]:
        """Open XOR-shared single bits (0/1), packed eight to a byte; returns uint8 0/1."""
        ...

    def exchange(self, ring: Ring, outgoing: Mapping[str, Sequence[RingArray]],
                 shapes: Mapping[str, Sequence[tuple[int, ...]]], *, sharing_id: bytes,
                 label: str) -> dict[str, list[RingArray]]:
        """Send each peer in ``outgoing`` its own arrays and receive from each peer in ``shapes`` the arrays of
        those public shapes that it sent this party (one round)."""
        ...


def check_bound(bound: float, fmt: FixedPointFormat) -> float:
    """``bound`` as a float, refused unless it is a public bound on ``|values|`` that ``fmt`` can hold."""
    if not isinstance(bound, (int, float)) or not np.isfinite(bound) or bound < 0 or bound > fmt.max_value:
        raise ParameterError(explain("bound", bound, f"a number in [0, {fmt.max_value:g}] for {fmt}",
                                     "declare a public bound on |values| that the format can hold"))
    return float(bound)
