"""Ring-share outputs common to the exact backends (``shares``, ``paillier``): checking a ring matrix received
from a peer, and turning a holder's share of ``X^T Y`` into its output (kept, or exchanged when revealed)."""

from __future__ import annotations

from typing import Any

from mpdp.crypto.ring import RingArray
from mpdp.errors import MalformedMessageError, explain
from mpdp.protocols.inner_product.spec import CrossProduct, CrossProductSpec
from mpdp.runtime.comm import Comm

__all__ = ["check_ring", "finish"]


def check_ring(value: Any, spec: CrossProductSpec, shape: tuple[int, ...], what: str) -> RingArray:
    """``value`` received from a peer as ``what``, refused unless it is a ring matrix of ``spec.fmt`` of ``shape``."""
    ring = spec.fmt.ring
    out = ring.check(value, what, received=True)
    if ring.shape(out) != shape:
        raise MalformedMessageError(explain(what, ring.shape(out), str(shape), "the peer is out of step"))
    return out


def finish(comm: Comm, spec: CrossProductSpec, share: RingArray) -> CrossProduct:
    """Turn this holder's share into its output (exchanging it when the product is revealed)."""
    fmt, ring = spec.fmt, spec.fmt.ring
    if spec.reveal_to is None:
        return CrossProduct(None, share, spec.scale_bits, fmt, spec.result_bound)
    other = spec.right if comm.name == spec.left else spec.left
    if comm.name != spec.reveal_to:
        comm.send(spec.reveal_to, share, label="ip.reveal")
        return CrossProduct(None, None, spec.scale_bits, fmt, spec.result_bound)
    theirs = check_ring(comm.recv(other, label="ip.reveal"), spec, (spec.left_cols, spec.right_cols),
                        f"share from {other}")
    value = fmt.decode(ring.add(share, theirs), scale_bits=spec.scale_bits)
    return CrossProduct(value, None, spec.scale_bits, fmt, spec.result_bound)

