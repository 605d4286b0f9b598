"""Paper 003's MPC Grad P and MPC Out P as one Flower app: the data parties are ClientApps, the aggregators are
ClientApps, the ServerApp is the hub that relays and releases.

The run is the one :class:`~mpdp.learning.distributed_erm.rounds.Schedule` describes (the job carries the spec's
options as ``Settings.to_public`` writes them and the hub adds the clients' record counts): its calibration, each
client's charge (:meth:`~mpdp.learning.distributed_erm.rounds.Schedule.cost`, the charge every engine makes) and
the aggregators' random sources (:func:`~mpdp.learning.distributed_erm.rounds.party_path`).

* **MPC Grad P**: each of the T rounds is two Flower message rounds (:mod:`mpdp.flower.secagg`): the clients send
  their mean gradient at the current model, additively shared and sealed to the aggregators; the aggregators add
  their survivors' shares, each adds its own exact discrete Gaussian of the full sigma to its share
  (:func:`~mpdp.learning.distributed_erm.mpc.aggregator_gaussian`, the in-process draw) and sends the noisy share
  to the hub, which adds them: the only value ever opened is the noisy sum. The hub divides by the survivors and
  takes the step :func:`~mpdp.learning.distributed_erm.common.gd_step`. Flower starts a fresh ClientApp process
  for every message, so a seeded aggregator replays its earlier rounds' draws from its source before drawing
  round ``t``'s: its noise then equals the in-process run's round by round.
* **MPC Out P**: one secure average of the clients' regularised local minimisers (the in-process
  :meth:`~mpdp.learning.distributed_erm.problem.PartyGroup.local_minimizers`). In process the aggregators sample
  the discrete Laplace jointly inside an MPC session with a dealer, a protocol of many rounds; on Flower every
  round is a hub round (seconds each), so each aggregator instead adds a Pólya share of a distributed discrete
  Laplace of the same scale to its share (:func:`mpdp.protocols.distributed_laplace.add_distributed_laplace`
  with ``collusion=1``): one message each, no dealer. The release is exactly ``epsilon``-DP towards the hub, any
  client and any single aggregator (the charge's delta, which covers the in-process sampler's distance from the
  exact discrete Laplace, is then conservative); the price is ``A / (A - 1)`` times the in-process noise
  variance (twice with two aggregators).

Trust model: paper 003's, with the hub in agg0's place as the party that learns the opened value. The noise is
made by the aggregators, never by the clients, so a dropped client removes no noise: the sensitivity is per
record and the noise is the full scale whoever survives (accounting unchanged). The hub sees sealed shares,
receipts and noisy shares; a coalition of the hub and one aggregator knows the opened value minus one
aggregator's noise, which is what agg0 (the server) knows in process. Clients learn the released values.

Accounting: every client charges its own ledger the schedule's cost for its record count once, before its
first contribution; an exhausted ledger refuses (:class:`~mpdp.errors.BudgetExceededError`) and the run aborts
before anything about that client is released. The calibration uses ``n(1)``, the smallest client's record
count (public in paper 003's setting, reported by each client at the start).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.grid import grid_l1_sensitivity
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.flower.hub import Tally, aggregator_key, check, client_app_for, introduce, result_of, serve
from mpdp.flower.hub import survivors as hub_survivors
from mpdp.flower.messages import exchange
from mpdp.flower.nodes import charge_once, client_rows, identity, noise_source, open_ledger
from mpdp.flower.secagg import SERVER, aggregator_step, client_step, noisy_total, server_combine
from mpdp.learning.distributed_erm.common import gd_step
from mpdp.learning.distributed_erm.deployment import ERMDeployment
from mpdp.learning.distributed_erm.mpc import InMPCNoise, MPCSetup, aggregator_gaussian, output_l1
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup, loss_for
from mpdp.learning.distributed_erm.rounds import Schedule, party_path, perturbation_of
from mpdp.learning.distributed_erm.spec import method_of, settings_class
from mpdp.protocols.aggregation import AggregationSpec, AggregatorShare
from mpdp.protocols.distributed_laplace import add_distributed_laplace, distributed_laplace_cost
from mpdp.randomness import RandomSource

__all__ = ["client_app", "erm_spec", "run", "schedule_of", "server_app"]

#: aggregators whose shares an observer may know without losing MPC Out P's guarantee (Flower's Laplace)
COLLUSION = 1


# -- public parameters, identical on every party ---------------------------------------------------------------
def schedule_of(public: Mapping[str, Any]) -> Schedule:
    """The run's schedule: every client its own data party, the record counts the hub collected."""
    method = method_of(str(public["method"]))
    settings = settings_class(method).from_public(public["settings"], source="Flower job")
    rows = {str(c): int(n) for c, n in public["rows"].items()}
    record = tuple(int(t) for t in public.get("record") or ()) or None
    perturbation = perturbation_of(method, settings, float(public["epsilon"]), float(public["delta"]),
                                   record=record, stop_after=public.get("stop_after"))
    setup = MPCSetup(aggregators=len(public["aggregators"]), frac_bits=int(public["frac_bits"]),
                     max_dropouts=int(public["max_dropouts"]))
    return Schedule(method, ERMProblem(loss_for(str(public["task"])), lam=settings.lam), perturbation, setup,
                    dict.fromkeys(rows, 1), rows, int(public["d"]))


def erm_spec(public: Mapping[str, Any]) -> AggregationSpec:
    """The aggregation of one vector per client of ``d`` entries (bounded by ``G``, or ``G / lam`` for a
    minimiser), shares kept for the aggregators' noise."""
    schedule = schedule_of(public)
    problem = schedule.problem
    bound = problem.G if schedule.method.gradient else problem.G / problem.lam
    return AggregationSpec(server=SERVER, aggregators=tuple(public["aggregators"]),
                           clients={str(c): 1 for c in public["clients"]}, dim=schedule.d, bound=bound,
                           max_dropouts=int(public["max_dropouts"]), reveal=False,
                           fmt=FixedPointFormat(ring_bits=64, frac_bits=int(public["frac_bits"])))


def _laplace_scale(schedule: Schedule) -> Fraction:
    """MPC Out P's Laplace scale of the sum (real units, exact): the grid-inflated l1 sensitivity over epsilon."""
    f, d = schedule.setup.frac_bits, schedule.d
    units = grid_l1_sensitivity(output_l1(schedule.method, schedule.problem, schedule.m, schedule.n_min, d), f, d)
    return Fraction(units) / (Fraction(2) ** f * Fraction(schedule.perturbation.epsilon))


def _ledger_method(schedule: Schedule) -> str:
    """How a client's ledger composes its runs: zCDP (or the privacy-loss curve, for the tight accountant) for
    the Gaussian runs, basic for the pure-DP release (every charge composes on any of them)."""
    if not schedule.method.gradient:
        return "basic"
    return "pld" if schedule.gradient_settings.accountant == "tight" else "zcdp"


# -- the nodes ----------------------------------------------------------------------------------------------------
_RUN_STATE = "mpdp-erm-run"


def _remembered(context: Context, key: str) -> Any:
    """What this node worked out earlier in the run (its own Flower state, kept by its SuperNode across the
    fresh ClientApp process of each message): whether it charged its ledger, the noise's sigma. Saves every
    later message the calibration (scipy's root finders: a tenth of a second of CPU and their import)."""
    record = context.state.get(_RUN_STATE)
    return record.get(key) if isinstance(record, ConfigRecord) else None


def _remember(context: Context, key: str, value: float | bool) -> None:
    record = context.state.get(_RUN_STATE)
    known = dict(record) if isinstance(record, ConfigRecord) else {}
    context.state[_RUN_STATE] = ConfigRecord({**known, key: value})


def _contribute(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public = body["public"]
    step = int(body.get("t", 1))
    if context.node_config.get("crash_at") == step:  # fault injection (tests): die mid-round, no reply
        os._exit(1)
    X, y = client_rows(context.node_config)
    schedule = schedule_of(public)
    if X.shape[1] != schedule.d:
        raise ShapeMismatchError(explain(f"{me.name}'s features", X.shape[1], f"{schedule.d} columns like the "
                                         "other clients", "encode the data with the federation's schema"))
    if _remembered(context, "charged") is None:  # the run's cost, once, before the client's first contribution
        cost = schedule.cost(int(X.shape[0]))
        ledger = open_ledger(context.node_config, me.name, epsilon=max(float(public["epsilon"]), cost.epsilon),
                             delta=max(float(public["delta"]), cost.delta), method=_ledger_method(schedule))
        charge_once(ledger, cost, f"flower/{context.run_id}/{schedule.method}")
        _remember(context, "charged", True)
    group = PartyGroup(first=0, X=X[None], y=y[None])
    values = (group.local_gradients(schedule.problem, np.asarray(body["theta"]))[0] if schedule.method.gradient
              else group.local_minimizers(schedule.problem)[0])
    keys = {str(a): bytes(k) for a, k in body["public_keys"].items()}
    return {"boxes": client_step(erm_spec(public), me.name, values, keys, run=str(context.run_id), step=step,
                                 rng=RandomSource.fresh())}


def _aggregate(body: Mapping[str, Any], context: Context) -> dict[str, Any]:
    me = identity(context.node_config)
    public, t = body["public"], int(body.get("t", 1))
    schedule, spec = schedule_of(public), erm_spec(public)
    share, comm, endpoint = aggregator_step(spec, me.name, aggregator_key(context), body["boxes"],
                                            body["survivors"], run=str(context.run_id), step=t,
                                            rng=RandomSource.fresh())
    if not isinstance(share, AggregatorShare):  # pragma: no cover - reveal=False always returns a share
        raise ParameterError("the aggregation returned no share")
    seeded = noise_source(context.node_config, party_path(schedule.method, me.name))
    rng = seeded or RandomSource.fresh()
    if schedule.method.gradient:
        sigma = _remembered(context, "sigma")
        if not isinstance(sigma, float):
            sigma = schedule.calibration.sigma
            _remember(context, "sigma", sigma)
        noise = InMPCNoise("gaussian", sigma)
        if seeded is not None:  # the draws of rounds 1 .. t-1 come first in the source, as in process
            for _ in range(1, t):
                aggregator_gaussian(spec.fmt.ring.zeros((spec.width,)), noise, schedule.setup, rng=rng)
        noisy = aggregator_gaussian(share.share, noise, schedule.setup, rng=rng)
    else:
        noisy = add_distributed_laplace(share.share, scale=_laplace_scale(schedule), parties=len(spec.aggregators),
                                        fmt=spec.fmt, collusion=COLLUSION, rng=rng)
    comm.send(SERVER, noisy, label="noisy-share")
    return {"messages": endpoint.outbox[SERVER]}


client_app = client_app_for({"contribute": _contribute, "aggregate": _aggregate})


# -- the hub --------------------------------------------------------------------------------------------------------
def _round(grid: Grid, job: Mapping[str, Any], nodes: Mapping[str, int], public: Mapping[str, Any],
           keys: Mapping[str, bytes], t: int, theta: Any, rng: RandomSource,
           tally: Tally) -> tuple[Any, dict[str, Any]]:
    """One secure release: the clients' contributions, the aggregators' noisy shares, the opened mean."""
    spec = erm_spec(public)
    contribute = exchange(grid, {c: nodes[c] for c in job["clients"]},
                          {c: {"step": "contribute", "t": t, "theta": theta, "public": public, "public_keys": keys}
                           for c in job["clients"]}, timeout=float(job["round_timeout"]), group=f"contribute-{t}")
    survivors = hub_survivors(spec, contribute, rng=rng)
    aggregate = exchange(grid, {a: nodes[a] for a in spec.aggregators},
                         {a: {"step": "aggregate", "t": t, "public": public, "survivors": survivors,
                              "boxes": {c: r["boxes"][a] for c, r in contribute.replies.items()}}
                          for a in spec.aggregators}, timeout=float(job["round_timeout"]), group=f"aggregate-{t}")
    check(aggregate)
    tally.add(contribute)
    tally.add(aggregate)
    share, comm = server_combine(spec, {a: r["messages"] for a, r in aggregate.replies.items()}, survivors, rng=rng)
    record = {"t": t, "survivors": share.count,
              "node_errors": {p: (e.reason or str(e.code))[:300] for p, e in contribute.failed.items()},
              "dropped": sorted(set(job["clients"]) - set(contribute.replies)),
              "seconds": contribute.seconds + aggregate.seconds}
    return noisy_total(spec, comm) / share.count, record


def run(grid: Grid, job: Mapping[str, Any]) -> dict[str, Any]:
    """The hub's whole run; returns its result in the deployed parties' form (:func:`~mpdp.flower.hub.result_of`):
    a gradient method's data parties hold the model and its recorded iterates, MPC Out P's ``agg0`` (the party
    that opens the release when deployed) the released model."""
    start = time.perf_counter()
    nodes, info = introduce(grid, job)
    sizes = {c: int(info[c]["rows"]) for c in job["clients"]}
    public = {k: job[k] for k in ("method", "settings", "task", "d", "epsilon", "delta", "frac_bits", "aggregators",
                                  "clients", "max_dropouts", "stop_after", "record")}
    public["rows"] = sizes
    schedule = schedule_of(public)
    keys = {a: bytes(info[a]["public_key"]) for a in job["aggregators"]}
    rng = RandomSource.fresh()
    theta = np.zeros(schedule.d)
    iterates: list[list[float]] = []
    rounds: list[dict[str, Any]] = []
    tally = Tally()
    steps = schedule.gradient_settings.iterations if schedule.method.gradient else 1
    for t in range(1, steps + 1):
        released, record = _round(grid, job, nodes, public, keys, t, theta, rng, tally)
        if schedule.method.gradient:
            theta = gd_step(theta, released, schedule.problem, schedule.gradient_settings.eta)
            if t in schedule.gradient_settings.recorded:
                iterates.append(theta.tolist())
        else:
            theta = released
        rounds.append(record)
    results: dict[str, Any] = ({c: [theta.tolist(), iterates] for c in job["clients"]} if schedule.method.gradient
                               else {job["aggregators"][0]: theta.tolist()})
    extra: dict[str, Any] = {}
    if not schedule.method.gradient:  # Flower's distributed Laplace (module docstring)
        scale = _laplace_scale(schedule)
        mechanism = distributed_laplace_cost(sensitivity=output_l1(schedule.method, schedule.problem, schedule.m,
                                                                   schedule.n_min, schedule.d),
                                             scale=scale, parties=schedule.setup.aggregators, dim=schedule.d,
                                             frac_bits=schedule.setup.frac_bits, collusion=COLLUSION,
                                             known_shares=COLLUSION)
        extra["privacy"] = {"epsilon_distributed_laplace": mechanism.epsilon,
                            "laplace_scale_of_sum_per_aggregator": float(scale),
                            "laplace_scale_of_average_total": float(scale) * math.sqrt(schedule.setup.aggregators)
                            / rounds[-1]["survivors"], "collusion": COLLUSION,
                            "aggregators": schedule.setup.aggregators, "frac_bits": schedule.setup.frac_bits}
    return result_of(ERMDeployment(), tally, results, time.perf_counter() - start, rounds=rounds,
                     bytes_per_client=tally.client_bytes(job["clients"]), **extra)


server_app = ServerApp()


@server_app.main()  # type: ignore[untyped-decorator, unused-ignore]
def _main(grid: Grid, context: Context) -> None:
    serve(grid, context, run)
