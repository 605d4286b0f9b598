"""Paper 003's MPC Grad P as a Flower app: the data parties are ClientApps, the aggregators are ClientApps, the
ServerApp is the hub that relays and takes the public gradient step.

Each of the T rounds is two Flower message rounds (:mod:`mpdp.flower.secagg`): the clients send their mean
gradient at the current model, additively shared and sealed to the aggregators; the aggregators add their
survivors' shares, each adds its own exact discrete Gaussian of the full sigma to its share
(:func:`mpdp.protocols.noise.add_distributed_gaussian`, as :func:`mpdp.learning.distributed_erm.fit_mpc_gradp`
does) and sends the noisy share to the hub, which adds them: the only value ever opened is the noisy sum.
The hub divides by the survivors and takes the step :func:`~mpdp.learning.distributed_erm.common.gd_step`.

Trust model: paper 003's, with the hub in agg0's place as the party that learns the opened value. The noise is
made by the aggregators, never by the clients, so a dropped client removes no noise: the sensitivity is per
record and the noise is the full sigma whoever survives (accounting unchanged). The hub sees sealed shares,
receipts and noisy shares (uniform, each masked by that aggregator's noise); a coalition of the hub and one
aggregator knows the opened sum minus one aggregator's noise, which is exactly what agg0 (the server) knows in
the in-process run. Clients learn the noisy average gradients, as there.

Accounting: every client charges the whole run (``T`` Gaussian releases, :meth:`GaussianCalibration.step_cost`)
on its own ledger before its first contribution; an exhausted ledger refuses
(:class:`~mpdp.errors.BudgetExceededError`) and the run aborts before anything about that client is released.
The calibration uses ``n(1)``, the smallest client's record count (public in paper 003's setting, reported by
each client at the start).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.sensitivities.erm import gradient_sensitivity
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.flower.hub import aggregator_key, check, client_app_for, introduce, serve
from mpdp.flower.hub import survivors as hub_survivors
from mpdp.flower.messages import exchange
from mpdp.flower.nodes import charge_once, client_rows, identity, noise_source, open_ledger
from mpdp.flower.secagg import (
    SERVER,
    aggregator_step,
    client_step,
    noisy_total,
    server_combine,
)
from mpdp.learning.distributed_erm.common import (
    GaussianCalibration,
    GradientPerturbation,
    calibrate_gradient_noise,
    gd_step,
)
from mpdp.learning.distributed_erm.experiments import loss_for
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup
from mpdp.protocols.aggregation import AggregationSpec, AggregatorShare
from mpdp.protocols.noise import add_distributed_gaussian
from mpdp.randomness import RandomSource

__all__ = ["ALGORITHM", "client_app", "erm_problem", "erm_spec", "run", "server_app"]

ALGORITHM = "mpc-gradp"


# -- public parameters, identical on every party ---------------------------------------------------------------
def erm_problem(public: Mapping[str, Any]) -> ERMProblem:
    """The public learning problem (paper 003's loss for the task, lambda)."""
    return ERMProblem(loss_for(str(public["task"])), lam=float(public["lam"]))


def _calibration(public: Mapping[str, Any]) -> GaussianCalibration:
    settings = GradientPerturbation(epsilon=float(public["epsilon"]), delta=float(public["delta"]),
                                    T=int(public["T"]), eta=float(public["eta"]),
                                    accountant=public["accountant"], stop_after=public.get("stop_after"))
    sensitivity = gradient_sensitivity(erm_problem(public).G, int(public["n_min"]))
    return calibrate_gradient_noise(sensitivity, int(public["d"]), settings, grid_bits=int(public["frac_bits"]))


def erm_spec(public: Mapping[str, Any]) -> AggregationSpec:
    """The aggregation of one vector per client of ``d`` entries bounded by ``G``, shares kept (in-MPC noise)."""
    return AggregationSpec(server=SERVER, aggregators=tuple(public["aggregators"]),
                           clients={str(c): 1 for c in public["clients"]}, dim=int(public["d"]),
                           bound=float(public.get("bound", erm_problem(public).G)),
                           max_dropouts=int(public["max_dropouts"]), reveal=False,
                           fmt=FixedPointFormat(ring_bits=64, frac_bits=int(public["frac_bits"])))


# -- the nodes ----------------------------------------------------------------------------------------------------
def _contribute(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public = body["public"]
    if context.node_config.get("crash_at") == body["t"]:  # fault injection (tests): die mid-round, no reply
        os._exit(1)
    X, y = client_rows(context.node_config)
    if X.shape[1] != int(public["d"]):
        raise ShapeMismatchError(explain(f"{me.name}'s features", X.shape[1], f"{public['d']} columns like the "
                                         "other clients", "encode the data with the federation's schema"))
    calibration = _calibration(public)
    ledger = open_ledger(context.node_config, me.name, epsilon=float(public["epsilon"]),
                         delta=float(public["delta"]), method="pld" if public["accountant"] == "tight" else "zcdp")
    charge_once(ledger, calibration.step_cost(), f"flower/{context.run_id}/{ALGORITHM}")
    gradient = PartyGroup(first=0, X=X[None], y=y[None]).local_gradients(erm_problem(public),
                                                                        np.asarray(body["theta"]))[0]
    keys = {str(a): bytes(k) for a, k in body["public_keys"].items()}
    boxes = client_step(erm_spec(public), me.name, gradient, keys, run=str(context.run_id), step=int(body["t"]),
                        rng=RandomSource.fresh())
    return {"boxes": boxes}


def _aggregate(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public, t = body["public"], int(body["t"])
    spec = erm_spec(public)
    share, comm, endpoint = aggregator_step(spec, me.name, aggregator_key(context), body["boxes"],
                                            body["survivors"], run=str(context.run_id), step=t,
                                            rng=RandomSource.fresh())
    if not isinstance(share, AggregatorShare):  # pragma: no cover - reveal=False always returns a share
        raise ParameterError("the aggregation returned no share")
    sigma = float(body["sigma"]) * math.sqrt(len(spec.aggregators))
    seeded = noise_source(context.node_config, ("algorithm", ALGORITHM, me.name))
    rng = seeded or RandomSource.fresh()
    if seeded is not None:  # replay the earlier rounds' draws: this round's noise equals the in-process run's
        for _ in range(1, t):
            add_distributed_gaussian(spec.fmt.ring.zeros((spec.width,)), sigma=sigma, parties=len(spec.aggregators),
                                     fmt=spec.fmt, rng=rng)
    noisy = add_distributed_gaussian(share.share, sigma=sigma, parties=len(spec.aggregators), fmt=spec.fmt, rng=rng)
    comm.send(SERVER, noisy, label="noisy-share")
    return {"messages": endpoint.outbox[SERVER]}


client_app = client_app_for({"contribute": _contribute, "aggregate": _aggregate})


# -- the hub --------------------------------------------------------------------------------------------------------
def run(grid: Grid, job: Mapping[str, Any]) -> dict[str, Any]:
    """The hub's whole run; returns the result record the launcher reads."""
    start = time.perf_counter()
    nodes, info = introduce(grid, job)
    sizes = {c: int(info[c]["rows"]) for c in job["clients"]}
    public = {k: job[k] for k in ("task", "lam", "d", "T", "eta", "epsilon", "delta", "accountant", "frac_bits",
                                  "aggregators", "clients", "max_dropouts", "stop_after")}
    public["n_min"] = min(sizes.values())
    problem, calibration, spec = erm_problem(public), _calibration(public), erm_spec(public)
    keys = {a: bytes(info[a]["public_key"]) for a in job["aggregators"]}
    rng = RandomSource.fresh()
    theta = np.zeros(int(job["d"]))
    recorded = set(int(t) for t in job.get("record") or ())
    iterates: list[list[float]] = []
    rounds: list[dict[str, Any]] = []
    traffic: dict[str, int] = dict.fromkeys(job["clients"], 0)
    iterations = int(job["stop_after"] or job["T"])
    for t in range(1, iterations + 1):
        contribute = exchange(grid, {c: nodes[c] for c in job["clients"]},
                              {c: {"step": "contribute", "t": t, "theta": theta, "public": public,
                                   "public_keys": keys} for c in job["clients"]},
                              timeout=float(job["round_timeout"]), group=f"contribute-{t}")
        survivors = hub_survivors(spec, contribute, rng=rng)
        boxes = {a: {c: r["boxes"][a] for c, r in contribute.replies.items()} for a in spec.aggregators}
        aggregate = exchange(grid, {a: nodes[a] for a in spec.aggregators},
                             {a: {"step": "aggregate", "t": t, "public": public, "boxes": boxes[a],
                                  "survivors": survivors, "sigma": calibration.sigma} for a in spec.aggregators},
                             timeout=float(job["round_timeout"]), group=f"aggregate-{t}")
        check(aggregate)
        share, comm = server_combine(spec, {a: r["messages"] for a, r in aggregate.replies.items()}, survivors,
                                     rng=rng)
        noisy_mean = noisy_total(spec, comm) / share.count
        theta = gd_step(theta, noisy_mean, problem, float(job["eta"]))
        if t in recorded:
            iterates.append(theta.tolist())
        for c in job["clients"]:
            traffic[c] += contribute.bytes_sent.get(c, 0) + contribute.bytes_received.get(c, 0)
        dropped = sorted(set(job["clients"]) - set(contribute.replies))
        errors = {p: (e.reason or str(e.code))[:300] for p, e in contribute.failed.items()}
        rounds.append({"t": t, "survivors": share.count, "node_errors": errors, "dropped": dropped,
                       "seconds": contribute.seconds + aggregate.seconds})
    return {"theta": theta.tolist(), "iterates": iterates, "recorded": sorted(t for t in recorded if t <= iterations),
            "rounds": rounds, "calibration": calibration.as_dict(), "n_min": public["n_min"],
            "party_rows": [sizes[c] for c in job["clients"]], "bytes_per_client": traffic,
            "seconds": time.perf_counter() - start}


server_app = ServerApp()


@server_app.main()  # type: ignore[untyped-decorator, unused-ignore]
def _main(grid: Grid, context: Context) -> None:
    serve(grid, context, run)
