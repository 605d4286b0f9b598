"""A minimal n-party secure sum, used to exercise the runtime end to end.

Each party splits its integer vector into additive shares over Z_2^64, sends one share to every peer,
adds the shares it holds, and broadcasts that partial sum; every party then adds the partial sums. Two
communication rounds, ``2 n (n - 1)`` messages.

Security
--------
Semi-honest, any coalition of up to n - 1 parties learns nothing beyond the sum: each share a party sees
from another is a uniform element of Z_2^64 independent of the sender's input. The real secure-aggregation
protocols (dropout tolerance, fixed-point encoding, overflow checks) live elsewhere in ``protocols``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpdp.runtime.comm import Comm

__all__ = ["secure_sum_role"]


def secure_sum_role(values: npt.NDArray[np.int64]):  # type: ignore[no-untyped-def]
    """The role of a party contributing ``values`` (int64) to the sum; returns the role callable."""
    own = np.asarray(values, dtype=np.int64).astype(np.uint64)

    def role(comm: Comm) -> npt.NDArray[np.int64]:
        masks = {peer: comm.rng.uint64(own.shape) for peer in comm.peers}
        mine = own.copy()
        for mask in masks.values():
            mine -= mask  # wraps mod 2^64, as the ring requires
        comm.scatter(masks, label="share")
        received = comm.gather(label="share")
        partial = mine + sum(received.values(), np.zeros_like(own))
        sums = comm.all_gather(partial, label="partial")
        total = sum(sums.values(), np.zeros_like(own))
        return total.astype(np.int64)

    return role
