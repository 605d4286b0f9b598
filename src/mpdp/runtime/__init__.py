"""Parties, channels, transports and the wire codec. Knows nothing of cryptography or privacy."""

from mpdp.runtime.codec import CodecLimits, decode, encode
from mpdp.runtime.comm import Comm, PartyTraffic
from mpdp.runtime.party import Party, ProtocolRun, run_party, run_protocol
from mpdp.runtime.transport import Endpoint, InMemoryTransport, Transport

__all__ = [
    "CodecLimits",
    "Comm",
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
