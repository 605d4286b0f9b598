"""Paper 003's MPC Out P as a Flower app: one secure average of the clients' local minimisers, with Laplace noise
made by the aggregators on their shares before the only opening.

Each client computes its regularised local minimiser (:meth:`PartyGroup.local_minimizers
<mpdp.learning.distributed_erm.problem.PartyGroup.local_minimizers>`, the in-process code), charges its ledger the
release, and shares it among the aggregators through the hub (:mod:`mpdp.flower.secagg`). The sensitivity is
the in-process one (``sqrt(d)`` times the l2 sensitivity ``2G / (n(1) lam)`` of the sum, inflated by the grid).

Where it differs from ``mpdp run mpc-outp``, and why: in process, the aggregators sample the discrete Laplace
jointly inside an MPC session with a dealer (:func:`mpdp.protocols.noise.mpc_discrete_laplace`), an interactive
protocol of many rounds among the aggregators; on Flower every round is a hub round (seconds each), so the
aggregators instead each add a Pólya share of a distributed discrete Laplace to their share
(:func:`mpdp.protocols.distributed_laplace.add_distributed_laplace` with ``collusion=1``): one message each, no
dealer. The noise is still generated where nobody sees it in the clear, and the release is exactly
``epsilon``-DP (an exact discrete Laplace, not the in-MPC sampler's ``MPC_LAPLACE_TV`` approximation) towards the
hub, any client and any single aggregator; the price is ``A / (A - 1)`` times the in-process noise variance
(twice with two aggregators). The noise is the aggregators', so dropped clients remove none.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from mpdp.dp.grid import grid_l1_sensitivity
from mpdp.dp.sensitivities.erm import minimizer_sensitivity
from mpdp.errors import ParameterError
from mpdp.flower.gradp import erm_problem, erm_spec
from mpdp.flower.hub import aggregator_key, check, client_app_for, introduce, serve
from mpdp.flower.hub import survivors as hub_survivors
from mpdp.flower.messages import exchange
from mpdp.flower.nodes import charge_once, client_rows, identity, noise_source, open_ledger
from mpdp.flower.secagg import SERVER, aggregator_step, client_step, noisy_total, server_combine
from mpdp.learning.distributed_erm.problem import PartyGroup
from mpdp.protocols.aggregation import AggregatorShare
from mpdp.protocols.distributed_laplace import add_distributed_laplace, distributed_laplace_cost
from mpdp.randomness import RandomSource

__all__ = ["ALGORITHM", "client_app", "run", "server_app"]

ALGORITHM = "mpc-outp"
COLLUSION = 1


def _sum_l1(public: Mapping[str, Any]) -> float:
    problem = erm_problem(public)
    return math.sqrt(int(public["d"])) * minimizer_sensitivity(problem.G, int(public["n_min"]), problem.lam)


def _scale(public: Mapping[str, Any]) -> Fraction:
    """Laplace scale (real units, exact) of the sum: the grid-inflated l1 sensitivity over epsilon."""
    units = grid_l1_sensitivity(_sum_l1(public), int(public["frac_bits"]), int(public["d"]))
    return Fraction(units) / (Fraction(2) ** int(public["frac_bits"]) * Fraction(float(public["epsilon"])))


def _cost(public: Mapping[str, Any]) -> Any:
    return distributed_laplace_cost(sensitivity=_sum_l1(public), scale=_scale(public),
                                    parties=len(public["aggregators"]), dim=int(public["d"]),
                                    frac_bits=int(public["frac_bits"]), collusion=COLLUSION, known_shares=COLLUSION)


def _contribute(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public = body["public"]
    if context.node_config.get("crash_at") == 1:  # fault injection (tests): die mid-round, no reply
        os._exit(1)
    X, y = client_rows(context.node_config)
    ledger = open_ledger(context.node_config, me.name, epsilon=float(public["epsilon"]), delta=0.0, method="basic")
    charge_once(ledger, _cost(public), f"flower/{context.run_id}/{ALGORITHM}")
    problem = erm_problem(public)
    local = PartyGroup(first=0, X=X[None], y=y[None]).local_minimizers(problem)[0]
    keys = {str(a): bytes(k) for a, k in body["public_keys"].items()}
    return {"boxes": client_step(erm_spec(public), me.name, local, keys, run=str(context.run_id), step=1,
                                 rng=RandomSource.fresh())}


def _aggregate(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public = body["public"]
    spec = erm_spec(public)
    share, comm, endpoint = aggregator_step(spec, me.name, aggregator_key(context), body["boxes"], body["survivors"],
                                            run=str(context.run_id), step=1, rng=RandomSource.fresh())
    if not isinstance(share, AggregatorShare):  # pragma: no cover - reveal=False always returns a share
        raise ParameterError("the aggregation returned no share")
    rng = noise_source(context.node_config, ("algorithm", ALGORITHM, me.name)) or RandomSource.fresh()
    noisy = add_distributed_laplace(share.share, scale=_scale(public), parties=len(spec.aggregators), fmt=spec.fmt,
                                    collusion=COLLUSION, rng=rng)
    comm.send(SERVER, noisy, label="noisy-share")
    return {"messages": endpoint.outbox[SERVER]}


client_app = client_app_for({"contribute": _contribute, "aggregate": _aggregate})


def run(grid: Grid, job: Mapping[str, Any]) -> dict[str, Any]:
    """The hub's run: one contribute round, one aggregate round, the noisy average released."""
    start = time.perf_counter()
    nodes, info = introduce(grid, job)
    sizes = {c: int(info[c]["rows"]) for c in job["clients"]}
    public = {k: job[k] for k in ("task", "lam", "d", "epsilon", "frac_bits", "aggregators", "clients",
                                  "max_dropouts")}
    public["n_min"] = min(sizes.values())
    problem = erm_problem(public)
    public["bound"] = problem.G / problem.lam
    spec = erm_spec(public)
    keys = {a: bytes(info[a]["public_key"]) for a in job["aggregators"]}
    rng = RandomSource.fresh()
    contribute = exchange(grid, {c: nodes[c] for c in job["clients"]},
                          {c: {"step": "contribute", "public": public, "public_keys": keys} for c in job["clients"]},
                          timeout=float(job["round_timeout"]), group="contribute-1")
    survivors = hub_survivors(spec, contribute, rng=rng)
    aggregate = exchange(grid, {a: nodes[a] for a in spec.aggregators},
                         {a: {"step": "aggregate", "public": public, "survivors": survivors,
                              "boxes": {c: r["boxes"][a] for c, r in contribute.replies.items()}}
                          for a in spec.aggregators},
                         timeout=float(job["round_timeout"]), group="aggregate-1")
    check(aggregate)
    share, comm = server_combine(spec, {a: r["messages"] for a, r in aggregate.replies.items()}, survivors, rng=rng)
    theta = noisy_total(spec, comm) / share.count
    scale = float(_scale(public))
    traffic = {c: contribute.bytes_sent.get(c, 0) + contribute.bytes_received.get(c, 0) for c in job["clients"]}
    return {"theta": theta.tolist(), "iterates": [theta.tolist()], "recorded": [],
            "rounds": [{"t": 1, "survivors": share.count,
                        "node_errors": {p: (e.reason or str(e.code))[:300] for p, e in contribute.failed.items()},
                        "dropped": sorted(set(job["clients"]) - set(contribute.replies)),
                        "seconds": contribute.seconds + aggregate.seconds}],
            "privacy": {"epsilon": float(_cost(public).epsilon), "laplace_scale_of_sum_per_aggregator": scale,
                        "laplace_scale_of_average_total": scale * math.sqrt(len(spec.aggregators)) / share.count,
                        "collusion": COLLUSION, "aggregators": len(spec.aggregators), "frac_bits": public["frac_bits"]},
            "n_min": public["n_min"], "party_rows": [sizes[c] for c in job["clients"]], "bytes_per_client": traffic,
            "seconds": time.perf_counter() - start}


server_app = ServerApp()


@server_app.main()  # type: ignore[untyped-decorator, unused-ignore]
def _main(grid: Grid, context: Context) -> None:
    serve(grid, context, run)
