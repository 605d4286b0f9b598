"""Paper 004's algorithms as specs: ``pfds``, ``pfds-s``, ``pfds-minus`` and the baselines ``dp-pred`` and
``np-agt`` (:mod:`mpdp.learning.spec`).

Tree options (``h_max``, ``t``, ``p``, ``max_leaves``) belong to the three PFDS variants; ``variant`` to ``pfds``
alone (the others have one fit each); the baselines train no trees.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["SPECS", "AgentSettings", "PFDSSettings", "PFDSVariantSettings"]


@dataclass(frozen=True)
class AgentSettings(Settings):
    """Options of every paper 004 method: the agents, who shares, who is evaluated, the loss."""

    loss: str = option("logistic", "loss of each agent's fit on a classification task (regression always uses "
                       "the linear loss)", choices=("logistic", "svm"))
    sharers: int | None = option(None, "number of sharing agents, the first ones (none: all)", low=1)
    eval_agents: int | None = option(None, "agents evaluated, a random subset (none: all)", low=1)
    anchor: str | None = option(None, "numeric attribute of the distance-to-anchor partition (none: the first "
                                "numeric one)")


@dataclass(frozen=True)
class PFDSSettings(AgentSettings):
    """The DP trees' options (paper 004, section 4: h_max = 8, t = 10, p = 4)."""

    h_max: int | None = option(None, "tree depth (none: the paper's 8, at most the number of attributes)", low=1)
    t: int = option(10, "candidate split values per numeric attribute", low=1)
    p: int | None = option(None, "levels in the consistency step (none: the paper's 4, at most h_max)", low=1)
    max_leaves: int = option(1024, "leaf bound per tree", low=1)

    def check(self) -> None:
        if self.h_max is not None and self.p is not None and self.p > self.h_max:
            raise ParameterError(explain("p", self.p, f"at most h_max = {self.h_max}", "lower p or raise h_max"))


@dataclass(frozen=True)
class PFDSVariantSettings(PFDSSettings):
    variant: str = option("mpdp", "'mpdp' (each agent picks the shared data's weight and its regulariser by "
                          "cross-validation on its own records) or 'paper' (the paper's fit on the union)",
                          choices=("mpdp", "paper"))


_SUMMARIES = {
    "pfds": "PFDS: DP trees, consistent synthetic data labelled by the trees' vote, ERM on own + shared data",
    "pfds-s": "PFDS(s): each sharer labels its synthetic data with its own tree only",
    "pfds-minus": "PFDS-: PFDS without the consistency (least-squares) step",
    "dp-pred": "DP-Pred: objective perturbation / functional mechanism per sharer, majority vote or average",
    "np-agt": "NP-Agt: each agent's non-private predictor on its own data (baseline, no privacy)",
}
_SETTINGS: dict[str, type[Settings]] = {"pfds": PFDSVariantSettings, "pfds-s": PFDSSettings,
                                        "pfds-minus": PFDSSettings, "dp-pred": AgentSettings,
                                        "np-agt": AgentSettings}
_SHARERS = RoleInfo("agent0 .. agent{m-1}", "one per agent (--parties)", "holds its own records; a sharer "
                    "releases DP trees (or a DP predictor), an evaluated agent trains on its own records and what "
                    "was shared and scores itself on the analyst's held-out records")
_AUDITS = {"pfds": (AuditHook("dp-tree-split", Ref("mpdp.audit.cases.dp_tree:split_choice_case"), 4_000),
                    AuditHook("pfds-leaf-counts", Ref("mpdp.audit.cases.dp_tree:leaf_counts_case"), 2_000))}
_RECORDS = ("pfds", "pfds-s", "pfds-minus")
_PKG = "mpdp.learning.pfds"

SPECS: tuple[AlgorithmSpec, ...] = tuple(
    AlgorithmSpec(name=name, summary=summary, paper="004", partitioning="horizontal", task="classification",
                  settings=_SETTINGS[name], driver=Ref(f"{_PKG}.experiments:RUNS.{name}"), roles=(_SHARERS,),
                  min_parties=1, deployment=Ref("mpdp.deploy.algorithms.pfds:PfdsDeployment"),
                  audits=_AUDITS.get(name, ()),
                  release=Ref("mpdp.learning.release.build:records_of") if name in _RECORDS else None,
                  estimator=Ref(f"{_PKG}.estimator:PFDSClassifier") if name == "pfds" else None)
    for name, summary in _SUMMARIES.items())
