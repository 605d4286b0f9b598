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
    ``threshold=t`` switches to Shamir t-of-A shares: any t + 1 aggregators finish the round.

Secure inner products (:mod:`mpdp.protocols.inner_product`)
    ``spec = CrossProductSpec(left, right, rows, left_cols, right_cols, backend=SharesBackend(dealer) |
    PaillierBackend(...) | CkksBackend(), bound=1.0, reveal_to=None | left | right)``; every party calls
    ``cross_product(comm, its_matrix_or_None, spec)`` and gets a ``CrossProduct`` (``.value`` where revealed,
    ``.share`` otherwise: ring shares at scale 2^(2f), e.g. ``session.from_shares(share, bound=spec.result_bound,
    scale=spec.scale_bits)``). ``X^T Y`` for whole column blocks in one call (paper 000's cross-party
    coefficients); vectors are n x 1. ``simulate_cross_product`` runs it in memory.

Distributed noise (:mod:`mpdp.protocols.noise`, :mod:`mpdp.protocols.noisy_aggregation`)
    (a) ``add_distributed_gaussian(share, sigma=, parties=, fmt=, rng=)`` on each holder's ring share, priced by
    ``distributed_gaussian_rho(..., known_shares=)`` (KLS 2021; towards a holder ``known_shares=1``).
    (b) inside an ``MPCSession``: ``mpc_discrete_laplace(session, shape, scale=)`` (exact up to 2^-57 in TV) and
    ``mpc_discrete_gaussian(session, shape, sigma=)`` (approximate, ``MPC_GAUSSIAN_TV`` per sample), from joint
    randomness no coalition short of all parties knows. Paper 003: ``noisy_aggregation_server`` /
    ``noisy_aggregation_aggregator`` with ``MpcNoise("laplace" | "gaussian", scale)`` open sum + in-MPC noise to
    the server in one call per round (spec with ``reveal=False``, the server among the aggregators, a dealer).
    (c) pure DP (:mod:`mpdp.protocols.distributed_laplace`): ``add_distributed_laplace(share, scale=, parties=,
    fmt=, collusion=, rng=)`` adds this holder's Pólya difference, so the shares sum to an exact discrete Laplace
    (towards any ``collusion`` holders); priced by ``distributed_laplace_cost(..., known_shares=)``.
    ``laplace_aggregation_server`` / ``laplace_aggregation_aggregator``: secure aggregation opened with it.

Private record alignment (:mod:`mpdp.protocols.alignment`)
    ``spec = AlignmentSpec(parties=(leader, ...), min_intersection=100)``; every party calls
    ``align(comm, its_ids, spec)`` (or runs ``AlignmentParty(name, ids, spec)``) and gets an ``Alignment``:
    ``.rows``, its row of each common record in one agreed order (so ``table[rows]`` lines up everywhere),
    ``.size`` and ``.set_sizes`` (revealed to all). ECDH PSI over ristretto255; ``simulate_alignment`` runs it
    in memory. The Security section of the package docstring says what leaks.

Named protocols for ``mpdp party`` (:mod:`mpdp.protocols.catalog`)
    ``PROTOCOLS`` maps a name to a role builder from a JSON configuration.
"""
