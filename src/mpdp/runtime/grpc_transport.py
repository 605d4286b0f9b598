"""The network transport: one party per process, bytes over gRPC with mutual TLS (extra ``net``).

Every party runs a small gRPC server at its own address and holds a client channel to every peer. A message
is *pushed*: the sender calls the receiver's ``Deliver`` method with the bytes :class:`~mpdp.runtime.comm.Comm`
produced (no protobuf, no pickle: requests and responses are raw bytes, framed below), and the receiver's
server puts them in the inbox its protocol code reads with ``recv``. Sends are asynchronous gRPC calls; every
frame carries a per-pair number and the receiver restores the order (refusing replayed or far-off numbers), so
per-pair order holds exactly as in memory; the same protocol code, seed and inputs give the same results *and*
the same byte, message and round counts as :class:`~mpdp.runtime.transport.InMemoryTransport`.

Identity is the TLS certificate (see :mod:`mpdp.runtime.certs`): a server takes the sender's name from the
common name of the client certificate the handshake verified, never from the message, and a client dials a
peer with the TLS target name set to that peer's name, so a process holding another party's certificate (or
one from another CA) is refused with :class:`~mpdp.errors.AuthenticationError` naming the party.

Failures never hang, and are named for what happened at the peer's address
(:mod:`mpdp.runtime.grpc_failures`):

* nothing listens there: a peer that never comes up is a :class:`~mpdp.errors.PartyUnavailableError`
  ("never came up") after ``connect_timeout``; one that had been listening (it answered, its TLS handshake
  started, or it called us) and now refuses connections died ("was listening"), within about ``health.death_grace`` s;
* something answers, but not mpdp's TLS service (random bytes, another program on the port):
  :class:`~mpdp.errors.MalformedMessageError`;
* a certificate that is not the party's (another CA, another name, or the peer refused ours):
  :class:`~mpdp.errors.AuthenticationError` naming the party;
* the peer accepts connections but does not complete a handshake or a call (frozen, e.g. SIGSTOP, or
  overloaded): PartyUnavailableError ("accepts connections but does not answer") once ``connect_timeout``
  passes before it ever answered, or once a receive from it times out;
* a peer whose protocol code failed sends ``ABORT`` to everyone, whose pending receive then fails at once
  with :class:`~mpdp.errors.ProtocolAbortError` quoting the reason; a peer that finished normally sends
  ``FINISHED``, so waiting for another message from it fails at once, as in memory.

Frames (kind byte, then the frame's number per sender-receiver pair as u64 little-endian, then the payload)::

    0x01 DATA_MORE chunk      0x02 DATA_END chunk      (a message larger than ``max_chunk`` spans frames)
    0x03 ABORT utf-8 reason   0x04 FINISHED

A transport object serves exactly one protocol run of one local party (create a new one per run).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any

import grpc

from mpdp.errors import (
    AuthenticationError,
    MalformedMessageError,
    MpdpError,
    ParameterError,
    PartyUnavailableError,
    ProtocolAbortError,
    explain,
)
from mpdp.runtime.certs import PartyCredentials, certificate_name, check_party_name
from mpdp.runtime.codec import DEFAULT_LIMITS
from mpdp.runtime.grpc_failures import PeerHealth
from mpdp.runtime.transport import Endpoint, Transport

__all__ = ["GrpcTransport"]

_SERVICE = "mpdp.Transport"
_DATA_MORE, _DATA_END, _ABORT, _FINISHED = 1, 2, 3, 4
_GRPC_MAX = (1 << 31) - 1


def _code(error: grpc.RpcError) -> grpc.StatusCode | None:
    return error.code() if isinstance(error, grpc.Call) else None


def _details(error: grpc.RpcError) -> str:
    text = (error.details() or "") if isinstance(error, grpc.Call) else str(error)
    return text.removeprefix("failed to connect to all addresses; last error: ")


class GrpcTransport(Transport):
    """The local party's side of a gRPC/mTLS network of parties.

    Parameters
    ----------
    name:
        The local party (must be a key of ``addresses`` and the common name of ``credentials.cert``).
    addresses:
        Party name -> ``host:port``, for every party, in the protocol's canonical order (the same on all).
    credentials:
        The local party's CA certificate, certificate and key (PEM files).
    connect_timeout:
        Seconds to wait for a peer that has never answered (it may start later than us).
    send_timeout:
        Seconds one frame may take to be accepted by a live peer before it counts as stalled.
    linger:
        Seconds ``close`` keeps the server up waiting for peers to finish, so their last messages land.
    max_chunk:
        Largest frame payload; longer messages are split (gRPC caps a message at 2 GiB).
    max_buffered:
        Most bytes a peer may have held here at once in frames not yet delivered as a whole message (pieces of an
        unfinished message, frames ahead of their turn); default the codec's longest message. A peer beyond it
        is refused (:class:`~mpdp.errors.MalformedMessageError` naming it) instead of exhausting our memory.
    """

    def __init__(self, name: str, addresses: Mapping[str, str], credentials: PartyCredentials, *,
                 connect_timeout: float = 30.0, send_timeout: float = 120.0, linger: float = 2.0,
                 max_chunk: int = 1 << 26, max_buffered: int = DEFAULT_LIMITS.max_bytes) -> None:
        self.parties = tuple(check_party_name(p) for p in addresses)
        if len(set(self.parties)) != len(self.parties) or len(self.parties) < 2:
            raise ParameterError(explain("addresses", dict(addresses), "two or more distinct parties",
                                         "list every party once with its host:port"))
        if name not in self.parties:
            raise ParameterError(explain("name", name, f"one of {self.parties}", "use a configured party name"))
        for label, value in (("connect_timeout", connect_timeout), ("send_timeout", send_timeout)):
            if not value > 0:
                raise ParameterError(explain(label, value, "a number of seconds > 0", f"pass e.g. {label}=30"))
        if not 1 <= max_chunk < _GRPC_MAX - 16:
            raise ParameterError(explain("max_chunk", max_chunk, "1 .. 2^31 - 17 bytes", "pass e.g. 1 << 26"))
        self.name = name
        self.addresses = dict(addresses)
        self.peers = tuple(p for p in self.parties if p != name)
        self.connect_timeout = float(connect_timeout)
        self.send_timeout = float(send_timeout)
        self.linger = float(linger)
        self.max_chunk = int(max_chunk)
        if type(max_buffered) is not int or max_buffered < max_chunk:
            raise ParameterError(explain("max_buffered", max_buffered, f"an int >= max_chunk ({max_chunk})",
                                         "pass at least the longest message a peer may send"))
        self.max_buffered = max_buffered
        self._buffered: dict[str, int] = {}  # peer -> bytes held in early frames and unfinished messages
        self._started = time.monotonic()

        self._cond = threading.Condition()
        self._inbox: dict[str, deque[bytes]] = {p: deque() for p in self.peers}
        self._partial: dict[str, list[bytes]] = {p: [] for p in self.peers}
        self._finished_peers: set[str] = set()
        self._aborted_peers: dict[str, str] = {}
        self._peer_errors: dict[str, MpdpError] = {}
        self.health = PeerHealth(name, self.addresses, connect_timeout=self.connect_timeout, started=self._started)
        self._local_abort: str | None = None
        self._closed = False
        self.messages_sent = 0  #: messages handed to the network so far (every frame of one counts once)
        self.absent: tuple[str, ...] = ()  #: peers found absent at start-up (:meth:`wait_quorum`)

        ca, cert, key = credentials.read()
        holder = certificate_name(cert)
        if holder != name:
            raise AuthenticationError(
                explain(f"certificate of {name}", f"{credentials.cert} (issued to {holder!r})",
                        f"a certificate whose common name is {name!r}",
                        f"point the configuration of {name} at {name}.pem and {name}.key")
            )
        options = [
            ("grpc.max_send_message_length", _GRPC_MAX),
            ("grpc.max_receive_message_length", _GRPC_MAX),
        ]
        self._executor = futures.ThreadPoolExecutor(max_workers=max(4, 2 * len(self.peers)))
        self._server = grpc.server(self._executor, options=options)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(_SERVICE, {
            "Deliver": grpc.unary_unary_rpc_method_handler(self._on_deliver),
            "Ping": grpc.unary_unary_rpc_method_handler(self._on_ping),
        }),))
        server_credentials = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                                         require_client_auth=True)
        try:
            port = self._server.add_secure_port(self.addresses[name], server_credentials)
        except RuntimeError as exc:  # grpc raises RuntimeError when it cannot bind
            raise ParameterError(explain(f"address of {name}", self.addresses[name], "a free host:port to listen on",
                                         "choose another port, or stop the process holding it")) from exc
        if port == 0:
            raise ParameterError(explain(f"address of {name}", self.addresses[name], "a free host:port to listen on",
                                         "choose another port, or stop the process holding it"))
        # Frames carry a per-pair number: sends are asynchronous gRPC futures (no extra thread hop), and the
        # receiver puts frames back in order before acting on them. Set up before the server starts: a peer
        # that is already running may deliver its first frame at once.
        self._send_lock = threading.Lock()
        self._next_out: dict[str, int] = dict.fromkeys(self.peers, 0)
        self._next_in: dict[str, int] = dict.fromkeys(self.peers, 0)
        self._early: dict[str, dict[int, tuple[int, bytes]]] = {p: {} for p in self.peers}
        self._pending: dict[Any, str] = {}  # future -> peer
        self._server.start()

        channel_credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                           certificate_chain=cert)
        self._channels: dict[str, grpc.Channel] = {}
        self._deliver: dict[str, Any] = {}
        self._ping: dict[str, Callable[..., Any]] = {}
        for peer in self.peers:
            channel = grpc.secure_channel(self.addresses[peer], channel_credentials, options=[
                *options,
                ("grpc.ssl_target_name_override", peer),
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 500),
            ])
            self._channels[peer] = channel
            self._deliver[peer] = channel.unary_unary(f"/{_SERVICE}/Deliver")
            self._ping[peer] = channel.unary_unary(f"/{_SERVICE}/Ping")

    # -- Transport interface --------------------------------------------------------------------------------
    def endpoint(self, name: str) -> Endpoint:
        if name != self.name:
            raise ParameterError(explain("party", name, f"the local party {self.name!r}",
                                         "a network transport serves only the party of its own process"))
        return _GrpcEndpoint(self)

    def abort(self, reason: str) -> None:
        """Tell every peer that this party failed, so their pending receives fail at once."""
        with self._cond:
            if self._local_abort is None:
                self._local_abort = reason
            self._cond.notify_all()
        payload = reason.encode("utf-8", "replace")[:4000]
        for peer in self.peers:
            self._post(peer, _ABORT, payload, timeout=2.0)

    def party_finished(self, name: str) -> None:
        if name == self.name:
            for peer in self.peers:
                self._post(peer, _FINISHED, b"", timeout=2.0)

    # -- readiness ------------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float | None = None) -> float:
        """Block until every peer answers a ping over mutual TLS; returns the seconds it took.

        Raises AuthenticationError or MalformedMessageError (naming the peer) as soon as a peer shows a wrong
        certificate or speaks something else than mpdp's TLS service; PartyUnavailableError naming every peer
        that has not answered within ``timeout`` (default ``connect_timeout``), and why.
        """
        start = time.monotonic()
        deadline = start + (self.connect_timeout if timeout is None else timeout)
        waiting = self._poll_peers(deadline)
        if waiting:
            missing = "; ".join(f"{peer} at {self.addresses[peer]}, which {self.health.unanswered(peer)}"
                                for peer in waiting)
            raise PartyUnavailableError(
                f"{self.name} got no answer within {deadline - start:g} s from {missing}. Fix: start that party "
                "(mpdp party --config ...), check its address, or wake or restart a frozen process")
        return time.monotonic() - start

    def _poll_peers(self, deadline: float) -> list[str]:
        """Ping every peer until all answer or ``deadline`` (monotonic) passes; the peers that never answered.
        A peer that already aborted ends the wait at once (ProtocolAbortError): waiting for the others serves
        nothing."""
        waiting = list(self.peers)
        while waiting:
            waiting = [peer for peer in waiting if not self._answers(peer)]
            with self._cond:
                aborted = next(iter(self._aborted_peers.items()), None)
            if aborted is not None:
                raise ProtocolAbortError(f"{self.name} stopped waiting: {aborted[0]} aborted ({aborted[1]})")
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return waiting

    def wait_quorum(self, optional: Mapping[str, int], max_absent: int,
                    timeout: float | None = None) -> tuple[str, ...]:
        """:meth:`wait_ready`, except that peers of ``optional`` (name -> how many clients it stands for) may be
        absent: after ``timeout`` (default ``connect_timeout``) the ones that never answered are absent, up to
        ``max_absent`` clients in all. Returns the absent peers (also :attr:`absent`), each marked unavailable so
        a receive from it fails at once and nothing is sent to it. A required peer that never answered, or more
        absent clients than ``max_absent``, is a PartyUnavailableError naming them."""
        start = time.monotonic()
        deadline = start + (self.connect_timeout if timeout is None else timeout)
        waiting = self._poll_peers(deadline)
        required = [p for p in waiting if p not in optional]
        missing = sum(int(optional[p]) for p in waiting if p in optional)
        if required or missing > max_absent:
            why = f"required {required}" if required else \
                f"{missing} absent clients ({', '.join(waiting)}), more than the {max_absent} tolerated"
            missing_text = "; ".join(f"{peer} at {self.addresses[peer]}, which {self.health.unanswered(peer)}"
                                     for peer in waiting)
            raise PartyUnavailableError(
                f"{self.name} got no answer within {deadline - start:g} s from {', '.join(waiting)} ({why}): "
                f"{missing_text}. Fix: start those parties (mpdp party --config ...), check their addresses, or "
                "raise max_dropouts if a smaller aggregate is acceptable")
        with self._cond:
            for peer in waiting:
                self._peer_errors.setdefault(peer, PartyUnavailableError(
                    f"{peer} at {self.addresses[peer]} was absent when {self.name} started (it "
                    f"{self.health.unanswered(peer)}); the run goes on without it"))
            self._cond.notify_all()
        self.absent = tuple(waiting)
        return self.absent

    def _answers(self, peer: str) -> bool:
        """:meth:`_probe` for :meth:`wait_ready`, which names every peer that never came up at its own deadline
        (a peer that came up and died is reported at once)."""
        try:
            return self._probe(peer)
        except PartyUnavailableError as exc:
            if self.health.came_up(peer):
                raise
            with self._cond:
                if self._peer_errors.get(peer) is exc:
                    del self._peer_errors[peer]
            return False

    # -- server side ----------------------------------------------------------------------------------------
    def _sender_of(self, context: grpc.ServicerContext) -> str:
        auth = context.auth_context()
        names = [n.decode("utf-8", "replace") for n in auth.get("x509_common_name", [])]
        sender = names[0] if names else ""
        if sender not in self.peers:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"{self.name} refuses a connection whose certificate names {sender!r}, "
                          f"not one of its peers {self.peers}")
        return sender

    def _on_ping(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        self.health.alive(self._sender_of(context))
        return self.name.encode()

    def _on_deliver(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        sender = self._sender_of(context)
        if len(request) < 9 or request[0] not in (_DATA_MORE, _DATA_END, _ABORT, _FINISHED):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed frame")
        kind, number, payload = request[0], int.from_bytes(request[1:9], "little"), request[9:]
        with self._cond:
            if number < self._next_in[sender] or number in self._early[sender] \
                    or number > self._next_in[sender] + (1 << 20):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"frame #{number} replayed or out of range")
            held = self._buffered.get(sender, 0) + len(payload)
            if held > self.max_buffered:
                self._peer_errors.setdefault(sender, MalformedMessageError(explain(
                    f"frames from {sender}", f"{held} bytes held before a whole message",
                    f"at most max_buffered = {self.max_buffered} bytes",
                    f"check {sender}'s software, or raise max_buffered if its messages are legitimately longer")))
                self._cond.notify_all()
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"more than {self.max_buffered} bytes buffered")
            self._buffered[sender] = held
            self._early[sender][number] = (kind, payload)
            while self._next_in[sender] in self._early[sender]:
                k, body = self._early[sender].pop(self._next_in[sender])
                self._next_in[sender] += 1
                if k == _DATA_END:  # a whole message leaves the buffer
                    self._buffered[sender] -= len(body) + sum(len(part) for part in self._partial[sender])
                elif k != _DATA_MORE:
                    self._buffered[sender] -= len(body)
                self._apply(sender, k, body)
            self._cond.notify_all()
        self.health.alive(sender)
        return b""

    def _apply(self, sender: str, kind: int, payload: bytes) -> None:
        """Act on the next in-order frame from ``sender`` (called with the lock held)."""
        if kind == _DATA_MORE:
            self._partial[sender].append(payload)
        elif kind == _DATA_END:
            parts = self._partial[sender]
            self._inbox[sender].append(b"".join((*parts, payload)) if parts else payload)
            parts.clear()
        elif kind == _ABORT:
            self._aborted_peers[sender] = payload.decode("utf-8", "replace")
        else:
            self._finished_peers.add(sender)

    # -- client side ----------------------------------------------------------------------------------------
    def _probe(self, peer: str) -> bool:
        """One ping; True if ``peer`` answered. Raises a typed error for a definite failure."""
        try:
            self._ping[peer](b"", timeout=1.0)
        except grpc.RpcError as error:
            failure = self.health.failure(peer, _code(error), _details(error))
            if failure is not None:
                with self._cond:
                    self._peer_errors.setdefault(peer, failure)
                raise failure from None
            return False
        self.health.alive(peer)
        return True

    def _post(self, peer: str, kind: int, payload: bytes | memoryview, *, timeout: float) -> None:
        """Send one numbered frame to ``peer`` asynchronously; a failure is recorded against the peer."""
        with self._send_lock:
            number = self._next_out[peer]
            self._next_out[peer] = number + 1
            frame = bytes([kind]) + number.to_bytes(8, "little") + bytes(payload)
            future = self._deliver[peer].future(frame, timeout=timeout, wait_for_ready=True)
            self._pending[future] = peer
        control = kind in (_ABORT, _FINISHED)

        def done(f: Any) -> None:
            with self._send_lock:
                self._pending.pop(f, None)
            error = f.exception()
            if error is None:
                self.health.alive(peer)
                return
            if control or not isinstance(error, grpc.RpcError):
                return
            with self._cond:
                if peer in self._finished_peers:
                    return
            failure = self.health.failure(peer, _code(error), _details(error)) or PartyUnavailableError(
                f"{peer} at {self.addresses[peer]} did not accept a message from {self.name} within {timeout:g} s: "
                f"it {self.health.unanswered(peer)}. Fix: check that party, or raise the timeout if it is "
                "legitimately slow")
            with self._cond:
                self._peer_errors.setdefault(peer, failure)
                self._cond.notify_all()

        future.add_done_callback(done)

    # -- endpoint operations ------------------------------------------------------------------------------
    def _send(self, dst: str, data: bytes) -> None:
        if dst not in self.peers:
            raise ParameterError(explain("destination", dst, f"a peer of {self.name}: {self.peers}",
                                         "send to a peer by its name"))
        with self._cond:
            if self._local_abort is not None:
                raise ProtocolAbortError(f"{self.name} cannot send to {dst}: protocol aborted ({self._local_abort})")
            error = self._peer_errors.get(dst)
        if error is not None:
            raise error
        with self._cond:
            if dst in self._finished_peers:
                return  # it will read nothing more, as in memory
            self.messages_sent += 1
        view = memoryview(data)
        for start in range(0, max(len(view), 1), self.max_chunk):
            last = start + self.max_chunk >= len(view)
            self._post(dst, _DATA_END if last else _DATA_MORE, view[start:start + self.max_chunk],
                       timeout=self.send_timeout)

    def _recv(self, src: str, timeout: float) -> bytes:
        if src not in self.peers:
            raise ParameterError(explain("source", src, f"a peer of {self.name}: {self.peers}",
                                         "receive from a peer by its name"))
        deadline = time.monotonic() + timeout
        next_probe = time.monotonic() + 1.0
        while True:
            with self._cond:
                inbox = self._inbox[src]
                if inbox:
                    return inbox.popleft()
                if src in self._aborted_peers:
                    raise ProtocolAbortError(f"{self.name} stopped waiting for {src}: {src} aborted the protocol "
                                             f"({self._aborted_peers[src]})")
                if self._local_abort is not None:
                    raise ProtocolAbortError(f"{self.name} stopped waiting for {src}: {self._local_abort}")
                if src in self._finished_peers:
                    raise ProtocolAbortError(
                        f"{self.name} waits for a message from {src}, but {src} has finished its part of the protocol"
                    )
                error = self._peer_errors.get(src)
                if error is not None:
                    raise error
                now = time.monotonic()
                if now >= deadline:
                    how = self.health.unanswered(src) if self.health.is_silent(src) else "has stopped answering"
                    raise PartyUnavailableError(
                        f"{self.name} received nothing from {src} within {timeout:g} s; {src} {how}. Fix: check "
                        "that party, or raise the timeout if it is legitimately slow"
                    )
                if now < next_probe:
                    self._cond.wait(min(deadline, next_probe) - now)
                    continue
            next_probe = time.monotonic() + 0.25
            self._probe(src)

    def close(self) -> None:
        """Deliver what is queued, wait up to ``linger`` s for peers to finish, then stop serving."""
        if self._closed:
            return
        self._closed = True
        # after a local failure only the ABORT frames matter (they time out by themselves after 2 s)
        deadline = time.monotonic() + (self.send_timeout if self._local_abort is None else 2.5)
        with self._send_lock:
            pending = list(self._pending.items())
        for future, peer in pending:
            while not future.done():
                with self._cond:
                    hopeless = peer in self._peer_errors or (peer in self._aborted_peers and self._local_abort is None)
                if hopeless or time.monotonic() > deadline:
                    future.cancel()
                    break
                with contextlib.suppress(grpc.FutureTimeoutError, grpc.FutureCancelledError):
                    future.exception(timeout=min(0.5, max(0.0, deadline - time.monotonic())))
                with contextlib.suppress(MpdpError):  # a peer found dead or foreign makes its frames hopeless
                    if not future.done():
                        self._probe(peer)
        deadline = time.monotonic() + (0.0 if self._local_abort is not None else self.linger)
        with self._cond:
            while time.monotonic() < deadline and not all(
                p in self._finished_peers or p in self._aborted_peers or p in self._peer_errors for p in self.peers
            ):
                self._cond.wait(max(0.0, deadline - time.monotonic()))
        self._server.stop(grace=0.2).wait(1.0)
        # the server does not own its executor: without this its idle worker threads outlive the transport until
        # garbage collection (a later fork in the process, e.g. a forked party, would copy them); not waited for,
        # so that a handler stuck past the grace period cannot hang close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for channel in self._channels.values():
            channel.close()

    def __enter__(self) -> GrpcTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _GrpcEndpoint(Endpoint):
    def __init__(self, transport: GrpcTransport) -> None:
        self._transport = transport
        self.name = transport.name

    def send(self, dst: str, data: bytes) -> None:
        self._transport._send(dst, data)

    def recv(self, src: str, timeout: float) -> bytes:
        return self._transport._recv(src, timeout)

    def close(self) -> None:
        self._transport.close()
