"""Masked wires: values held as a public ``delta = v + lambda`` with ``lambda`` dealt, and programs compiled on them.

Layers (each module imports only those before it, and the engine's layers 1-4: provider, channel, tensor):

1. :mod:`~mpdp.protocols.mpc.masked.program`: the planner, :class:`~mpdp.protocols.mpc.masked.program.Program`,
   which builds a function or a whole protocol step into rounds of openings and local nodes, ahead of time, and
   compiles it with its dealer plan (:class:`~mpdp.crypto.masked.plan.MaskedPlan`);
2. :mod:`~mpdp.protocols.mpc.masked.run`: the executor, one party's run of a compiled program on its shares and its
   dealt material (checked against the plan and the session before anything is opened);
3. :mod:`~mpdp.protocols.mpc.masked.functions`: exp and sigmoid in 2 rounds, reciprocal, inverse square root and
   square root in 3, division in 4, as program fragments and on
   :class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` values.

The pure maths (plans, the dealer's side, function tables, payload comparison keys) is in
:mod:`mpdp.crypto.masked` and :mod:`mpdp.crypto.fss_payload`. A dealer with two computing parties deals the plans
(:attr:`~mpdp.protocols.mpc.provider.CorrelationProvider.deals_masked_plans`).
"""
