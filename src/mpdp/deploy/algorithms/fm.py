"""Deploying paper 000's functional mechanism (``fm-logistic``, ``fm-linear``): K column holders and a server.

Processes: ``party0`` .. ``party{K-1}`` (each holds its own columns; the label party also the labels and the
public constant column of the intercept) and ``server`` (no data: it sends the plan, deals the matrix triples
with the ``shares`` backend, sums the noisy coefficients and solves). The roles are
:class:`~mpdp.learning.functional_mechanism.parties.FMDataParty` and
:class:`~mpdp.learning.functional_mechanism.parties.FMServer`, built as
:func:`~mpdp.learning.functional_mechanism.parties.run_vertical_fm` builds them in memory. Each column holder's
ledger is charged its own guarantee ``eps^(k)`` of the public plan before it connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mpdp.datasets.holdings import PartyData, schema_of
from mpdp.datasets.partition import vertical_by_groups, vertical_by_sizes
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, explain
from mpdp.learning.functional_mechanism.noise import FMPlan, plan_for_columns
from mpdp.learning.functional_mechanism.objective import QuadraticObjective
from mpdp.learning.functional_mechanism.parties import SERVER, FMDataParty, FMServer, party_name
from mpdp.learning.functional_mechanism.release import FMResult, SolveSettings
from mpdp.learning.functional_mechanism.solver import SolveResult
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.run import RunConfig

__all__ = ["FMDeployment"]

def _settings(public: Mapping[str, Any]) -> SolveSettings:
    trim = public["trim"]
    return SolveSettings(ridge_factor=float(public["ridge"]), trim_factor=None if trim is None else float(trim))


def _plan(public: Mapping[str, Any]) -> FMPlan:
    """The plan the estimator makes (``plan_for``), from the public parameters: no estimator (and no
    scikit-learn) in a party's process."""
    return plan_for_columns(public["objective"], int(public["d"]), partition=[list(c) for c in public["columns"]],
                            label_party=int(public["label_party"]), fit_intercept=bool(public["intercept"]),
                            row_l1=None if public["row_l1"] is None else tuple(public["row_l1"]),
                            epsilon=float(public["epsilon"]))


class FMDeployment(AlgorithmDeployment):
    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        # the launcher's side builds the estimator mpdp run builds (the parties' side never imports it)
        from mpdp.learning.functional_mechanism.experiments import fm_estimator, fm_options

        objective = "logistic" if algorithm == "fm-logistic" else "linear"
        opts = fm_options(config.options)
        train = config.train
        if config.partition is not None:
            part = vertical_by_groups(train, [list(g) for g in config.partition], label_party=config.label_party)
        else:
            part = vertical_by_sizes(train, parties=config.parties, label_party=config.label_party)
        backend = config.backend or "shares"
        model = fm_estimator(objective, train, part.columns, part.label_party, config.epsilon, backend, config.rng,
                             opts)
        settings = model.settings or SolveSettings()
        public = {
            "objective": objective, "epsilon": config.epsilon, "backend": backend,
            "columns": [list(map(int, c)) for c in part.columns], "label_party": part.label_party,
            "row_l1": None if model.row_l1 is None else [float(v) for v in model.row_l1],
            "ridge": settings.ridge_factor, "trim": settings.trim_factor, "intercept": model.fit_intercept,
            "d": train.d, "schema": schema_of(train),
        }
        names = (*tuple(party_name(k) for k in range(part.parties)), SERVER)
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
        k = int(party.removeprefix("party"))
        return PrivacyCost(epsilon=_plan(public).per_party_epsilon()[k], mechanism="laplace")

    def run_party(self, ctx: PartyContext) -> None:
        public = ctx.public
        plan = _plan(public)
        names = (*tuple(party_name(k) for k in range(plan.partition.parties)), SERVER)
        backend = str(public["backend"])
        role: FMDataParty | FMServer
        if ctx.name == SERVER:
            role = FMServer(plan, _settings(public), backend=backend)
        else:
            if ctx.data is None:
                raise ParameterError(explain(f"data of {ctx.name}", None, "its columns", "give it its data file"))
            k = names.index(ctx.name)
            label = int(public["label_party"])
            X = ctx.data.X
            if public["intercept"] and k == label:  # the public constant column the label party holds
                X = np.hstack([X, np.ones((X.shape[0], 1))])
            role = FMDataParty(ctx.name, k, X, ctx.data.y if k == label else None, label_party=label,
                               backend=backend)
        ctx.session.run(role, ctx.root, names)

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
            return np.asarray(wire, dtype=np.float64)
        o, s = wire["objective"], wire["solve"]
        return FMResult(np.asarray(wire["weights"]), FMPlan.from_wire(wire["plan"]),
                        QuadraticObjective(float(o["constant"]), np.asarray(o["linear"]), np.asarray(o["quad"])),
                        SolveResult(np.asarray(s["weights"]), float(s["ridge"]), float(s["floor"]), int(s["kept"]),
                                    int(s["trimmed"]), float(s["min_eigenvalue"])),
                        float(wire["epsilon_spent"]), tuple(float(e) for e in wire["per_party_epsilon"]),
                        phases=dict(wire["phases"]))

