"""Correlated randomness for secret-shared computation: what each kind is and how it is dealt.

A *correlation* is input-independent randomness, additively shared among the n computing parties, with a
known relation between its parts (Beaver 1991). Every kind here is described by a
:class:`CorrelationSpec` and produced in a seed-compressed way:

* each party ``i`` expands its own stream (a :class:`~mpdp.randomness.RandomSource` it shares with the
  dealer only) into uniform parts with :func:`draw`;
* the dealer expands all n streams the same way, computes the secrets, and :func:`deal` returns the
  *corrections* that replace some of party 0's parts so that the relation holds.

So a dealer sends only party 0's corrections; parties 1..n-1 receive nothing per correlation. Because
:func:`deal` calls :func:`draw` for every stream, the two sides cannot drift apart.

Kinds (shares of ring elements unless stated; ``+`` is ring addition, ``^`` XOR of words):

==========  ======================================================================================
``mul``     Beaver triple: a, b, c with c = a * b (elementwise, numpy broadcasting of a and b)
``matmul``  matrix triple: A, B, C with C = A @ B
``square``  square pair: a, c with c = a * a
``wrap``    wrap mask for truncation and ring conversion: r uniform in the input ring; ``msb`` = the top
            bit of r and ``low`` = (r mod 2^(l-1)) >> shift, both shared in the output ring
``compare`` comparison mask: r shared in the ring, and the bits of r XOR-shared as 64-bit words
``and``     bitwise AND triple on 64-bit words, XOR-shared: c = a & b
``dabit``   a random bit shared both ways: XOR-shared (uint8 0/1) and additively in the ring
``*_wrap``  ``mul_wrap``, ``matmul_wrap``, ``square_wrap``: a product correlation whose ``c`` is the
            product *plus* a wrap mask ``r`` (a uniform ring element only the dealer knows), with
            ``msb`` and ``low`` of that ``r`` as in ``wrap`` (in the output ring: the ring, or a narrower
            one when the truncation also leaves the ring): a Beaver product then yields shares of
            ``x y + r`` directly, ready to open for its truncation, and ``r`` is never shared (one
            uniform element per value fewer than a triple plus a wrap mask)
``owned``   ``matmul_owned_wrap``, ``mul_owned_wrap``: ``matmul_wrap`` and ``mul_wrap`` for a left operand
            one party (``owner``) holds in the clear: ``A`` is drawn by the owner alone (it knows all of it),
            ``B`` by the other parties alone (the owner's share of it is zero), ``c = A @ B + r`` (``A * B
            + r``) shared by all (:func:`mpdp.protocols.mpc.arithmetic.matmul_owned` and ``mul_owned``: the
            owner never shares its operand)
``dcf``     a comparison key (two computing parties): r uniform in the ring, each party's own DCF root seed,
            shares of ``b`` = bit ``d`` of r, and the DCF keys' corrections for ``alpha = r mod 2^d``, payload
            ``1 - 2 b`` (:mod:`mpdp.crypto.fss`; ``d`` = the spec's ``shift``). The corrections are
            :data:`PUBLIC`: common to both keys, they go to party 1 as well, not only to party 0
``masked``  every correlation of a masked-wire program at once, as its :class:`~mpdp.crypto.masked.plan.MaskedPlan`
            (the spec's ``plan``) lists them: openings' masks, cross terms, comparison keys with payloads, function
            tables (:mod:`mpdp.crypto.masked`); its corrected and public parts are the plan's
            (:func:`corrected_parts`, :func:`public_parts`)
==========  ======================================================================================

Security: a party's parts are uniform given everything it receives; party 0's corrections are uniform
because they are offset by the other parties' parts, which party 0 never sees. The dealer learns the
correlations but never a masked value of the online phase (it receives no online message).
"""

from __future__ import annotations

from mpdp.crypto.correlations.batching import CorrelationBatch, batch
from mpdp.crypto.correlations.corrections import deal
from mpdp.crypto.correlations.parts import draw, draw_shape
from mpdp.crypto.correlations.specs import (
    CORRECTED,
    KINDS,
    MAX_ELEMENTS,
    OWNED,
    PUBLIC,
    CorrelationSpec,
    corrected_parts,
    matmul_shape,
    public_parts,
    spec,
)

__all__ = ["CORRECTED", "KINDS", "MAX_ELEMENTS", "OWNED", "PUBLIC", "CorrelationBatch", "CorrelationSpec", "batch",
           "corrected_parts", "deal", "draw", "draw_shape", "matmul_shape", "public_parts", "spec"]
