"""Deploying paper 004 (``pfds``, ``pfds-s``, ``pfds-minus``, ``dp-pred``, ``np-agt``): one process per agent.

Processes: ``agent<k>`` for every agent holding records (paper 004's distance-to-anchor split, or the user's
``--fractions`` / ``--anchor`` split), each with only its own rows (attribute view and labels). There is no
server: the agents are peers.

* ``pfds``, ``pfds-s``, ``pfds-minus``: every agent runs its
  :class:`~mpdp.learning.pfds.model.PFDSAgent` (the trees and the labelled synthetic records go peer to peer),
  then, if it is one of the evaluated agents, trains its predictor on its own plus the shared records and
  returns its test error on the analyst's held-out records (``evaluation.csv``, pinned by a digest in the
  shared section). Its predictor never leaves its process.
* ``np-agt``: each evaluated agent fits on its own records and returns its test error; nothing is sent.
* ``dp-pred``: each sharer releases its DP predictor (objective perturbation) to the analyst, who votes them
  on the held-out records.

Each sharer's own ledger is charged its paper 004 guarantee before it connects (Theorem 3.3: ``eps`` for
PFDS and PFDS(s), ``eps / 2`` for PFDS-, whose consistency step is skipped; ``eps`` for DP-Pred); the run's
in-process ledger, whose budget is that charge, refuses any release beyond it.

Privacy of the evaluation: a returned test error is evaluation output about the agent's non-private predictor
(:mod:`mpdp.learning.pfds.scoring`), as in the paper's experiments; the agents that are not evaluated return
only what they released.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from mpdp.datasets.holdings import PartyData, attributes_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.learning.pfds.evaluation import split_agents, variant_params
from mpdp.learning.pfds.experiments import result_key, run_setting
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams
from mpdp.learning.pfds.schema import Schema
from mpdp.learning.pfds.scoring import AgentEvaluation, DPPredSharer, LocalAgent
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.run import RunConfig

__all__ = ["PfdsDeployment"]

_SHARING = ("pfds", "pfds-s", "pfds-minus")


def _params(public: Mapping[str, Any]) -> PFDSParams:
    p = dict(public["params"])
    for name in ("shared_weights", "lams"):
        p[name] = tuple(float(v) for v in p[name])
    return PFDSParams(**p)


def _schema(public: Mapping[str, Any]) -> Schema:
    task: Literal["classification", "regression"] = "regression" if public["loss"] == "linear" else "classification"
    return Schema(attributes_from_schema(public["schema"]), task)


class PfdsDeployment(AlgorithmDeployment):
    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        setting, loss = run_setting(algorithm, config)
        key = result_key(algorithm, setting)
        train, test = config.train, config.test
        if test.values is None:
            raise ParameterError(explain("test records", config.test.name, "an attribute view",
                                         "load the data with mpdp.datasets"))
        rows = config.row_partition if config.row_split != "default" else None
        split = split_agents(train, setting, config.rng, rows)
        params = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(setting.params).items()}
        public = {"method": algorithm, "key": key, "loss": loss, "epsilon": setting.epsilon, "params": params,
                  "dp_pred_lam": setting.dp_pred_lam, "agents": list(split.names), "sharers": list(split.sharers),
                  "evaluated": list(split.evaluated), "schema": schema_of(train)}
        data: dict[str, PartyData | None] = {
            n: PartyData(n, np.zeros((values.shape[0], 0)), (), labels, values)
            for n, (values, labels) in split.data.items()}
        held_out = PartyData("analyst", np.zeros((test.n, 0)), (), test.y, test.values)
        scoring = split.sharers if algorithm == "dp-pred" else split.evaluated
        evaluation = {n: dataclasses.replace(held_out, party=n) for n in scoring if algorithm != "dp-pred"}
        return DeployPlan(split.names, public, data, ("algorithm",), labels=frozenset(split.names),
                          values=frozenset(split.names), evaluation=evaluation)

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        method, eps = str(public["method"]), float(public["epsilon"])
        if method == "np-agt" or party not in public["sharers"]:
            return None
        if method == "pfds-minus":
            return PrivacyCost(epsilon=eps / 2, mechanism="pfds")  # the trees only (Algorithm 5 skipped)
        return PrivacyCost(epsilon=eps, mechanism="pfds" if method in _SHARING else "objective perturbation")

    def run_party(self, ctx: PartyContext) -> None:
        public, name = ctx.public, ctx.name
        if ctx.data is None or ctx.data.values is None or ctx.data.y is None:
            raise ParameterError(explain(f"data of {name}", None, "its rows (attribute view and labels)",
                                         "give it its data file"))
        values, labels = ctx.data.values, ctx.data.y
        method, loss, eps = str(public["method"]), str(public["loss"]), float(public["epsilon"])
        schema, params = _schema(public), _params(public)
        agents, sharers, evaluated = list(public["agents"]), list(public["sharers"]), list(public["evaluated"])
        charged = self.cost(public, name)  # what its own ledger paid: the run may spend no more
        ledger = PrivacyLedger(epsilon=eps if charged is None else charged.epsilon, subject=f"party:{name}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # the party warned once about its seed
            if method in _SHARING:
                fits = ("mpdp",) if public["key"] == "pfds-mpdp" else ("paper",)
                evaluation = self._evaluation(ctx, loss, fits) if name in evaluated else None
                agent = PFDSAgent(name, values, labels, schema, variant_params(method, params), eps, sharers,
                                  ledger=ledger, evaluation=evaluation)
                ctx.session.run(agent, ctx.root.spawn(method), agents)
            elif method == "np-agt" and name in evaluated:
                local = LocalAgent(name, values, labels, schema, self._evaluation(ctx, loss, ()), lam=params.lam,
                                   lams=params.lams, cv_folds=params.cv_folds)
                ctx.session.run(local, ctx.root.spawn("np-agt"), evaluated)
            elif method == "dp-pred" and name in sharers:
                sharer = DPPredSharer(name, values, labels, schema, loss, epsilon=eps,
                                      lam=float(public["dp_pred_lam"]), ledger=ledger)
                ctx.session.run(sharer, ctx.root.spawn(f"dp-pred/{loss}"), sharers)

    @staticmethod
    def _evaluation(ctx: PartyContext, loss: str, fits: tuple[str, ...]) -> AgentEvaluation:
        held = ctx.evaluation
        if held is None or held.values is None or held.y is None:
            raise ParameterError(explain(f"evaluation of {ctx.name}", None, "the analyst's held-out records",
                                         f"give {ctx.name} the evaluation.csv `mpdp launch --keep` writes"))
        return AgentEvaluation(held.values, held.y, (loss,), fits)
