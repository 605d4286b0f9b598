"""The pure maths of masked wires: plans of correlated items, the dealer's side of them, function tables.

A masked wire holds a value ``v`` as a public ``delta = v + lambda`` with ``lambda`` known to the dealer and
additively shared (the form of ABY2.0, Patra et al., USENIX Security 2021, and Trident, Chaudhari et al.,
NDSS 2020). The interactive part is :mod:`mpdp.protocols.mpc.masked`; here:

* :mod:`~mpdp.crypto.masked.tables`: any univariate function of a masked value from one opening (the dealer's
  per-entry polynomial tables and the parties' public basis);
* :mod:`~mpdp.crypto.masked.plan`: :class:`~mpdp.crypto.masked.plan.MaskedPlan`, a program's correlated items
  (openings, cross terms, comparison keys with payloads, tables), validated and encoded for the wire;
* :mod:`~mpdp.crypto.masked.deal`: the dealer's side, every part of a plan from the parties' streams.
"""
