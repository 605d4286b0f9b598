"""Paper 004's parties (``pfds``, ``pfds-s``, ``pfds-minus``, ``dp-pred``, ``np-agt``): one per agent, run by
every engine.

``mpdp run`` runs them in one process (:func:`~mpdp.learning.spec.memory.run_in_memory`), ``mpdp launch`` one
process per agent; both plan the run with :meth:`PfdsDeployment.plan`, run :meth:`PfdsDeployment.run_party` for
every agent and build the report with :meth:`PfdsDeployment.report` from the agents' results, so a seeded
deployment reports what the in-memory run reports.

Parties: ``agent<k>`` for every agent holding records (paper 004's distance-to-anchor split from
``rng.spawn("partition")``, or the user's ``--fractions`` / ``--anchor`` split), each with only its own rows
(attribute view and labels). There is no server: the agents are peers.

* ``pfds``, ``pfds-s``, ``pfds-minus``: every agent runs its :class:`~mpdp.learning.pfds.model.PFDSAgent` (the
  trees and the labelled synthetic records go peer to peer), then, if it is one of the evaluated agents, trains
  its predictor on its own plus the shared records and returns its test error on the analyst's held-out records
  (``evaluation.csv`` when deployed, pinned by a digest in the shared section). Its predictor never leaves it.
* ``np-agt``: each evaluated agent fits on its own records and returns its test error; nothing is sent.
* ``dp-pred``: each sharer releases its DP predictor (objective perturbation) to the analyst, who votes them
  on the held-out records.

The shared section carries the options as :meth:`~mpdp.learning.spec.options.Settings.to_public`; every party
reads them back with the spec's settings class and resolves the data-dependent defaults with
:func:`~mpdp.learning.pfds.model.params_for`.

Privacy: :meth:`PfdsDeployment.cost` (:func:`~mpdp.learning.pfds.spec.agent_cost`, paper 004's Theorem 3.3) is
what every engine charges each agent: a deployed agent's own ledger before it connects, the report's
``per_party_epsilon``, the estimator's ledger. The run's in-process ledger, whose budget is that charge, refuses
any release beyond it. A returned test error is evaluation output about the agent's non-private predictor
(:mod:`mpdp.learning.pfds.scoring`), as in the paper's experiments; the agents that are not evaluated return
only what they released.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mpdp.datasets.holdings import PartyData, attributes_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.learning import erm
from mpdp.learning.pfds import baselines
from mpdp.learning.pfds.evaluation import (
    Setting,
    agent_ledger,
    dp_pred_error,
    mean_error,
    released_records,
    run_label,
    split_agents,
    variant_params,
    votes_source,
)
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, params_for
from mpdp.learning.pfds.schema import Schema, features
from mpdp.learning.pfds.scoring import AgentEvaluation, DPPredSharer, LocalAgent, loss_for
from mpdp.learning.pfds.spec import (
    SETTINGS,
    SHARING,
    AgentSettings,
    DPPredSettings,
    Method,
    PFDSVariantSettings,
    agent_cost,
    dp_pred_lam_for,
    settings_of,
)
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext, PartyRelease
from mpdp.learning.spec.run import Metric, RunConfig, RunReport, timed
from mpdp.runtime.steps import RunRecord, communication

__all__ = ["PfdsDeployment", "PfdsRun"]


@dataclass(frozen=True)
class PfdsRun:
    """What every party and the analyst read off the shared section: the method, its options, the parameters
    they resolve to on the public schema, the loss, and who the agents, sharers and evaluated agents are."""

    method: Method
    epsilon: float
    settings: AgentSettings
    params: PFDSParams
    schema: Schema
    loss: str
    agents: tuple[str, ...]
    sharers: tuple[str, ...]
    evaluated: tuple[str, ...]

    @classmethod
    def of(cls, public: Mapping[str, Any]) -> PfdsRun:
        method = Method(str(public["method"]))
        settings = SETTINGS[method].from_public(public["settings"])
        task: Literal["classification", "regression"] = \
            "regression" if public["schema"]["task"] == "regression" else "classification"
        schema = Schema(attributes_from_schema(public["schema"]), task)
        return cls(method, float(public["epsilon"]), settings, params_for(settings, len(schema.attributes)), schema,
                   run_loss(settings, task), tuple(public["agents"]), tuple(public["sharers"]),
                   tuple(public["evaluated"]))

    @property
    def fit(self) -> str:
        """How an evaluated PFDS agent trains: mpdp's cross-validated fit for ``pfds`` unless its variant is the
        paper's; the paper's fit for ``pfds-s`` and ``pfds-minus``."""
        return "mpdp" if self.method == Method.PFDS and self.params.variant == "mpdp" else "paper"

    def cost(self, party: str) -> PrivacyCost | None:
        return agent_cost(self.method, self.epsilon, sharer=party in self.sharers,
                          regression=self.schema.task == "regression")


def run_loss(settings: AgentSettings, task: str) -> str:
    """The ERM loss of a run: the linear loss for regression, else the ``loss`` option."""
    return "linear" if task == "regression" else settings.loss


def non_private(config: RunConfig, loss: str) -> Metric:
    """NP-Pred: a non-private predictor on the whole training set (the best attainable, Figure 4)."""
    train, test = config.train, config.test
    if train.values is None or test.values is None:
        raise ParameterError(explain("dataset", train.name, "an attribute view", "load it with mpdp.datasets"))
    schema = Schema(train.attributes, "regression" if loss == "linear" else "classification")
    theta = baselines.np_agent_model(schema, train.values, train.y, loss_for(loss), PFDSParams().lam)
    X_test = features(schema, test.values)
    if loss == "linear":
        return Metric("mse", erm.mse(theta, X_test, test.y))
    return Metric("misclassification", erm.misclassification(theta, X_test, test.y))


class PfdsDeployment(AlgorithmDeployment):
    """Paper 004's agents (module docstring)."""

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        method = Method(algorithm)
        settings = settings_of(method, config)
        train, test = config.train, config.test
        if test.values is None:
            raise ParameterError(explain("test records", test.name, "an attribute view",
                                         "load the data with mpdp.datasets"))
        setting = Setting(agents=config.parties, epsilon=config.epsilon,
                          params=params_for(settings, len(train.attributes)), sharers=settings.sharers,
                          anchor=settings.anchor, eval_agents=settings.eval_agents)
        # the user's --fractions / --anchor split replaces the paper's distance-to-anchor split
        rows = config.row_partition if config.row_split != "default" else None
        split = split_agents(train, setting, config.rng, rows)
        public = {"method": method.value, "epsilon": config.epsilon, "settings": settings.to_public(),
                  "agents": list(split.names), "sharers": list(split.sharers), "evaluated": list(split.evaluated),
                  "schema": schema_of(train)}
        data: dict[str, PartyData | None] = {
            n: PartyData(n, np.zeros((values.shape[0], 0)), (), labels, values)
            for n, (values, labels) in split.data.items()}
        held_out = PartyData("analyst", np.zeros((test.n, 0)), (), test.y, test.values)
        scoring = () if method == Method.DP_PRED else split.evaluated  # DP-Pred is scored by the analyst
        evaluation = {n: dataclasses.replace(held_out, party=n) for n in scoring}
        return DeployPlan(split.names, public, data, ("algorithm",), labels=frozenset(split.names),
                          values=frozenset(split.names), evaluation=evaluation)

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        return PfdsRun.of(public).cost(party)

    def run_party(self, ctx: PartyContext) -> None:
        run, name = PfdsRun.of(ctx.public), ctx.name
        if ctx.data is None or ctx.data.values is None or ctx.data.y is None:
            raise ParameterError(explain(f"data of {name}", None, "its rows (attribute view and labels)",
                                         "give it its data file"))
        values, labels = ctx.data.values, ctx.data.y
        ledger = agent_ledger(run.method, run.epsilon, name, sharer=name in run.sharers,
                              regression=run.schema.task == "regression")
        label = run_label(run.method, run.loss)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # the party warned once about its seed
            if run.method in SHARING:
                evaluation = self._evaluation(ctx, run.loss, (run.fit,)) if name in run.evaluated else None
                agent = PFDSAgent(name, values, labels, run.schema, variant_params(run.method, run.params),
                                  run.epsilon, run.sharers, ledger=ledger, evaluation=evaluation)
                ctx.session.run(agent if name != self.receiver(ctx.public) else _keeping_received(agent),
                                ctx.root.spawn(label), run.agents)
            elif run.method == Method.NP_AGT and name in run.evaluated:
                p = run.params
                local = LocalAgent(name, values, labels, run.schema, self._evaluation(ctx, run.loss, ()), lam=p.lam,
                                   lams=p.lams, cv_folds=p.cv_folds)
                ctx.session.run(local, ctx.root.spawn(label), run.evaluated)
            elif run.method == Method.DP_PRED and name in run.sharers:
                own_lam = run.settings.lam if isinstance(run.settings, DPPredSettings) else None
                sharer = DPPredSharer(name, values, labels, run.schema, run.loss, epsilon=run.epsilon,
                                      lam=dp_pred_lam_for(own_lam, values.shape[0]), ledger=ledger)
                ctx.session.run(sharer, ctx.root.spawn(label), run.sharers)

    def receiver(self, public: Mapping[str, Any]) -> str | None:
        """The first agent: every agent receives every sharer's records; DP-Pred and NP-Agt release none."""
        run = PfdsRun.of(public)
        return run.agents[0] if run.method in SHARING and run.agents else None

    def release(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> PartyRelease | None:
        """Every sharer's released records in sharer order (its own and those it received), as the report's."""
        run = PfdsRun.of(public)
        if party != self.receiver(public) or len(runs) != 1:
            return None
        result = runs[0].result
        held = {s: {"released": result["released"] if s == party else result["shared"].get(s)} for s in run.sharers}
        per_party = {n: getattr(run.cost(n), "epsilon", 0.0) for n in run.agents}
        return PartyRelease(released_records(held, run.sharers, len(run.schema.attributes)),
                            max(per_party.values(), default=0.0), 0.0, per_party)

    def party_metric(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> Metric | None:
        """An evaluated agent's test error on the analyst's held-out records (the report averages them)."""
        run = PfdsRun.of(public)
        if party not in run.evaluated or len(runs) != 1 or run.method == Method.DP_PRED:
            return None
        key = f"{run.fit}/{run.loss}" if run.method in SHARING else run.loss
        return Metric("mse" if run.loss == "linear" else "misclassification",
                      float(runs[0].result["errors"][key]))

    def report(self, config: RunConfig, plan: DeployPlan,
               outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        """The analyst's figures from the agents' results: the evaluated agents' mean test error (PFDS and its
        variants, NP-Agt) or the vote of the released DP predictors (DP-Pred), each agent's cost, and NP-Pred
        on the whole training set for reference."""
        run = PfdsRun.of(plan.public)
        results = {name: runs[0].result for name, runs in outcomes.items() if runs}  # one run per agent at most
        if run.method in SHARING:
            value = mean_error(results, run.evaluated, f"{run.fit}/{run.loss}")
        elif run.method == Method.NP_AGT:
            value = mean_error(results, run.evaluated, run.loss)
        else:
            models = [np.asarray(results[n]["model"], dtype=np.float64) for n in run.sharers]
            value = dp_pred_error(run.schema, models, config.test, run.loss, votes_source(config.rng))
        costs = {n: run.cost(n) for n in run.agents}
        per_party = {n: 0.0 if c is None else c.epsilon for n, c in costs.items()}
        extra: dict[str, Any] = {"loss": run.loss, "agents_with_data": len(run.agents), "sharers": len(run.sharers),
                                 "evaluated": len(run.evaluated)}
        if isinstance(run.settings, PFDSVariantSettings):
            extra["variant"] = run.settings.variant
        released = None
        if run.method in SHARING:
            extra["synthetic_records"] = int(sum(r["synthetic"] for r in results.values()))
            if run.fit == "mpdp":
                chosen = [results[n]["choices"][run.loss] for n in run.evaluated]
                extra["mpdp_choices"] = {run.loss: {"shared_weight_mean": float(np.mean([w for w, _ in chosen])),
                                                    "shared_weight_zero": float(np.mean([w == 0 for w, _ in chosen]))}}
            released = released_records(results, run.sharers, len(run.schema.attributes))
        seconds = max((sum(r.seconds for r in runs) for runs in outcomes.values()), default=0.0)
        phases: dict[str, float] = {}
        with timed(phases, "baseline"):
            reference = non_private(config, run.loss)
        return RunReport(
            algorithm=run.method.value, dataset=config.train.name, parties=config.parties, epsilon=config.epsilon,
            delta=0.0, epsilon_spent=max(per_party.values(), default=0.0), delta_spent=0.0,
            per_party_epsilon=per_party,
            metric=Metric("mse" if run.loss == "linear" else "misclassification", value),
            non_private=reference, seconds=seconds, communication=communication(outcomes),
            extra=extra, released=released, phases=phases)

    @staticmethod
    def _evaluation(ctx: PartyContext, loss: str, fits: tuple[str, ...]) -> AgentEvaluation:
        held = ctx.evaluation
        if held is None or held.values is None or held.y is None:
            raise ParameterError(explain(f"evaluation of {ctx.name}", None, "the analyst's held-out records",
                                         f"give {ctx.name} the evaluation.csv `mpdp launch --keep` writes"))
        return AgentEvaluation(held.values, held.y, (loss,), fits)


def _keeping_received(agent: PFDSAgent) -> Any:
    """``agent``'s role, its result also holding the records it received from each other sharer (``shared``):
    the receiving agent writes the whole release."""

    def role(comm: Any) -> dict[str, Any]:
        out = agent.run(comm)
        out["shared"] = {src: {"values": v, "labels": y} for src, (v, y) in agent.received.items()}
        return out

    return role
