"""One deployed party's connection to the others: a start-up handshake, then the algorithm's protocol runs.

A :class:`PartySession` owns the local party's :class:`~mpdp.runtime.grpc_transport.GrpcTransport`. It

1. waits until every peer answers over mutual TLS (a wrong certificate is an AuthenticationError naming the
   peer; a peer that never comes up, or accepts connections but never answers, a PartyUnavailableError after
   ``connect_timeout``; one that answers with bytes that are not TLS a MalformedMessageError);
2. exchanges the *shared configuration* with every peer (the algorithm, its budget and options, the schema,
   the party list and addresses: everything every party's file must agree on) and compares it with its own;
   a difference is a :class:`~mpdp.errors.ConfigMismatchError` naming the peer and the keys that differ. The
   exchange is the first frame between each pair and is not counted as protocol traffic (it is reported
   apart, as set-up). Each hello also carries a fresh nonce: the run's id (:attr:`PartySession.run_id`) is the
   shared section's ``"run"`` when it names one, else a digest of the configuration and every party's nonce,
   the same at every party and new for every execution;
3. runs the algorithm's protocol runs in order (:meth:`~mpdp.runtime.steps.StepSession.run`), each with a
   fresh :class:`~mpdp.runtime.comm.Comm` on the same connections, whose random source is ``root.spawn(party)``
   exactly as :func:`~mpdp.runtime.run_protocol` gives it in memory, and records each run's result and traffic;
   :attr:`PartySession.data_sent` says whether any protocol message has left this party since the handshake
   (what decides whether a run that fails has spent its budget);
4. tells every peer it finished (:meth:`finish`) or that it failed and why (:meth:`fail`), so no peer waits
   for it past that moment.

The runs are a :class:`~mpdp.runtime.steps.StepSession`'s, as in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from mpdp.errors import ConfigMismatchError, MalformedMessageError, explain
from mpdp.runtime.codec import DEFAULT_LIMITS, CodecLimits
from mpdp.runtime.grpc_transport import GrpcTransport
from mpdp.runtime.steps import StepSession

__all__ = ["PartySession", "canonical", "digest"]

_HELLO = b"mpdp/deploy-hello/v2\n"
_NONCE = 32  # hex digits of a hello's nonce


def canonical(shared: Mapping[str, Any]) -> bytes:
    """The shared configuration as canonical JSON bytes (sorted keys, no spaces)."""
    return json.dumps(shared, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def digest(shared: Mapping[str, Any]) -> str:
    """sha256 of :func:`canonical`: what two parties compare (and print) to show they agree."""
    return hashlib.sha256(canonical(shared)).hexdigest()


def _differences(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(mine) | set(theirs))
    return [k for k in keys if mine.get(k) != theirs.get(k)]


class PartySession(StepSession):
    """The local party's side of a deployment (see the module docstring)."""

    def __init__(self, transport: GrpcTransport, *, timeout: float, limits: CodecLimits = DEFAULT_LIMITS) -> None:
        super().__init__(transport.endpoint(transport.name), timeout=timeout, limits=limits)
        self.transport = transport
        self.setup_seconds = 0.0
        self.ready_at = 0.0  # wall-clock time (epoch seconds) the handshake completed: the first message may go
        #: the process's CPU seconds at that moment (interpreter, imports, its files, TLS): what start-up costs a
        #: party on a machine of its own, apart from waiting for the others
        self.ready_cpu = 0.0
        #: the run's id, agreed at the handshake (:meth:`start`)
        self.run_id = ""
        self._messages_at_start: int | None = None
        self._done = False

    @property
    def data_sent(self) -> bool:
        """Whether any protocol message has left this party (been handed to the transport) since the handshake.
        The session cannot tell which messages depend on the party's data, so it counts every one: a failed run
        is then charged whenever it could have released anything, never less."""
        return self._messages_at_start is not None and self.transport.messages_sent > self._messages_at_start

    def start(self, shared: Mapping[str, Any]) -> float:
        """Connect to every peer and check that all hold the same shared configuration; returns the seconds."""
        start = time.monotonic()
        self.transport.wait_ready()
        mine = canonical(shared)
        nonce = secrets.token_hex(_NONCE // 2).encode("ascii")
        endpoint = self.endpoint
        for peer in self.transport.peers:
            endpoint.send(peer, _HELLO + nonce + mine)
        nonces = {self.name: nonce}
        for peer in self.transport.peers:
            frame = endpoint.recv(peer, self.transport.connect_timeout)
            if not frame.startswith(_HELLO) or len(frame) < len(_HELLO) + _NONCE:
                raise MalformedMessageError(explain(
                    f"first message from {peer}", frame[:32], "the deployment handshake",
                    f"run the same mpdp version, as `mpdp party --config ...`, on {peer} and {self.name}"))
            nonces[peer] = frame[len(_HELLO):len(_HELLO) + _NONCE]
            body = frame[len(_HELLO) + _NONCE:]
            if body != mine:
                try:
                    theirs = json.loads(body)
                except ValueError:
                    theirs = {}
                keys = _differences(shared, theirs if isinstance(theirs, dict) else {})
                raise ConfigMismatchError(
                    f"{peer}'s configuration disagrees with {self.name}'s on {keys or ['(unreadable)']} "
                    f"(digest {hashlib.sha256(body).hexdigest()[:12]} at {peer}, {digest(shared)[:12]} here). "
                    f"Fix: give every party the same shared section (algorithm, parameters, schema, parties)")
        named = shared.get("run")
        self.run_id = named if isinstance(named, str) and named else hashlib.sha256(
            mine + b"".join(nonces[p] for p in sorted(nonces))).hexdigest()[:32]
        self._messages_at_start = self.transport.messages_sent
        self.setup_seconds = time.monotonic() - start
        self.ready_at = time.time()
        self.ready_cpu = time.process_time()
        return self.setup_seconds

    def finish(self) -> None:
        """Tell the peers this party is done, then close the connections (peers' last frames land first)."""
        if not self._done:
            self._done = True
            self.transport.party_finished(self.name)
            self.transport.close()

    def fail(self, exc: BaseException) -> None:
        """Tell every peer that this party failed and why, then close."""
        if not self._done:
            self._done = True
            with contextlib.suppress(Exception):
                self.transport.abort(f"{self.name} failed with {type(exc).__name__}: {exc}")
            self.transport.close()
