"""Secret-shared fixed-point computation (the MPC engine): sessions, shared values, dealer, functions.

Pure maths (rings, fixed-point formats, sharing, correlation algebra) lives in :mod:`mpdp.crypto`; this
package is the interactive part, run by parties exchanging messages through :class:`~mpdp.runtime.Comm`:

* :class:`MPCSession` – a computing party's context (comm, parties, provider, default format);
* :class:`SharedFixedPoint` – an array of shared fixed-point numbers with numpy-like operators;
* :class:`CorrelationProvider` / :class:`TripleSource` – the pluggable source of Beaver triples and other
  correlations; :class:`TrustedDealer` + :class:`DealerProvider` implement it with a dealer party;
* :mod:`~mpdp.protocols.mpc.arithmetic` – products, truncation, ring conversion, split multiplication, and
  products with a matrix one party holds in the clear (:func:`~mpdp.protocols.mpc.arithmetic.matmul_owned`).
"""

from mpdp.protocols.mpc.dealer import DealerProvider, TrustedDealer
from mpdp.protocols.mpc.provider import (
    BeaverTriple,
    BitTriple,
    CompareMask,
    CorrelationProvider,
    DaBit,
    SquarePair,
    TripleSource,
    WithTriplesFrom,
    WrapMask,
)
from mpdp.protocols.mpc.session import MPCSession
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = [
    "BeaverTriple",
    "BitTriple",
    "CompareMask",
    "CorrelationProvider",
    "DaBit",
    "DealerProvider",
    "MPCSession",
    "SharedFixedPoint",
    "SquarePair",
    "TripleSource",
    "TrustedDealer",
    "WithTriplesFrom",
    "WrapMask",
]
