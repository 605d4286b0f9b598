"""Parties, channels, transports and the wire codec. Knows nothing of cryptography or privacy.

:func:`run_protocol` runs every party's role as a thread over the in-memory transport, with
``cooperative=True`` as greenlets of the calling thread switched at receives (:mod:`mpdp.runtime.cooperative`),
or with ``processes=True`` each in its own forked OS process (:mod:`mpdp.runtime.processes`) over socketpairs;
``cooperative=True, forked=(...)`` forks the parties named and runs the others as greenlets (:mod:`mpdp.runtime.mixed`).

Security: with threads (or greenlets) all parties share one address space (a simulation: the roles are trusted not to
reach into each other's objects). With processes each party's state lives in its own address space after the
fork; it reaches the others only through its sockets. The parent built every role, so it held their inputs
before the fork, and afterwards sees each party's result, its failure (type, message, traceback) and its
traffic counts, never the messages. A deployment across machines uses the network transport
(:mod:`mpdp.runtime.grpc_transport`).
"""

from mpdp.runtime.codec import CodecLimits, decode, encode
from mpdp.runtime.comm import Comm, PartyTraffic
from mpdp.runtime.cooperative import CooperativeTransport
from mpdp.runtime.party import Party, ProtocolRun, run_party, run_protocol
from mpdp.runtime.transport import Endpoint, InMemoryTransport, Transport

__all__ = [
    "CodecLimits",
    "Comm",
    "CooperativeTransport",
    "Endpoint",
    "InMemoryTransport",
    "Party",
    "PartyTraffic",
    "ProtocolRun",
    "Transport",
    "decode",
    "encode",
    "run_party",
    "run_protocol",
]
