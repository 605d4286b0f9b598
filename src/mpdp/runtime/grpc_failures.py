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

from typing import Final

import grpc

__all__ = ["AUTHENTICATION", "GARBLED", "OTHER", "REFUSED", "SILENT", "failure_kind"]

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
