"""What a failed call to a peer says about the peer: the network transport's failure kinds.

gRPC reports a failed call as a status code and a free-text detail from its C core. :func:`failure_kind` maps
the pair to what happened at the peer's address, so that the transport names it:

* ``REFUSED``: nothing listens there (connection refused, unreachable, unresolvable): the peer has not come
  up yet, or its process has ended;
* ``AUTHENTICATION``: a TLS handshake that completed far enough to see a certificate, and the certificate is
  not the party's (another CA, another name, or the peer refused ours): :class:`~mpdp.errors.AuthenticationError`;
* ``GARBLED``: the other end answers, but not with TLS or not with mpdp's service (random bytes, another
  protocol, another program on the port): :class:`~mpdp.errors.MalformedMessageError`;
* ``SILENT``: the other end accepts the TCP connection but the handshake or the call does not complete (a
  frozen process, e.g. SIGSTOP, an overloaded one, or a socket that never answers): the peer is unresponsive,
  and only a deadline tells (:class:`~mpdp.errors.PartyUnavailableError`);
* ``OTHER``: anything else (reported as it is).

The details are gRPC's own words and change between gRPC versions: the mapping errs towards ``SILENT`` (wait
and retry) for anything it does not recognise during a connection attempt, so an unknown wording delays an
error but never misnames a slow peer as an impostor.
"""

from __future__ import annotations

import threading
import time
from typing import Final

import grpc

from mpdp.errors import (
    AuthenticationError,
    MalformedMessageError,
    MpdpError,
    PartyUnavailableError,
    ProtocolAbortError,
    explain,
)

__all__ = ["AUTHENTICATION", "GARBLED", "OTHER", "REFUSED", "SILENT", "PeerHealth", "failure_kind"]

REFUSED: Final = "refused"
AUTHENTICATION: Final = "authentication"
GARBLED: Final = "garbled"
SILENT: Final = "silent"
OTHER: Final = "other"

_REFUSED = ("connection refused", "failed to connect to remote host", "no route to host", "network is unreachable",
            "dns resolution failed", "name resolution", "address not available", "connection reset by peer")
#: bytes that are not TLS (checked first: OpenSSL's text for them may also mention a certificate context)
_NOT_TLS = ("wrong_version_number", "packet_length_too_long", "record_layer", "decode_error", "unexpected_record",
            "http_request", "http_response", "bad_record", "record_overflow", "unexpected eof", "protocol error",
            "frame size", "invalid frame", "http2")
_CERTIFICATE = ("certificate_verify_failed", "certificate verify failed", "hostname verification", "peer name",
                "unauthenticated", "unknown_ca", "unknown ca", "bad_certificate", "certificate_required",
                "certificate_unknown", "self signed", "self-signed", "local issuer", "x509", "certificate has expired")
#: a TLS failure of no more precise kind: the peer speaks something, but not the handshake mpdp expects
_TLS_OTHER = ("tls handshake failed", "ssl_error_ssl", "tsi_protocol_failure")
_SILENT = ("handshake read failed", "endpoint closing", "socket closed", "deadline", "timed out", "timeout",
           "handshake shutdown")


def failure_kind(code: grpc.StatusCode | None, details: str) -> str:
    """The kind of a failed call with status ``code`` and gRPC's ``details`` (see the module docstring)."""
    text = details.lower()
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return AUTHENTICATION
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return SILENT
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return GARBLED  # a gRPC server, but not mpdp's service
    if code != grpc.StatusCode.UNAVAILABLE:
        return OTHER
    if any(hint in text for hint in _REFUSED):
        return REFUSED
    if any(hint in text for hint in _NOT_TLS):
        return GARBLED
    if any(hint in text for hint in _CERTIFICATE):
        return AUTHENTICATION
    if any(hint in text for hint in _TLS_OTHER):
        return GARBLED
    return SILENT


class PeerHealth:
    """What the local party has seen of each peer, and what a failed call to one means (thread-safe).

    A peer has *come up* once it answered a call, called us, or accepted a TCP connection (any failure other than
    ``REFUSED``). :meth:`failure` turns a failed call into a typed error, or None while it is worth retrying:

    * ``AUTHENTICATION`` / ``GARBLED``: once such failures have lasted ``tls_grace`` seconds (a handshake cut
      short on a loaded host can look odd once; a wrong certificate or a foreign service fails every attempt),
      at once for an explicit refusal of our certificate (PERMISSION_DENIED);
    * ``REFUSED``: a peer that had come up and has refused connections for ``death_grace`` seconds died; one
      that never came up is reported once ``connect_timeout`` has passed since ``started``;
    * ``SILENT``: never by itself (a frozen peer stays frozen: the caller's deadline decides, naming it with
      :meth:`unanswered`).
    """

    def __init__(self, name: str, addresses: dict[str, str], *, connect_timeout: float, started: float,
                 death_grace: float = 1.5, tls_grace: float = 2.0) -> None:
        self.name, self.addresses = name, addresses
        self.connect_timeout, self.started = connect_timeout, started
        self.death_grace, self.tls_grace = death_grace, tls_grace
        self._lock = threading.Lock()
        self._came_up: set[str] = set()
        self._silent: dict[str, str] = {}  # peer -> what its last unanswered attempt said
        self._refused_since: dict[str, float] = {}
        self._failing_since: dict[tuple[str, str], float] = {}  # (peer, kind) -> first seen

    def alive(self, peer: str) -> None:
        """``peer`` answered a call or called us."""
        with self._lock:
            self._came_up.add(peer)
            self._silent.pop(peer, None)
            self._refused_since.pop(peer, None)
            for kind in (AUTHENTICATION, GARBLED):
                self._failing_since.pop((peer, kind), None)

    def came_up(self, peer: str) -> bool:
        with self._lock:
            return peer in self._came_up

    def is_silent(self, peer: str) -> bool:
        with self._lock:
            return peer in self._silent

    def failure(self, peer: str, code: grpc.StatusCode | None, detail: str) -> MpdpError | None:
        """A typed error for a failed call to ``peer`` (status ``code``, gRPC's ``detail``), or None to retry."""
        kind, address, now = failure_kind(code, detail), self.addresses[peer], time.monotonic()
        with self._lock:
            if kind != REFUSED:
                self._came_up.add(peer)  # something accepted the connection
                self._refused_since.pop(peer, None)
            if kind == SILENT:
                self._silent[peer] = detail[-160:]
            else:
                self._silent.pop(peer, None)
            since = self._failing_since.setdefault((peer, kind), now)
            came_up = peer in self._came_up
            refused_since = self._refused_since.setdefault(peer, now) if kind == REFUSED else now
        if kind in (AUTHENTICATION, GARBLED):
            if now - since < self.tls_grace and code != grpc.StatusCode.PERMISSION_DENIED:
                return None
            if kind == AUTHENTICATION:
                return AuthenticationError(
                    f"{self.name} could not authenticate with {peer} at {address}: {detail}. Fix: give every party "
                    f"a certificate from the same `mpdp certs` run, naming the party ({peer!r} must present "
                    f"{peer}.pem), and check the address belongs to {peer}")
            return MalformedMessageError(explain(
                f"what answers at {peer}'s address {address}", detail[-200:], "mpdp's transport over mutual TLS",
                f"check that {address} is {peer}'s `mpdp party` and not another program on that port"))
        if kind == REFUSED:
            if came_up and now - refused_since > self.death_grace:
                return PartyUnavailableError(
                    f"{self.name} cannot reach {peer} at {address}: it was listening and stopped answering: its "
                    f"process died or its network went away ({detail}). Fix: check that party's process, then rerun")
            if not came_up and now - self.started > self.connect_timeout:
                return PartyUnavailableError(
                    f"{self.name} cannot reach {peer} at {address}: it never came up within "
                    f"{self.connect_timeout:g} s ({detail}). Fix: start that party, or correct its address")
            return None
        if kind == SILENT:
            return None
        return ProtocolAbortError(f"{self.name} failed to talk to {peer} at {address}: {detail}")

    def unanswered(self, peer: str) -> str:
        """Why ``peer`` has not answered, from what its connection attempts showed."""
        with self._lock:
            silent, came_up = self._silent.get(peer), peer in self._came_up
        if silent is not None and "socket closed" in silent.lower():
            return ("accepts connections but closes them in the TLS handshake (it may refuse this party's "
                    f"certificate, e.g. one of another CA, or be shutting down: {silent})")
        if silent is not None:
            return f"accepts connections but does not answer (frozen, e.g. stopped, or overloaded: {silent})"
        if came_up:
            return "was listening and stopped answering: its process died or its network went away"
        return "never came up (nothing listens there)"
