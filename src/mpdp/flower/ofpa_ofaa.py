"""Paper 001's OFPA and OFAA (and Algorithm 1, ``perturbation=output``) as a Flower app.

Each data owner is a ClientApp holding its own rows (unit ball, intercept folded in, as
:func:`~mpdp.learning.ofpa_ofaa.prepare_parties` makes them) and its own ledger. Every round it builds its
:class:`~mpdp.learning.ofpa_ofaa.parties.DataOwner` (the same class as the in-process run: same calibration
:func:`~mpdp.learning.ofpa_ofaa.model.calibrate`, same perturbation, same local solver), minimises its
perturbed objective from the global parameters and sends ``(n_k theta_k, n_k)`` through mpdp's weighted secure
aggregation (:mod:`mpdp.flower.secagg`, ``reveal=True``): the hub learns only the record-weighted average of the
survivors, exactly as the in-process rounds do (:mod:`mpdp.learning.ofpa_ofaa.rounds`).

Noise and accounting are each owner's own (local perturbation, paper 001): an owner charges its ledger the run's
cost (:func:`~mpdp.learning.ofpa_ofaa.model.owner_cost`, the charge every engine makes) once, before its first
release; its perturbation is drawn once and kept in its node's Flower state across rounds (``noise="once"``,
never sent) or drawn anew each round (``noise="fresh"``), under the labels and with the stopping rule of
:mod:`mpdp.learning.ofpa_ofaa.rounds`. A dropped owner changes the average, not anybody's guarantee. The
record counts ``n_k`` are public (reported at the start), as in the
paper, which weighs by them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp

from mpdp.flower.hub import Tally, aggregator_key, check, client_app_for, introduce, result_of, serve
from mpdp.flower.hub import survivors as hub_survivors
from mpdp.flower.messages import exchange
from mpdp.flower.nodes import charge_once, client_rows, identity, noise_source, open_ledger
from mpdp.flower.secagg import SERVER, aggregator_step, client_step, server_combine
from mpdp.learning.ofpa_ofaa.deployment import OfpaDeployment, settings_of
from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, PreparedParties, calibrate, owner_cost
from mpdp.learning.ofpa_ofaa.parties import DataOwner, OwnerRows
from mpdp.learning.ofpa_ofaa.rounds import noise_label, release_of, stop_after
from mpdp.learning.spec.memory import ALGORITHM_LABEL
from mpdp.protocols.aggregation import AggregateResult, AggregationSpec
from mpdp.randomness import RandomSource
from mpdp.runtime.codec import decode, encode

__all__ = ["client_app", "run", "server_app"]

_OWNER_STATE = "mpdp-owner"


def _settings(public: Mapping[str, Any]) -> OfpaOfaaSettings:
    return settings_of(public)


def _spec(public: Mapping[str, Any]) -> AggregationSpec:
    return AggregationSpec(server=SERVER, aggregators=tuple(public["aggregators"]),
                           clients={str(c): 1 for c in public["clients"]}, dim=int(public["d"]),
                           bound=float(public["bound"]), weighted=True, weight_bound=float(public["count_bound"]),
                           max_dropouts=int(public["max_dropouts"]))


def _owner_source(context: Context, name: str) -> RandomSource:
    """The owner's noise source: seeded from its node config in experiments (``mpdp run --seed``'s), else a
    secret drawn at its first release and kept in its node's state, so its perturbation survives the fresh
    ClientApp process of each round (noise drawn once is drawn once)."""
    seeded = noise_source(context.node_config, (ALGORITHM_LABEL, name))  # the owner's source in every engine
    if seeded is not None:
        return seeded
    record = context.state.get(_OWNER_STATE)
    secret = record.get("secret") if isinstance(record, ConfigRecord) else None
    if not isinstance(secret, bytes):
        secret = os.urandom(32)
        context.state[_OWNER_STATE] = ConfigRecord({"secret": secret})
    return RandomSource.seeded(secret)


def _contribute(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public, rnd = body["public"], int(body["round"])
    if context.node_config.get("crash_at") == rnd + 1:  # fault injection (tests): die mid-round, no reply
        os._exit(1)
    X, y = client_rows(context.node_config)
    rows = OwnerRows(X, y, np.asarray(public["fixed"], dtype=bool))
    settings = _settings(public)
    prepared = PreparedParties(names=(me.name,), rows=(rows,), row_bound=float(public["row_bound"]),
                               row_l1=float(public["row_l1"]), intercept=float(public["intercept"]))
    lam, scale, budget = calibrate(settings, settings.per_release, rows.X.shape[0], prepared,
                                   int(np.count_nonzero(rows.fixed)))
    owner = DataOwner(me.name, rows, settings.method, lam, scale, _owner_source(context, me.name), budget)
    release = release_of(settings, rnd)
    cost = owner_cost(settings)
    if cost is not None:  # the run's whole cost, once, before the owner's first release
        ledger = open_ledger(context.node_config, me.name, epsilon=settings.epsilon, delta=0.0, method="basic")
        charge_once(ledger, cost, f"flower/{context.run_id}/{settings.method}")
    cached = context.state.get(f"{_OWNER_STATE}-solution")
    key = f"{settings.method}/{noise_label(release)}"
    if isinstance(cached, ConfigRecord) and cached.get("key") == key:
        local = np.asarray(decode(cached["value"]), dtype=np.float64)  # type: ignore[arg-type, unused-ignore]
    else:
        owner.draw_noise(noise_label(release))
        local = owner.local_fit(np.asarray(body["theta"], dtype=np.float64))
        context.state[f"{_OWNER_STATE}-solution"] = ConfigRecord({"key": key, "value": encode(local)})
    values = np.clip(local, -settings.bound, settings.bound)[None, :]
    keys = {str(a): bytes(k) for a, k in body["public_keys"].items()}
    boxes = client_step(_spec(public), me.name, values, keys, run=str(context.run_id), step=rnd + 1,
                        rng=RandomSource.fresh(), weights=np.array([float(rows.X.shape[0])]))
    return {"boxes": boxes}


def _aggregate(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    _, _, endpoint = aggregator_step(_spec(body["public"]), me.name, aggregator_key(context), body["boxes"],
                                     body["survivors"], run=str(context.run_id), step=int(body["round"]) + 1,
                                     rng=RandomSource.fresh())
    return {"messages": endpoint.outbox[SERVER]}


client_app = client_app_for({"contribute": _contribute, "aggregate": _aggregate})


def run(grid: Grid, job: Mapping[str, Any]) -> dict[str, Any]:
    """The hub's whole run (rounds until the change is below ``eta`` or ``max_rounds``); returns its result in
    the deployed parties' form (:func:`~mpdp.flower.hub.result_of`): the hub is the deployment's ``server``,
    which hands every owner the new average after each round."""
    start = time.perf_counter()
    nodes, info = introduce(grid, job)
    sizes = {c: int(info[c]["rows"]) for c in job["clients"]}
    public = {k: job[k] for k in ("settings", "epsilon", "method", "bound", "d", "fixed", "row_bound", "row_l1",
                                  "intercept", "aggregators", "clients", "max_dropouts")}
    public["count_bound"] = 1 << max(1, max(sizes.values()).bit_length())
    spec, settings = _spec(public), _settings(public)
    keys = {a: bytes(info[a]["public_key"]) for a in job["aggregators"]}
    rng = RandomSource.fresh()
    theta = np.zeros(int(job["d"]))
    rounds: list[dict[str, Any]] = []
    handed: list[list[float]] = []
    tally = Tally()
    for rnd in range(settings.max_rounds):
        contribute = exchange(grid, {c: nodes[c] for c in job["clients"]},
                              {c: {"step": "contribute", "round": rnd, "theta": theta, "public": public,
                                   "public_keys": keys} for c in job["clients"]},
                              timeout=float(job["round_timeout"]), group=f"contribute-{rnd + 1}")
        survivors = hub_survivors(spec, contribute, rng=rng)
        aggregate = exchange(grid, {a: nodes[a] for a in spec.aggregators},
                             {a: {"step": "aggregate", "round": rnd, "public": public, "survivors": survivors,
                                  "boxes": {c: r["boxes"][a] for c, r in contribute.replies.items()}}
                              for a in spec.aggregators},
                             timeout=float(job["round_timeout"]), group=f"aggregate-{rnd + 1}")
        check(aggregate)
        tally.add(contribute)
        tally.add(aggregate)
        result, _ = server_combine(spec, {a: r["messages"] for a, r in aggregate.replies.items()}, survivors,
                                   rng=rng)
        if not isinstance(result, AggregateResult):  # pragma: no cover - reveal=True always returns the aggregate
            raise TypeError("a revealed aggregation returned shares")
        new = np.asarray(result.mean, dtype=np.float64)
        change = float(np.linalg.norm(new - theta))
        theta = new
        handed.append(theta.tolist())
        rounds.append({"t": rnd + 1, "survivors": result.count, "change": change,
                       "node_errors": {p: (e.reason or str(e.code))[:300] for p, e in contribute.failed.items()},
                       "dropped": sorted(set(job["clients"]) - set(contribute.replies)),
                       "seconds": contribute.seconds + aggregate.seconds})
        if stop_after(rnd, change, settings):
            break
    return result_of(OfpaDeployment(), tally, {}, time.perf_counter() - start, rounds=rounds,
                     handed={SERVER: handed}, bytes_per_client=tally.client_bytes(job["clients"]))


server_app = ServerApp()


@server_app.main()  # type: ignore[untyped-decorator, unused-ignore]
def _main(grid: Grid, context: Context) -> None:
    serve(grid, context, run)
