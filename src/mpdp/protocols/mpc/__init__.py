"""Secret-shared fixed-point computation (the MPC engine): sessions, shared values, dealer, functions.

Pure maths (rings, fixed-point formats, sharing, correlation algebra) lives in :mod:`mpdp.crypto`; this
package is the interactive part, run by parties exchanging messages through :class:`~mpdp.runtime.Comm`.

Layers
------
Each module imports only modules listed before it (and :mod:`mpdp.crypto`, :mod:`mpdp.runtime`):

1. Correlated randomness. :mod:`~mpdp.protocols.mpc.provider`: the :class:`CorrelationProvider` interface
   (and :class:`TripleSource`, :class:`WithTriplesFrom`) and the correlations it deals;
   :mod:`~mpdp.protocols.mpc.dealer`: :class:`TrustedDealer` and its client :class:`DealerProvider`;
   :mod:`~mpdp.protocols.mpc.he_triples`: Paillier triples without a dealer;
   :mod:`~mpdp.protocols.mpc.planning`: a provider that fetches a repeated block's correlations at once.
2. :mod:`~mpdp.protocols.mpc.channel`: :class:`~mpdp.protocols.mpc.channel.Channel`, what every operation
   needs of a party's session (the computing parties, the provider, sharing ids, the openings), and the
   public-bound check.
3. :mod:`~mpdp.protocols.mpc.tensor`: :class:`SharedFixedPoint`, an array of this party's shares with a
   public bound, and its local operations (``+``, ``-``, public scalings, ``sum``, indexing, reshaping,
   ``concatenate``, ``stack``) and openings (``reveal``).
4. :mod:`~mpdp.protocols.mpc.arithmetic`: products (Beaver, squares, split products, products with a
   matrix one party holds in the clear: :func:`~mpdp.protocols.mpc.arithmetic.matmul_owned`,
   :func:`~mpdp.protocols.mpc.arithmetic.mul_owned`), truncation, ring conversion.
5. :mod:`~mpdp.protocols.mpc.fss_compare`: one-round ``[x < 0]`` and many-threshold comparison from the
   dealer's DCF keys (function secret sharing, two computing parties; ``MPCSession(comparisons="fss")``);
   :mod:`~mpdp.protocols.mpc.comparison`: ``[x < 0]`` (the carry circuit, or the FSS one when the session
   asks for it) and what it enables (sign, ReLU, select, maximum, clip); :mod:`~mpdp.protocols.mpc.bits`: bit
   decomposition and many-threshold comparison.
6. :mod:`~mpdp.protocols.mpc.functions`: exp, reciprocal, division, square roots, sigmoid (circuits);
   :mod:`~mpdp.protocols.mpc.masked`: the same functions on masked wires (a public ``v + lambda`` with a dealt
   ``lambda``; a planner compiles a function or a whole step into rounds whose correlations the dealer hands out
   before the online phase): exp and sigmoid in 2 online rounds, reciprocal, square roots in 3, division in 4
   (``MPCSession(functions="masked")``, two computing parties and a dealer; the circuits are the dealer-free and
   slower option).
7. :mod:`~mpdp.protocols.mpc.clipping`: DP-SGD clipping (``clip_norm``, ``inv_sqrt_max``).
8. :mod:`~mpdp.protocols.mpc.session`: :class:`MPCSession`, a computing party's session (inputs, public
   values, the openings).

The operators of a shared value that need a protocol (``a * b``, ``a @ b``, ``a / b``, ``a < b``, ``x.exp()``,
...) are implemented in layers 4 to 6, above the value type. They reach it through the value's session:
``x.session.ops`` (:class:`~mpdp.protocols.mpc.tensor.Operations`) is bound by :class:`MPCSession` at the
top, so no module imports one above it and nothing is patched in at import time.
"""

from mpdp.protocols.mpc.dealer import DealerProvider, TrustedDealer
from mpdp.protocols.mpc.provider import (
    BeaverTriple,
    BitTriple,
    CompareMask,
    CorrelationProvider,
    DaBit,
    DcfKey,
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
    "DcfKey",
    "DealerProvider",
    "MPCSession",
    "SharedFixedPoint",
    "SquarePair",
    "TripleSource",
    "TrustedDealer",
    "WithTriplesFrom",
    "WrapMask",
]
