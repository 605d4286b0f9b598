"""mpdp's dropout-tolerant secure aggregation (:mod:`mpdp.protocols.aggregation`) as two hub-relayed rounds.

The protocol's own role functions run unchanged, each over one relayed batch (:mod:`mpdp.flower.relay`):

1. **contribute** (hub -> clients -> hub): each client runs
   :func:`~mpdp.protocols.aggregation.aggregation_client` on its vector; its share for each aggregator is
   sealed to that aggregator. The clients whose reply reaches the hub before the round's deadline are the
   survivors; more than ``spec.max_dropouts`` missing clients abort the round
   (:class:`~mpdp.errors.ProtocolAbortError`) before any aggregator sums anything.
2. **aggregate** (hub -> aggregators -> hub): each aggregator opens its sealed shares, runs
   :func:`~mpdp.protocols.aggregation.aggregation_aggregator` with the hub's survivor list, and either returns
   its partial sum (``spec.reveal``) or keeps its additive share of the aggregate for the caller to perturb
   (paper 003: each aggregator adds its own exact discrete Gaussian before the only opening). The hub then
   runs :func:`~mpdp.protocols.aggregation.aggregation_server` over the aggregators' receipts and partial sums:
   it rechecks the survivors and dropout bound and adds the partial sums.

Because every share reaches the aggregators through the hub, a client either reaches every aggregator or none;
the survivor list the hub fixes after round 1 is the one the protocol's server would compute, and the hub
checks that the aggregators' receipts agree with it. The hub is the protocol's server (``SERVER``); it is not
an aggregator, so it only ever sees sealed shares, receipts and partial sums (or noisy shares).

Accuracy and security are those of :mod:`mpdp.protocols.aggregation` (error ``spec.error_bound``; coalitions
of the hub, any clients and all but one aggregator learn nothing beyond the released value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring import RingArray
from mpdp.crypto.sealed_box import open_sealed, seal
from mpdp.errors import MalformedMessageError, ProtocolAbortError, explain
from mpdp.flower.relay import RelayEndpoint, relay_comm
from mpdp.protocols.aggregation import (
    AggregateResult,
    AggregationSpec,
    AggregatorShare,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
)
from mpdp.randomness import RandomSource
from mpdp.runtime.codec import decode_envelope
from mpdp.runtime.comm import Comm

__all__ = ["SERVER", "aggregator_step", "client_step", "noisy_total", "server_combine", "survivors_message"]

#: The hub's party name in the aggregation (the Flower ServerApp).
SERVER = "server"


def _parties(spec: AggregationSpec, *extra: str) -> tuple[str, ...]:
    names = [SERVER, *spec.aggregators, *spec.clients]
    return tuple(dict.fromkeys([*names, *extra]))


def _context(run: str, step: int, client: str, aggregator: str) -> bytes:
    return f"{run}|{step}|{client}|{aggregator}".encode()


def client_step(spec: AggregationSpec, name: str, values: Any, public_keys: Mapping[str, bytes], *,
                run: str, step: int, rng: RandomSource, weights: Any = None) -> dict[str, bytes]:
    """Client ``name``'s round 1: its shares of ``values``, one sealed box per aggregator."""
    comm, endpoint = relay_comm(name, (SERVER, *spec.aggregators, name), {}, rng=rng)
    aggregation_client(comm, spec, values, weights)
    return {agg: seal(public_keys[agg], endpoint.outbox[agg][0], _context(run, step, name, agg), rng=rng)
            for agg in spec.aggregators}


def survivors_message(spec: AggregationSpec, replied: Sequence[str], *, rng: RandomSource) -> bytes:
    """The hub's survivor list after round 1 (the bytes the protocol's server sends each aggregator).

    Raises :class:`ProtocolAbortError` when more than ``spec.max_dropouts`` clients did not reply.
    """
    missing = [c for c in spec.clients if c not in set(replied)]
    if len(missing) > spec.max_dropouts:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ProtocolAbortError(
            f"{len(missing)} of {spec.total_clients} clients dropped out ({shown}), more than the "
            f"{spec.max_dropouts} tolerated; the aggregate would cover too few clients. Fix: rerun the round, or "
            "raise max_dropouts if the privacy of smaller aggregates is acceptable")
    alive = {c: np.arange(spec.clients[c] if c in set(replied) else 0, dtype=np.int64) for c in spec.clients}
    comm, endpoint = relay_comm(SERVER, _parties(spec), {}, rng=rng)
    comm.send(spec.aggregators[0], alive, label="agg.survivors")
    return endpoint.outbox[spec.aggregators[0]][0]


def aggregator_step(spec: AggregationSpec, name: str, private_key: bytes, boxes: Mapping[str, bytes],
                    survivors: bytes, *, run: str, step: int,
                    rng: RandomSource) -> tuple[AggregatorShare | None, Comm, RelayEndpoint]:
    """Aggregator ``name``'s round 2: open the survivors' boxes, run the protocol's aggregator side.

    Returns its :class:`AggregatorShare` (``reveal=False``, else None), its relay ``Comm`` (to send the hub
    more, e.g. a noisy share) and the endpoint whose ``outbox[SERVER]`` holds its messages for the hub
    (receipt, then the partial sum when ``reveal``).
    """
    inbox: dict[str, list[bytes]] = {client: [open_sealed(private_key, box, _context(run, step, client, name))]
                                     for client, box in boxes.items() if client in spec.clients}
    inbox[SERVER] = [survivors]
    comm, endpoint = relay_comm(name, _parties(spec), inbox, rng=rng)
    share = aggregation_aggregator(comm, spec)
    return share, comm, endpoint


def server_combine(spec: AggregationSpec, replies: Mapping[str, Sequence[bytes]], expected: bytes, *,
                   rng: RandomSource) -> tuple[AggregateResult | AggregatorShare, Comm]:
    """The hub's end of round 2: :func:`aggregation_server` over the aggregators' messages.

    ``replies[agg]`` are aggregator ``agg``'s messages to the hub (receipt, partial sum when ``spec.reveal``,
    then anything its caller added). Returns the server's result and the relay ``Comm``, positioned after the
    protocol's messages (read further per-aggregator messages with it). A survivor list that differs from
    ``expected`` (what the aggregators were told) aborts the round.
    """
    missing = [a for a in spec.aggregators if not replies.get(a)]
    if missing:
        raise ProtocolAbortError(f"aggregators {missing} did not answer the aggregation round; additive shares need "
                                 "every aggregator. Fix: restart them and rerun the round")
    comm, endpoint = relay_comm(SERVER, _parties(spec), {a: list(m) for a, m in replies.items()}, rng=rng)
    result = aggregation_server(comm, spec)
    told = _survivor_rows(expected)
    for agg, sent in endpoint.outbox.items():
        if len(sent) != 1 or _survivor_rows(sent[0]) != told:
            raise ProtocolAbortError(f"aggregator {agg}'s receipt disagrees with the survivors the hub relayed: a "
                                     "share was lost or duplicated in transit; the round is aborted")
    return result, comm


def _survivor_rows(data: bytes) -> dict[str, list[int]]:
    envelope = decode_envelope(data)
    body = envelope[3] if envelope is not None else None
    if not isinstance(body, dict):
        raise MalformedMessageError(explain("survivor list", type(body).__name__, "{client: rows}",
                                            "relay it unchanged"))
    return {str(k): np.asarray(v).tolist() for k, v in body.items()}


def noisy_total(spec: AggregationSpec, comm: Comm, label: str = "noisy-share") -> npt.NDArray[np.float64]:
    """The hub adds every aggregator's noisy share (ring elements) and decodes the sum (reals)."""
    ring = spec.fmt.ring
    total: RingArray = ring.zeros((spec.width,))
    for agg in spec.aggregators:
        theirs = ring.check(comm.recv(agg, label=label), f"noisy share from {agg}", received=True)
        if ring.shape(theirs) != (spec.width,):
            raise MalformedMessageError(explain(f"noisy share from {agg}", ring.shape(theirs), f"({spec.width},)",
                                                f"check {agg}"))
        total = ring.add(total, theirs)
    out: npt.NDArray[np.float64] = spec.fmt.decode(total)
    return out
