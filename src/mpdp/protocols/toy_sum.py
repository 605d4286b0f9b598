"""A minimal n-party secure sum, used to exercise the runtime end to end.

Each party splits its integer vector into additive shares over Z_2^64, sends one share to every peer,
adds the shares it holds, and broadcasts that partial sum; every party then adds the partial sums. Two
communication rounds, ``2 n (n - 1)`` messages.

Inputs
------
Every party's input is an int64 vector of one common shape; ints are taken exactly (a float with a fraction,
NaN or infinity is refused, never truncated: :func:`mpdp.numeric.int64_array`). The sum is computed modulo
2^64 and is the true sum because every entry must satisfy ``|x| <= floor((2^63 - 1) / n)`` for ``n`` parties
(checked before anything is sent, :class:`~mpdp.errors.EncodingOverflowError` naming the party): a sum that
left int64 would otherwise wrap to the other sign. Shares whose shape differs from the receiver's input are
refused with a :class:`~mpdp.errors.ShapeMismatchError` naming the sender, before any partial sum is sent.

Security
--------
Semi-honest, any coalition of up to n - 1 parties learns nothing beyond the sum: each share a party sees
from another is a uniform element of Z_2^64 independent of the sender's input. The real secure-aggregation
protocols (dropout tolerance, fixed-point encoding, overflow checks) live elsewhere in ``protocols``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import EncodingOverflowError, MalformedMessageError, ShapeMismatchError, explain
from mpdp.numeric import INT64_MAX, int64_array
from mpdp.runtime.comm import Comm

__all__ = ["entry_bound", "secure_sum_role"]


def entry_bound(parties: int) -> int:
    """The largest ``|x|`` an entry may have so that the sum over ``parties`` parties fits int64."""
    return INT64_MAX // max(1, parties)


def secure_sum_role(values: Any, *, party: str | None = None,
                    field: str = "inputs") -> Callable[[Comm], npt.NDArray[np.int64]]:
    """The role of a party contributing ``values`` (integers, see Inputs above) to the sum; returns the role
    callable. Errors name each party's input as ``{field}.{party}`` (the configuration key of ``mpdp party``);
    ``party`` names this one before the run knows it."""
    what = f"{field}.{party}" if party else "values"
    own_values = int64_array(values, what, fix="give each party an int64 vector (np.save of an integer array)")

    def role(comm: Comm) -> npt.NDArray[np.int64]:
        bound = entry_bound(len(comm.parties))
        worst = max(int(own_values.max()), -int(own_values.min())) if own_values.size else 0
        if worst > bound:
            raise EncodingOverflowError(explain(f"{field}.{comm.name}", f"|x| up to {worst}", f"|x| <= {bound} (so "
                                                f"the sum of {len(comm.parties)} parties fits int64)",
                                                "rescale the inputs"))
        own = own_values.astype(np.uint64)
        masks = {peer: comm.rng.uint64(own.shape) for peer in comm.peers}
        mine = own.copy()
        for mask in masks.values():
            mine -= mask  # wraps mod 2^64, as the ring requires
        comm.scatter(masks, label="share")
        received = comm.gather(label="share")
        for peer, share in received.items():
            _check_share(share, peer, comm.name, own.shape, field)
        partial = mine + sum(received.values(), np.zeros_like(own))
        sums = comm.all_gather(partial, label="partial")
        for peer, part in sums.items():
            _check_share(part, peer, comm.name, own.shape, field)
        total = sum(sums.values(), np.zeros_like(own))
        return total.astype(np.int64)

    return role


def _check_share(share: Any, sender: str, me: str, shape: tuple[int, ...], field: str) -> None:
    """A share from ``sender``: a uint64 array of this party's input shape."""
    if not isinstance(share, np.ndarray) or share.dtype != np.uint64:
        raise MalformedMessageError(explain(f"share from {sender}", type(share).__name__, "a uint64 array",
                                            f"{sender} runs another protocol version"))
    if share.shape != shape:
        raise ShapeMismatchError(explain(f"{field}.{sender}", f"shape {share.shape}",
                                         f"shape {shape}, the shape of {field}.{me}", "give every party a vector "
                                         "of the same shape"))
