"""Paper 000's functional mechanism as parties (``fm-logistic``, ``fm-linear``): K column holders and a server.

Parties: ``party0`` .. ``party{K-1}`` (each holds its own columns; the label party also the labels and the
public constant column of the intercept) and ``server`` (no data: it sends the plan, deals the matrix triples
with the ``shares`` backend, sums the noisy coefficients and solves). Their roles are
:class:`~mpdp.learning.functional_mechanism.parties.FMDataParty` and
:class:`~mpdp.learning.functional_mechanism.parties.FMServer`, the roles the estimators run
(:func:`~mpdp.learning.functional_mechanism.parties.run_vertical_fm`). ``mpdp run`` runs them in memory and
``mpdp launch`` one process each, from the same plan (:meth:`FMDeployment.plan`): one protocol run, its random
sources the run's own (``rng_path`` ``("algorithm",)``), so a seeded deployment draws what memory draws.

Options travel as the spec's settings (``public["settings"]``, :meth:`~mpdp.learning.spec.Settings.to_public`).
Privacy: each column holder's ledger is charged its own guarantee ``eps^(k)`` of the released plan
(:func:`~mpdp.learning.functional_mechanism.parties.party_cost`) before it connects; the report's
``per_party_epsilon`` is those costs and its ``epsilon_spent`` the release's cost on D (the plan's total).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from mpdp.datasets.holdings import PartyData, schema_dataset, schema_of
from mpdp.datasets.partition import vertical_by_groups, vertical_by_sizes
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.learning.functional_mechanism.noise import FMPlan, plan_for_columns
from mpdp.learning.functional_mechanism.objective import QuadraticObjective, attribute_l1_bounds
from mpdp.learning.functional_mechanism.parties import (
    BACKENDS,
    PEER_TIMEOUT,
    SERVER,
    FMDataParty,
    FMServer,
    party_cost,
    party_name,
    released_plan,
)
from mpdp.learning.functional_mechanism.release import FMResult, SolveSettings
from mpdp.learning.functional_mechanism.solver import SolveResult
from mpdp.learning.functional_mechanism.spec import FMLinearSettings, FMLogisticSettings, FMSettings, settings_of
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext, PartyRelease
from mpdp.learning.spec.run import Metric, RunConfig, RunReport, timed
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.steps import RunRecord, communication

__all__ = ["FMDeployment", "FMLinearDeployment", "FMLogisticDeployment"]


def _names(public: Mapping[str, Any]) -> tuple[str, ...]:
    """Every party in the protocol's order: the column holders, then the server."""
    return (*tuple(party_name(k) for k in range(len(public["columns"]))), SERVER)


class FMDeployment(AlgorithmDeployment):
    """The parties of one objective's run (module docstring); :attr:`settings` is the spec's settings class."""

    settings: ClassVar[type[FMSettings]]

    def public_settings(self, public: Mapping[str, Any]) -> FMSettings:
        """The run's options from the shared parameters (checked as ``--option`` is)."""
        return self.settings.from_public(public["settings"])

    def fm_plan(self, public: Mapping[str, Any]) -> FMPlan:
        """The public plan the estimator makes (``plan_for``), from the shared parameters, with the record count
        every party was charged for (no estimator, hence no scikit-learn, in a party's process)."""
        plan = plan_for_columns(self.settings.objective, int(public["d"]),
                                partition=[list(c) for c in public["columns"]],
                                label_party=int(public["label_party"]),
                                fit_intercept=self.public_settings(public).intercept,
                                row_l1=None if public["row_l1"] is None else tuple(public["row_l1"]),
                                epsilon=float(public["epsilon"]))
        return released_plan(plan, int(public["records"]), str(public["backend"]))

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        settings = settings_of(config, self.settings)
        train = config.train
        if config.partition is not None:
            part = vertical_by_groups(train, [list(g) for g in config.partition], label_party=config.label_party)
        else:
            part = vertical_by_sizes(train, parties=config.parties, label_party=config.label_party)
        row_l1 = attribute_l1_bounds(train, part.columns) if settings.l1 == "attributes" else None
        public = {
            "epsilon": config.epsilon, "backend": config.backend or BACKENDS[0],
            "columns": [list(map(int, c)) for c in part.columns], "label_party": part.label_party,
            "row_l1": None if row_l1 is None else [float(v) for v in row_l1],
            "d": train.d, "records": train.n, "schema": schema_of(train), "settings": settings.to_public(),
        }
        names = _names(public)
        data: dict[str, PartyData | None] = {SERVER: None}
        for k, cols in enumerate(part.columns):
            idx = list(map(int, cols))
            data[party_name(k)] = PartyData(party_name(k), np.ascontiguousarray(train.X[:, idx]),
                                            tuple(train.feature_names[i] for i in idx),
                                            train.y if k == part.label_party else None)
        return DeployPlan(names, public, data, ("algorithm",), labels=frozenset({party_name(part.label_party)}))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        if party == SERVER:
            return None
        return party_cost(self.fm_plan(public), _names(public).index(party))

    def execution(self, config: RunConfig) -> Mapping[str, Any]:
        return {"timeout": PEER_TIMEOUT}

    def spent(self, public: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
        """The release's epsilon on D (the plan's total) and each column holder's charge (:meth:`cost`)."""
        per_party = {name: getattr(self.cost(public, name), "epsilon", 0.0) for name in _names(public)[:-1]}
        return sum(c.epsilon for c in self.fm_plan(public).costs()), per_party

    def estimator(self, public: Mapping[str, Any], train: Any, rng: RandomSource) -> Any:
        """The estimator of the run's plan (what ``mpdp run`` fits), to adopt the server's result."""
        from mpdp.learning.functional_mechanism.model import fm_estimator

        return fm_estimator(train, public["columns"], int(public["label_party"]), float(public["epsilon"]),
                            str(public["backend"]), rng, self.public_settings(public))

    def receiver(self, public: Mapping[str, Any]) -> str | None:
        return SERVER

    def release(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> PartyRelease | None:
        """The server's solved model, adopted by the run's estimator on the public schema."""
        if party != SERVER or len(runs) != 1:
            return None
        spent, per_party = self.spent(public)
        model = self.estimator(public, schema_dataset(public["schema"]), RandomSource.fresh()).adopt(
            runs[0].result, int(public["d"]))
        return PartyRelease(model, spent, 0.0, per_party)

    def run_party(self, ctx: PartyContext) -> None:
        public = ctx.public
        plan = self.fm_plan(public)
        names = _names(public)
        backend = str(public["backend"])
        if ctx.name == SERVER:
            settings = self.public_settings(public)
            solve = SolveSettings(ridge_factor=settings.ridge, trim_factor=settings.trim_factor())
            ctx.session.run(FMServer(plan, solve, backend=backend, progress=ctx.progress), ctx.root, names)
            return
        if ctx.data is None:
            raise ParameterError(explain(f"data of {ctx.name}", None, "its columns", "give it its data file"))
        k = names.index(ctx.name)
        label = plan.partition.label_party
        X = ctx.data.X
        if self.public_settings(public).intercept and k == label:  # the public constant column of the label party
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        role = FMDataParty(ctx.name, k, X, ctx.data.y if k == label else None, label_party=label, backend=backend,
                           progress=ctx.progress)

        def holder(comm: Comm) -> dict[str, Any]:  # the model it received and how long each phase took
            return {"weights": role.run(comm), "timings": dict(role.timings)}

        ctx.session.run(holder, ctx.root, names)

    def encode(self, party: str, result: Any) -> Any:
        if party != SERVER:
            return result
        r: FMResult = result
        s = r.solve
        return {"weights": r.weights, "plan": r.plan.to_wire(),
                "objective": {"constant": float(r.objective.constant), "linear": r.objective.linear,
                              "quad": r.objective.quad},
                "solve": {"weights": s.weights, "ridge": s.ridge, "floor": s.floor, "kept": s.kept,
                          "trimmed": s.trimmed, "min_eigenvalue": s.min_eigenvalue},
                "epsilon_spent": float(r.epsilon_spent), "per_party_epsilon": [float(e) for e in r.per_party_epsilon],
                "phases": {k: float(v) for k, v in r.phases.items()}}

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        if party != SERVER:
            return {"weights": np.asarray(wire["weights"], dtype=np.float64),
                    "timings": {str(k): float(v) for k, v in dict(wire["timings"]).items()}}
        o, s = wire["objective"], wire["solve"]
        return FMResult(np.asarray(wire["weights"]), FMPlan.from_wire(wire["plan"]),
                        QuadraticObjective(float(o["constant"]), np.asarray(o["linear"]), np.asarray(o["quad"])),
                        SolveResult(np.asarray(s["weights"]), float(s["ridge"]), float(s["floor"]), int(s["kept"]),
                                    int(s["trimmed"]), float(s["min_eigenvalue"])),
                        float(wire["epsilon_spent"]), tuple(float(e) for e in wire["per_party_epsilon"]),
                        phases=dict(wire["phases"]))

    def report(self, config: RunConfig, plan: DeployPlan,
               outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        """The released model scored on the test set beside the non-private reference; privacy from
        :meth:`cost` (per party) and the plan's release cost on D (the total)."""
        from mpdp.learning.functional_mechanism.model import non_private_score, paper_metric

        start = time.perf_counter()
        public = plan.public
        settings = self.public_settings(public)
        names = _names(public)[:-1]
        for name in (*names, SERVER):
            if len(outcomes.get(name, ())) != 1:
                raise MalformedMessageError(explain(f"runs of {name}", len(outcomes.get(name, ())), "one protocol "
                                                    "run", "run every party of the plan once"))
        result: FMResult = outcomes[SERVER][0].result
        holders = [outcomes[name][0].result for name in names]
        for name, held in zip(names, holders, strict=True):
            if not np.array_equal(held["weights"], result.weights):
                raise MalformedMessageError(explain(f"model {name} received", "other weights",
                                                    "the server's release", "report this bug"))
        seconds = max(sum(r.seconds for r in runs) for runs in outcomes.values())
        result.communication = communication(outcomes)
        result.phases["total"] = seconds
        for phase in ("local", "cross", "noise"):  # the slowest party sets the pace of each phase
            result.phases[phase] = max(held["timings"].get(phase, 0.0) for held in holders)
        train, test = config.train, config.test
        model = self.estimator(public, train, config.rng).adopt(result, train.d, seconds=seconds)
        metric = "accuracy" if settings.objective == "logistic" else "mse"
        spent, per_party = self.spent(public)  # per party: the ledgers' charge
        phases: dict[str, float] = {}
        with timed(phases, "baseline"):
            reference = non_private_score(settings.objective, train, test)
        return RunReport(
            algorithm=config.algorithm, dataset=train.name, parties=len(names), epsilon=config.epsilon,
            delta=0.0, epsilon_spent=spent, delta_spent=0.0, per_party_epsilon=per_party,
            metric=Metric(metric, paper_metric(model, test.X, test.y)), non_private=Metric(metric, reference),
            seconds=seconds + time.perf_counter() - start, communication=dict(result.communication),
            extra={"backend": public["backend"], "protocol_phases": result.phases,
                   "partition": [list(held.features) for held in plan.data.values() if held is not None],
                   "row_l1": list(result.plan.party_l1 or ()), "trimmed_directions": result.solve.trimmed},
            released=model, phases=phases)


class FMLogisticDeployment(FMDeployment):
    settings = FMLogisticSettings


class FMLinearDeployment(FMDeployment):
    settings = FMLinearSettings
