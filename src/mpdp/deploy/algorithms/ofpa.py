"""Deploying paper 001's OFPA and OFAA (``ofpa``, ``ofaa``): data owners, an aggregation server, two aggregators.

Processes: ``party0`` .. ``party{K-1}`` (each owner holds its own rows and keeps its own
:class:`~mpdp.learning.ofpa_ofaa.parties.DataOwner`: its perturbation, its local minimiser), ``server``,
``aggregator0`` and ``aggregator1`` (the secure weighted averaging of
:func:`~mpdp.learning.ofpa_ofaa.parties.secure_weighted_average`: the aggregation roles of
:mod:`mpdp.protocols.aggregation`). Each round is one aggregation among them all, with the root random source
``aggregate/<round>`` the in-memory loop gives it.

The in-memory loop holds every owner in one process and hands each the new global parameters directly; the
deployed server sends them to every other party after each round, in a run marked not counted: it appears in
the deployment's per-party bytes, not in the algorithm's communication, which stays the in-memory run's. All
parties apply the same stopping rule (:func:`~mpdp.learning.ofpa_ofaa.model.stop_after`) to the same numbers.

The non-private reference of ``mpdp run`` (the same loop without noise) runs in the launcher's memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mpdp.datasets.holdings import PartyData, dataset_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.sensitivities.ofpa_ofaa import intercept_weight, unit_ball_row_l1
from mpdp.errors import ParameterError, ProtocolError, explain
from mpdp.learning.erm import to_pm1
from mpdp.learning.ofpa_ofaa.experiments import run_settings
from mpdp.learning.ofpa_ofaa.model import (
    OfpaOfaaSettings,
    PreparedParties,
    calibrate,
    one_hot_blocks,
    prepare_rows,
    stop_after,
)
from mpdp.learning.ofpa_ofaa.parties import DataOwner, OwnerRows, average_spec, fixed_quadratic_mask, upload
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.run import RunConfig
from mpdp.protocols.aggregation import (
    AggregateResult,
    AggregationSpec,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
)
from mpdp.runtime import Comm

__all__ = ["OfpaDeployment"]

SERVER, AGGREGATORS = "server", ("aggregator0", "aggregator1")


def _settings(public: Mapping[str, Any]) -> OfpaOfaaSettings:
    s = public["settings"]
    return OfpaOfaaSettings(method=s["method"], epsilon=float(s["epsilon"]), lam=float(s["lam"]),
                            eta=float(s["eta"]), max_rounds=int(s["max_rounds"]), noise=str(s["noise"]))


def _order(owners: list[str]) -> tuple[str, ...]:
    """simulate_aggregation's role order: the server, the other aggregators, then the owners sorted."""
    return (SERVER, *AGGREGATORS, *sorted(owners))


class OfpaDeployment(AlgorithmDeployment):
    reference_in_memory = True

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        settings = run_settings(algorithm, config.options, config.epsilon)
        parties = config.party_data()
        names = [f"party{k}" for k in range(len(parties))]
        public = {"settings": {"method": settings.method, "epsilon": settings.epsilon, "lam": settings.lam,
                               "eta": settings.eta, "max_rounds": settings.max_rounds, "noise": settings.noise,
                               "bound": settings.bound},
                  "owners": names, "count_bound": 1 << max(1, max(p.n for p in parties).bit_length()),
                  "schema": schema_of(config.train)}
        data: dict[str, PartyData | None] = {
            name: PartyData(name, p.X, p.feature_names, p.y, p.values) for name, p in zip(names, parties, strict=True)}
        data.update({p: None for p in (SERVER, *AGGREGATORS)})
        return DeployPlan((*names, SERVER, *AGGREGATORS), public, data, ("algorithm",), labels=frozenset(names),
                          values=frozenset(names))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        settings = _settings(public)
        if party not in public["owners"] or settings.method == "none":
            return None  # fresh noise: at most max_rounds releases of epsilon / max_rounds, charged up front
        return PrivacyCost(epsilon=settings.epsilon, mechanism="laplace")

    def run_party(self, ctx: PartyContext) -> None:
        public = ctx.public
        settings = _settings(public)
        owners = list(public["owners"])
        order = _order(owners)
        dim = len(public["schema"]["features"]) + 1
        spec = average_spec(sorted(owners), dim, bound=settings.bound, count_bound=int(public["count_bound"]))
        owner = self._owner(ctx, settings, dim) if ctx.name in owners else None
        theta = np.zeros(dim)
        for rnd in range(settings.max_rounds):
            root = ctx.root.spawn(f"aggregate/{rnd}")
            result: Any
            if owner is not None:
                if settings.method != "none" and (rnd == 0 or settings.noise == "fresh"):
                    owner.draw_noise(f"round/{rnd}")
                result = ctx.session.run(self._client(spec, upload(owner.local_fit(theta), settings.bound), owner.n),
                                         root, order)
            elif ctx.name == SERVER:
                result = ctx.session.run(lambda c: aggregation_server(c, spec), root, order)
            else:
                result = ctx.session.run(lambda c: aggregation_aggregator(c, spec), root, order)
            new = ctx.session.run(self._model_hand_out(result), root, order, counted=False)
            change = float(np.linalg.norm(new - theta))
            theta = new
            if stop_after(rnd, change, settings):
                break

    @staticmethod
    def _client(spec: AggregationSpec, values: Any, n: int) -> Callable[[Comm], None]:
        return lambda comm: aggregation_client(comm, spec, values, np.array([float(n)]))

    @staticmethod
    def _model_hand_out(result: Any) -> Any:
        def role(comm: Comm) -> Any:
            if comm.name == SERVER:
                mean = np.asarray(result.mean, dtype=np.float64)
                comm.broadcast(mean, label="ofpa.model", to=comm.peers)
                return mean
            return np.asarray(comm.recv(SERVER, label="ofpa.model"), dtype=np.float64)

        return role

    @staticmethod
    def _owner(ctx: PartyContext, settings: OfpaOfaaSettings, dim: int) -> DataOwner:
        if ctx.data is None or ctx.data.y is None:
            raise ParameterError(explain(f"data of {ctx.name}", None, "its rows and labels", "give it its data file"))
        own = dataset_from_schema(ctx.public["schema"], ctx.data)
        bound = own.row_norm_bound  # public: from the schema (validates the party's one-hot blocks)
        rows = OwnerRows(prepare_rows(own.X, bound), to_pm1(own.y),
                         fixed_quadratic_mask(dim, one_hot_blocks(own), dim - 1))
        prepared = PreparedParties(names=(ctx.name,), rows=(rows,), row_bound=bound,
                                   row_l1=unit_ball_row_l1(dim, bound), intercept=intercept_weight(bound))
        per_release = settings.epsilon if settings.noise == "once" else settings.epsilon / settings.max_rounds
        lam, scale, budget = calibrate(settings, per_release, own.n, prepared, int(np.count_nonzero(rows.fixed)))
        return DataOwner(ctx.name, rows, settings.method, lam, scale, ctx.root.spawn(ctx.name), budget)

    def encode(self, party: str, result: Any) -> Any:
        if isinstance(result, AggregateResult):
            return {"total": result.total, "count": result.count, "dropped": result.dropped,
                    "weight_total": result.weight_total}
        return result

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        if party == SERVER and isinstance(wire, dict):
            return AggregateResult(np.asarray(wire["total"], dtype=np.float64), int(wire["count"]),
                                   {k: list(v) for k, v in wire["dropped"].items()},
                                   None if wire["weight_total"] is None else float(wire["weight_total"]))
        return wire

    def check(self, report: Any, deployed_runs: int) -> None:
        rounds = report.extra.get("rounds")
        if rounds != deployed_runs:
            raise ProtocolError(explain("rounds the driver's private fit ran", rounds,
                                        f"the {deployed_runs} the parties ran", "report this bug"))
        if not math.isfinite(report.epsilon_spent):  # pragma: no cover - the private fit always spends
            raise ProtocolError("the deployed fit reported an infinite spend")
