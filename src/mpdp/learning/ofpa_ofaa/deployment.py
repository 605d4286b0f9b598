"""Paper 001's OFPA and OFAA as parties that run apart: data owners, an aggregation server, two aggregators.

Processes: ``party0`` .. ``party{K-1}`` (each owner holds its own rows and keeps its own
:class:`~mpdp.learning.ofpa_ofaa.parties.DataOwner`: its perturbation, its local minimiser), ``server``,
``aggregator0`` and ``aggregator1``. Every party runs its rounds with
:func:`~mpdp.learning.ofpa_ofaa.rounds.run_rounds`, the code the in-memory fit runs, under the root the
in-memory run gives it, so a seeded run draws the same noise in memory (``mpdp run``: this deployment's
parties over the in-memory transport) and deployed (``mpdp launch``, ``mpdp party``).

Public parameters: the algorithm's options (its spec's settings), the owners' names, the public bound on their
record counts (the weights' bound) and the schema; each owner validates its own rows against the schema, puts them
in the unit ball and calibrates its noise from the public settings and its own record count.

The analyst who holds the test set (the launcher, or ``mpdp run``) scores the released model and the
non-private reference (the same rounds without noise) in :meth:`OfpaDeployment.report`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mpdp.datasets.holdings import PartyData, dataset_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.sensitivities.ofpa_ofaa import intercept_weight, unit_ball_row_l1
from mpdp.errors import ParameterError, explain
from mpdp.learning.erm import to_pm1
from mpdp.learning.ofpa_ofaa.model import (
    FitResult,
    OfpaOfaaSettings,
    PreparedParties,
    calibrate,
    fit,
    one_hot_blocks,
    owner_cost,
    prepare_parties,
    prepare_rows,
)
from mpdp.learning.ofpa_ofaa.parties import DataOwner, Method, OwnerRows, average_spec, fixed_quadratic_mask
from mpdp.learning.ofpa_ofaa.rounds import AGGREGATORS, SERVER, RoundsOutcome, run_rounds, stop_after
from mpdp.learning.ofpa_ofaa.spec import OfaaSettings, OfpaSettings
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext, PartyRelease
from mpdp.learning.spec.run import Metric, RunConfig, RunReport, timed
from mpdp.protocols.aggregation import AggregateResult
from mpdp.runtime.steps import RunRecord, communication

__all__ = ["OfpaDeployment", "run_settings", "settings_of"]


def run_settings(config: RunConfig) -> OfpaOfaaSettings:
    """The run's settings: the spec's options (checked by ``mpdp run``) and the run's epsilon."""
    options = config.settings
    if not isinstance(options, OfaaSettings):
        raise ParameterError(explain("settings", type(options).__name__, "OFPA's or OFAA's options",
                                     "build the RunConfig through the algorithm's spec (spec.settings_from)"))
    return OfpaOfaaSettings.of(options, config.epsilon)


def settings_of(public: Mapping[str, Any]) -> OfpaOfaaSettings:
    """The run's settings from shared parameters holding the options (``"settings"``) and ``"epsilon"``."""
    options_class = OfpaSettings if "perturbation" in public["settings"] else OfaaSettings
    return OfpaOfaaSettings.of(options_class.from_public(public["settings"]), float(public["epsilon"]))


class OfpaDeployment(AlgorithmDeployment):
    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        settings = run_settings(config)
        options = config.settings.to_public() if config.settings is not None else {}
        parties = config.party_data()
        names = [f"party{k}" for k in range(len(parties))]
        public = {"settings": options, "epsilon": settings.epsilon, "owners": names,
                  "count_bound": 1 << max(1, max(p.n for p in parties).bit_length()),
                  "schema": schema_of(config.train)}
        data: dict[str, PartyData | None] = {
            name: PartyData(name, p.X, p.feature_names, p.y, p.values) for name, p in zip(names, parties, strict=True)}
        data.update({p: None for p in (SERVER, *AGGREGATORS)})
        return DeployPlan((*names, SERVER, *AGGREGATORS), public, data, ("algorithm",), labels=frozenset(names),
                          values=frozenset(names))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        return owner_cost(settings_of(public)) if party in public["owners"] else None

    def run_party(self, ctx: PartyContext) -> None:
        settings = settings_of(ctx.public)
        owners = list(ctx.public["owners"])
        dim = len(ctx.public["schema"]["features"]) + 1
        spec = average_spec(sorted(owners), dim, bound=settings.bound, count_bound=int(ctx.public["count_bound"]))
        owner = self._owner(ctx, settings, dim) if ctx.name in owners else None
        run_rounds(ctx.session, ctx.name, owners, spec, settings, ctx.root, dim, owner, ctx.progress)

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
        lam, scale, budget = calibrate(settings, settings.per_release, own.n, prepared,
                                       int(np.count_nonzero(rows.fixed)))
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

    def receiver(self, public: Mapping[str, Any]) -> str | None:
        return SERVER

    def release(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> PartyRelease | None:
        """The global parameters the server handed out after the last round, with each owner's charge (the
        calibrations, which need the owners' record counts, stay with the owners)."""
        if party != SERVER:
            return None
        rounds = RoundsOutcome([np.asarray(r.result, dtype=np.float64) for r in runs if not r.counted])
        if not rounds.thetas:
            return None
        settings = settings_of(public)
        cost = owner_cost(settings)
        spent = {name: math.inf if cost is None else cost.epsilon for name in public["owners"]}
        released = FitResult(theta=rounds.theta, rounds=len(rounds.thetas), converged=False, epsilon_spent=spent,
                             epsilon_per_release=settings.per_release, scales={}, lams={}, communication={},
                             seconds=0.0, changes=rounds.changes)
        return PartyRelease(released, max(spent.values()), 0.0, spent)

    def report(self, config: RunConfig, plan: DeployPlan, outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        settings = run_settings(config)
        parties = config.party_data()
        prepared = prepare_parties(parties)
        handed = [np.asarray(r.result, dtype=np.float64) for r in outcomes[SERVER] if not r.counted]
        rounds = RoundsOutcome(handed)
        rounds.converged = stop_after(len(handed) - 1, rounds.changes[-1], settings)
        released = self._fit_result(settings, prepared, rounds, communication(outcomes), plan)
        phases: dict[str, float] = {}
        with timed(phases, "baseline"):  # the same rounds without noise
            baseline = fit(prepared, OfpaOfaaSettings(method=Method.NONE, epsilon=math.inf), rng=config.rng.spawn("np"))
        Xt = prepare_rows(config.test.X, parties[0].row_norm_bound)
        return RunReport(
            algorithm=config.algorithm, dataset=config.train.name, parties=len(parties), epsilon=config.epsilon,
            delta=0.0, epsilon_spent=max(released.epsilon_spent.values()), delta_spent=0.0,
            per_party_epsilon=dict(released.epsilon_spent),
            metric=Metric("misclassification", released.misclassification(Xt, config.test.y)),
            non_private=Metric("misclassification", baseline.misclassification(Xt, config.test.y)),
            seconds=max(sum(r.seconds for r in runs) for runs in outcomes.values()),
            communication=dict(released.communication),
            extra={"rounds": released.rounds, "converged": released.converged, "noise": settings.noise,
                   "variant": settings.method, "epsilon_per_release": released.epsilon_per_release,
                   "laplace_scale": released.scales, "laplace_scale_degree1": released.scales_linear,
                   "lam": released.lams, "changes": released.changes},
            released=released, phases=phases)

    @staticmethod
    def _fit_result(settings: OfpaOfaaSettings, prepared: PreparedParties, rounds: RoundsOutcome,
                    traffic: dict[str, int], plan: DeployPlan) -> FitResult:
        """What the owners released, as the in-memory fit reports it: the public calibration of every owner."""
        fixed = int(np.count_nonzero(prepared.rows[0].fixed))
        calibrated = {name: calibrate(settings, settings.per_release, int(rows.X.shape[0]), prepared, fixed)
                      for name, rows in zip(prepared.names, prepared.rows, strict=True)}
        cost = owner_cost(settings)
        return FitResult(theta=rounds.theta, rounds=len(rounds.thetas), converged=rounds.converged,
                         epsilon_spent={n: math.inf if cost is None else cost.epsilon for n in calibrated},
                         epsilon_per_release=settings.per_release,
                         scales={n: c[1] for n, c in calibrated.items()}, lams={n: c[0] for n, c in calibrated.items()},
                         communication=traffic, seconds=0.0, changes=rounds.changes,
                         scales_linear={n: c[2].scale_linear for n, c in calibrated.items() if c[2] is not None})
