"""Paper 003's methods as parties that run apart (``mpc-gradp``, ``mpc-outp``, ``pathak``, the baselines
``local-outp``, ``local-objp``, ``local-gradp``, and their ``-ridge`` forms), and the report of a run.

Processes: ``party0`` .. ``party{m-1}`` (each holds its own training rows) and, for the MPC methods, the
aggregators ``agg0`` (also the aggregation server) .. ``agg{A-1}`` and, for the one-shot ones, the ``dealer`` of
the aggregators' MPC; for the local baselines, the ``server`` that averages what the parties release. Every party
runs the role its run's :class:`~mpdp.learning.distributed_erm.rounds.Schedule` gives it, under the root the
in-memory run gives it, so a seeded run draws the same noise in memory (``mpdp run``: these parties over the
in-memory transport) and deployed (``mpdp launch``, ``mpdp party``).

In memory a runtime data party may stand for a cohort of equal-size data parties (``--option cohort``; none
means 1,024): ``parties{a}-{b}`` holds their rows and computes each one's messages from that party's rows alone,
vectorised. One process per data party is ``cohort=1``, which :meth:`ERMDeployment.prepare` sets for a deployment
(and refuses another value), so the run to compare a deployment with is ``mpdp run ... --option cohort=1``.

Public parameters: the method, the task, the budget, the options (the spec's settings as
:meth:`~mpdp.learning.spec.options.Settings.to_public` writes them, read back by ``from_public``), the runtime
data parties and how many data parties each stands for, the dimension, the schema and its row-norm bound; the
record counts are the shared holdings'. A data party charges its ledger
:meth:`~mpdp.learning.distributed_erm.rounds.Schedule.cost` for its record count before it sends anything.

The analyst who holds the test set (the launcher, or ``mpdp run``) scores the released model and the non-private
optimum in :meth:`ERMDeployment.report`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.datasets.holdings import PartyData, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.common import DistributedFit, cohort_layout, curve_iterations
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup, equal_parts, loss_for, prepare
from mpdp.learning.distributed_erm.rounds import Schedule, perturbation_of, rng_path, setup_of
from mpdp.learning.distributed_erm.spec import ERMSettings, GradientSettings, method_of, settings_class
from mpdp.learning.spec.deployment import (
    AlgorithmDeployment,
    DeployPlan,
    PartyContext,
    PartyRelease,
    shared_parameters,
)
from mpdp.learning.spec.run import Curve, Metric, RunConfig, RunReport, timed
from mpdp.runtime.steps import RunRecord, communication

__all__ = ["ERMDeployment", "party_indices", "run_settings", "schedule_of"]

_NOTES = {"mpc": "the noise is calibrated to the smallest party's n(1) rows: a larger party's records get about "
                 "eps n(1) / n_j",
          "local": "each party perturbs its own release for its own rows: every party's records get eps"}


def run_settings(config: RunConfig) -> ERMSettings:
    """The run's options as its spec checked them (:meth:`~mpdp.learning.spec.AlgorithmSpec.configure`)."""
    settings = config.settings
    if not isinstance(settings, ERMSettings):
        raise ParameterError(explain("settings", type(settings).__name__, "paper 003's options (ERMSettings)",
                                     "build the RunConfig through the algorithm's spec (spec.configure)"))
    return settings


def party_indices(config: RunConfig) -> list[npt.NDArray[np.int64]]:
    """Each data party's training rows, in the order the parties run (smaller parties first): the CLI's
    ``--fractions``/``--anchor`` split, else :func:`~mpdp.learning.distributed_erm.problem.equal_parts`."""
    if not 1 <= config.parties <= config.train.n:
        raise ParameterError(explain("parties", config.parties, f"1..{config.train.n} (one record each at most)",
                                     "use at most as many parties as training records"))
    if config.row_partition is not None:
        return sorted((np.asarray(i, dtype=np.int64) for i in config.row_partition), key=len)
    return equal_parts(config.train, config.parties, rng=config.rng.spawn("rows"))


def schedule_of(public: Mapping[str, Any]) -> Schedule:
    """The run's schedule from the shared parameters (the public section and the holdings' record counts)."""
    method = method_of(str(public["method"]))
    settings = settings_class(method).from_public(public["settings"])
    clients = {str(name): int(count) for name, count in public["clients"].items()}
    records = {}
    for name, count in clients.items():
        rows = int((public["holdings"].get(name) or {}).get("rows", 0))
        if rows < count or rows % count:
            raise ShapeMismatchError(explain(f"rows of {name}", rows, f"a positive multiple of its {count} data "
                                             "parties", "use the shared section the launcher wrote"))
        records[name] = rows // count
    record = curve_iterations(settings.T) if isinstance(settings, GradientSettings) else None
    problem = ERMProblem(loss_for(str(public["task"])), lam=settings.lam)
    perturbation = perturbation_of(method, settings, float(public["epsilon"]), float(public["delta"]), record=record)
    return Schedule(method, problem, perturbation, setup_of(settings), clients, records, int(public["d"]))


class ERMDeployment(AlgorithmDeployment):
    def prepare(self, config: RunConfig) -> RunConfig:
        settings = run_settings(config)
        if settings.cohort is None:
            return dataclasses.replace(config, settings=settings.changed(cohort=1), options={**config.options,
                                                                                           "cohort": 1})
        if settings.cohort != 1:
            raise ParameterError(explain("--option cohort", settings.cohort, "1 (one process per data party)",
                                         "drop --option cohort, or compare with `mpdp run ... --option cohort=1`"))
        return config

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        method = method_of(algorithm)
        settings = run_settings(config)
        train = config.train
        indices = party_indices(config)
        data: dict[str, PartyData | None] = {}
        clients: dict[str, int] = {}
        records: dict[str, int] = {}
        for name, first, count in cohort_layout([len(i) for i in indices], settings.cohort):
            rows = indices[first] if count == 1 else np.concatenate(indices[first:first + count])
            data[name] = PartyData(name, np.ascontiguousarray(train.X[rows]), train.feature_names,
                                   np.ascontiguousarray(train.y[rows]))
            clients[name], records[name] = count, len(indices[first])
        public = {"method": method.value, "task": train.task, "epsilon": config.epsilon, "delta": config.delta,
                  "settings": settings.to_public(), "clients": clients, "d": train.d + 1,
                  "row_norm_bound": float(train.row_norm_bound), "schema": schema_of(train)}
        perturbation = perturbation_of(method, settings, config.epsilon, config.delta)
        parties = Schedule(method, ERMProblem(loss_for(train.task), lam=settings.lam), perturbation,
                           setup_of(settings), clients, records, train.d + 1).parties
        data.update({p: None for p in parties if p not in data})
        return DeployPlan(parties, public, data, rng_path(method), labels=frozenset(clients))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        if party not in public["clients"]:
            return None
        schedule = schedule_of(public)
        return schedule.cost(schedule.records[party])

    def run_party(self, ctx: PartyContext) -> None:
        schedule = schedule_of(ctx.public)
        group = self._group(ctx, schedule) if ctx.name in schedule.clients else None
        ctx.session.run(schedule.role(ctx.name, group, ctx.progress), ctx.root, schedule.parties)

    @staticmethod
    def _group(ctx: PartyContext, schedule: Schedule) -> PartyGroup:
        """The party's rows as its data parties' records: the public unit-ball map, an intercept, labels +-1."""
        public = ctx.public
        if ctx.data is None or ctx.data.y is None:
            raise ParameterError(explain(f"data of {ctx.name}", None, "its rows and labels", "give it its data file"))
        X = erm.add_intercept(ctx.data.X / float(public["row_norm_bound"]))
        y = erm.to_pm1(ctx.data.y) if public["task"] == "classification" else ctx.data.y.astype(np.float64)
        erm.require_unit_ball(X, y, name=f"records of {ctx.name}")
        count, n = schedule.clients[ctx.name], schedule.records[ctx.name]
        if X.shape != (count * n, schedule.d):
            raise ShapeMismatchError(explain(f"data of {ctx.name}", X.shape, f"({count * n}, {schedule.d}) with the "
                                             "intercept", "give it the rows the shared holdings list"))
        return PartyGroup(first=schedule.first(ctx.name), X=X.reshape(count, n, schedule.d), y=y.reshape(count, n))

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        if method_of(str(public["method"])).gradient and party in public["clients"] and isinstance(wire, list):
            return tuple(wire)
        return wire

    def receiver(self, public: Mapping[str, Any]) -> str | None:
        return schedule_of(public).holder

    def release(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> PartyRelease | None:
        """The released ``theta`` as the party that ends with it holds it (a gradient method's first data party,
        the server or ``agg0`` of a one-shot one), with the run's privacy."""
        schedule = schedule_of(public)
        if party != schedule.holder or not runs:
            return None
        theta, iterations, iterates = schedule.model({party: runs[-1].result})
        privacy = schedule.privacy()
        released = DistributedFit(schedule.method, theta, iterations, iterates, privacy, {}, 0.0)
        return PartyRelease(released, privacy.epsilon, privacy.delta, privacy.per_party)

    def report(self, config: RunConfig, plan: DeployPlan, outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        settings = run_settings(config)
        schedule = schedule_of(shared_parameters(plan))
        method = schedule.method
        theta, iterations, iterates = schedule.model({name: runs[-1].result for name, runs in outcomes.items()
                                                      if runs})
        privacy = schedule.privacy()
        traffic = communication(outcomes)
        seconds = max(sum(r.seconds for r in runs) for runs in outcomes.values())
        released = DistributedFit(method, theta, iterations, iterates, privacy, traffic, seconds)
        phases: dict[str, float] = {}
        with timed(phases, "baseline"):  # the non-private optimum the gap and the reference are measured from
            ev = prepare(config.train, config.test, lam=settings.lam).evaluator
        score = ev.score(theta)
        curves = []
        if method.gradient:
            xs = tuple(float(t) for t in iterations)
            curves = [Curve("optimality gap", xs, tuple(ev.optimality_gap(t) for t in iterates), "T",
                            "J(theta) - J(theta*)"),
                      Curve(f"test {ev.metric_name}", xs, tuple(ev.test_metric(t) for t in iterates), "T",
                            ev.metric_name)]
        return RunReport(
            algorithm=config.algorithm, dataset=config.train.name, parties=schedule.m, epsilon=config.epsilon,
            delta=config.delta, epsilon_spent=privacy.epsilon, delta_spent=privacy.delta,
            per_party_epsilon=privacy.per_party, metric=Metric(ev.metric_name, score.test_metric),
            non_private=Metric(ev.metric_name, ev.metric_star), seconds=seconds, communication=traffic,
            extra={"optimality_gap": score.optimality_gap, "relative_accuracy_loss": score.relative_accuracy_loss,
                   "n_min": schedule.n_min, "T": settings.T if isinstance(settings, GradientSettings) else None,
                   "party_rows": list(schedule.sizes), "privacy": privacy.details,
                   "per_party_note": _NOTES["local" if method.local else "mpc"]},
            curves=curves, released=released, phases=phases)
