"""mpdp payloads in Flower messages, and one hub round: send to some nodes, collect replies by a deadline.

A Flower message carries one mpdp-codec blob (``RecordDict({"mpdp": ConfigRecord({"payload": bytes})})``):
never pickle, decoded strictly by :func:`mpdp.runtime.codec.decode`. A node's typed failure travels back as a
Flower :class:`~flwr.app.Error` whose reason is ``"<MpdpErrorClass>: <message>"``; :func:`raise_replied_error`
turns it into the same mpdp exception on the hub, naming the node's party.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flwr.app import ConfigRecord, Error, Message, RecordDict
from flwr.serverapp import Grid

from mpdp import errors
from mpdp.errors import MalformedMessageError, MpdpError, PartyUnavailableError, ProtocolAbortError, explain
from mpdp.runtime.codec import decode, encode

__all__ = [
    "ERROR_CODE",
    "Round",
    "error_reply",
    "exchange",
    "payload_of",
    "raise_replied_error",
    "reply",
    "wait_for_nodes",
]

#: Flower error code of a typed mpdp failure on a node.
ERROR_CODE = 4032
_KEY, _FIELD = "mpdp", "payload"


def _record(body: Any) -> RecordDict:
    return RecordDict({_KEY: ConfigRecord({_FIELD: encode(body)})})


def payload_of(message: Message) -> tuple[Any, int]:
    """The decoded body of an mpdp message and its size in bytes."""
    record = message.content.get(_KEY) if message.has_content() else None
    data = record.get(_FIELD) if isinstance(record, ConfigRecord) else None
    if not isinstance(data, bytes):
        raise MalformedMessageError(explain("Flower message", "no mpdp payload", "an mpdp-codec payload",
                                            "send it with mpdp.flower.messages"))
    return decode(data), len(data)


def reply(message: Message, body: Any) -> Message:
    """The reply to ``message`` carrying ``body``."""
    return Message(_record(body), reply_to=message)


def error_reply(message: Message, exc: MpdpError) -> Message:
    """The reply to ``message`` reporting the typed failure ``exc``."""
    return Message(Error(code=ERROR_CODE, reason=f"{type(exc).__name__}: {exc}"), reply_to=message)


def raise_replied_error(party: str, error: Error) -> None:
    """Raise the mpdp exception a node reported (its class when it is an mpdp error, else ProtocolAbortError)."""
    reason = error.reason or f"error code {error.code}"
    name, _, text = reason.partition(": ")
    cls = getattr(errors, name, None)
    if error.code == ERROR_CODE and isinstance(cls, type) and issubclass(cls, MpdpError):
        raise cls(f"{party}: {text}")
    raise ProtocolAbortError(f"{party} failed: {reason}")


@dataclass
class Round:
    """What one hub round brought back: bodies by party, parties that replied an error, traffic."""

    replies: dict[str, Any]
    failed: dict[str, Error]
    bytes_sent: dict[str, int]
    bytes_received: dict[str, int]
    seconds: float


def exchange(grid: Grid, nodes: Mapping[str, int], bodies: Mapping[str, Any], *, timeout: float,
             group: str) -> Round:
    """Send ``bodies[party]`` to each party's node and collect the replies that arrive within ``timeout`` s.

    A party whose reply misses the deadline is absent from both ``replies`` and ``failed`` (a dropout).
    """
    start = time.perf_counter()
    party_of = {node: party for party, node in nodes.items()}
    messages, sent = [], {}
    for party, body in bodies.items():
        record = _record(body)
        sent[party] = len(record[_KEY][_FIELD])  # type: ignore[arg-type, unused-ignore]
        messages.append(Message(record, dst_node_id=nodes[party], message_type="query", group_id=group))
    replies: dict[str, Any] = {}
    failed: dict[str, Error] = {}
    received: dict[str, int] = {}
    for message in grid.send_and_receive(messages, timeout=timeout):
        sender = party_of.get(message.metadata.src_node_id)
        if sender is None:
            continue
        party = sender
        if message.has_error():
            failed[party] = message.error
            continue
        try:
            replies[party], received[party] = payload_of(message)
        except MpdpError as exc:
            failed[party] = Error(code=ERROR_CODE, reason=f"{type(exc).__name__}: {exc}")
    return Round(replies, failed, sent, received, time.perf_counter() - start)


def wait_for_nodes(grid: Grid, count: int, *, timeout: float) -> list[int]:
    """The ids of the first ``count`` connected nodes, or :class:`PartyUnavailableError` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= count:
            return nodes
        if time.monotonic() > deadline:
            raise PartyUnavailableError(
                f"only {len(nodes)} of the {count} SuperNodes connected to the SuperLink within {timeout:g} s. "
                "Fix: start the missing flower-supernode processes (their --superlink address, TLS root "
                "certificate and node config), or lower the number of parties")
        time.sleep(0.2)
