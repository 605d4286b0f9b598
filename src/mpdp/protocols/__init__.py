"""Protocols: parties exchanging messages to compute inner products, aggregates and noise.

Every protocol is a set of plain functions, one per role, each taking the party's
:class:`~mpdp.runtime.Comm` (and its own private inputs) and returning what that party learns. Call them inside
your own role functions, in memory (:func:`~mpdp.runtime.run_protocol`) or one party per process over the network
(:mod:`mpdp.runtime.grpc_transport`, ``mpdp party``); the code is the same.

Secure aggregation (:mod:`mpdp.protocols.aggregation`)
    ``spec = AggregationSpec(server, aggregators, clients={party: k}, dim, bound, weighted=..., max_dropouts=...)``;
    clients call ``aggregation_client(comm, spec, rows, weights)``, aggregators
    ``aggregation_aggregator(comm, spec)``, the server ``aggregation_server(comm, spec) -> AggregateResult``
    (``.total``, ``.weight_total``, ``.mean``, ``.count``, ``.dropped``). With ``reveal=False`` the aggregators
    keep additive shares of the aggregate (for noise added inside the MPC). ``simulate_aggregation`` runs a
    whole round in memory. Paper 001's weighted parameter average: ``weighted=True`` with record counts as weights;
    paper 003's 50,000 one-record parties: one client party with ``k = 50_000`` rows (a vectorized group).

Named protocols for ``mpdp party`` (:mod:`mpdp.protocols.catalog`)
    ``PROTOCOLS`` maps a name to a role builder from a JSON configuration.
"""
