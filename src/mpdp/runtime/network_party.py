"""One party's protocol run over the network transport, as a process of its own (``mpdp party`` for a protocol).

:func:`run_network_party` waits for every peer, passes a start barrier (:func:`start_barrier`), runs the local
party's role through a :class:`~mpdp.runtime.comm.Comm` over the
:class:`~mpdp.runtime.grpc_transport.GrpcTransport`, and tells the peers it finished or failed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from mpdp.errors import MalformedMessageError, explain
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime.codec import DEFAULT_LIMITS, CodecLimits
from mpdp.runtime.comm import Comm, PartyTraffic
from mpdp.runtime.grpc_transport import GrpcTransport

__all__ = ["run_network_party", "start_barrier"]


def run_network_party(transport: GrpcTransport, role: Callable[[Comm], Any], *, rng: RandomSource | None = None,
                      timeout: float = 120.0, limits: CodecLimits = DEFAULT_LIMITS,
                      optional: Mapping[str, int] | None = None,
                      max_absent: int = 0) -> tuple[Any, PartyTraffic, float]:
    """Run the local party's role over ``transport``: ``(result, traffic, protocol seconds)``.

    Waits until every peer answers (so connection set-up and certificate errors surface before the protocol
    starts and are not timed) and until every peer is waiting too (:func:`start_barrier`, so the protocol
    seconds do not include a peer's slower start-up), runs the role, tells peers it finished, or that it
    aborted and why, and closes the transport. ``rng`` should be ``root.spawn(name)`` to reproduce
    :func:`~mpdp.runtime.run_protocol`.

    ``optional`` (peer -> how many clients it stands for) and ``max_absent``: peers the protocol can do without,
    as secure aggregation does without up to ``max_dropouts`` clients. Those that have not answered by
    ``connect_timeout`` are left out (:meth:`~mpdp.runtime.grpc_transport.GrpcTransport.wait_quorum`, listed in
    ``transport.absent``) and the role runs with the others, for which an absent party is one that dropped out
    before sending anything; more than ``max_absent`` is a PartyUnavailableError naming them.
    """
    try:
        if optional:
            transport.wait_quorum(optional, max_absent)
        else:
            transport.wait_ready()
        start_barrier(transport)
    except BaseException:
        transport.close()
        raise
    comm = Comm(transport.endpoint(transport.name), transport.parties, rng=resolve(rng), timeout=timeout,
                limits=limits)
    start = time.perf_counter()
    try:
        result = role(comm)
    except BaseException as exc:
        transport.abort(f"{transport.name} failed with {type(exc).__name__}: {exc}")
        with contextlib.suppress(Exception):
            comm.close()
        raise
    seconds = time.perf_counter() - start
    transport.party_finished(transport.name)
    comm.close()
    return result, comm.traffic, seconds


_BARRIER = b"mpdp/start-barrier/v1"


def start_barrier(transport: GrpcTransport) -> None:
    """Send a barrier frame to every peer, then receive one from every peer, outside any :class:`Comm`.

    Per-pair FIFO delivery makes the barrier the first message each peer reads from us, before the protocol's
    own (sequence-numbered) messages, and it is not counted in the protocol's traffic. Anything else in its
    place is a peer running another protocol version: refused, naming the peer.
    """
    endpoint = transport.endpoint(transport.name)
    present = [peer for peer in transport.peers if peer not in transport.absent]
    for peer in present:
        endpoint.send(peer, _BARRIER)
    for peer in present:
        received = endpoint.recv(peer, transport.connect_timeout)
        if received != _BARRIER:
            raise MalformedMessageError(explain(
                f"first message from {peer}", received[:32], f"the start barrier {_BARRIER!r}",
                f"run the same mpdp version on {peer} and {transport.name}"))
