"""Paper 004's algorithms as specs: ``pfds``, ``pfds-s``, ``pfds-minus`` and the baselines ``dp-pred`` and
``np-agt`` (:mod:`mpdp.learning.spec`).

Tree options (``h_max``, ``t``, ``p``, ``max_leaves``) belong to the three PFDS variants; ``variant`` to ``pfds``
alone (the others have one fit each); the baselines train no trees. The tree depth and the consistency levels
default to the paper's ``h_max = 8`` and ``p = 4`` within the data's attributes:
:func:`mpdp.learning.pfds.model.params_for` resolves them.

Every engine runs the parties of :class:`mpdp.learning.pfds.deployment.PfdsDeployment` (in memory, one
process per agent); :class:`Method` names the algorithms everywhere else in the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, explain
from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option
from mpdp.learning.spec.run import RunConfig

__all__ = [
    "DP_PRED_N_LAM",
    "SETTINGS",
    "SHARING",
    "SPECS",
    "AgentSettings",
    "DPPredSettings",
    "Method",
    "PFDSSettings",
    "PFDSVariantSettings",
    "agent_cost",
    "dp_pred_lam_for",
    "settings_of",
]


class Method(StrEnum):
    """Paper 004's methods as ``mpdp run`` names them."""

    PFDS = "pfds"
    PFDS_S = "pfds-s"  # each sharer labels its synthetic records with its own tree only
    PFDS_MINUS = "pfds-minus"  # no consistency step
    DP_PRED = "dp-pred"
    NP_AGT = "np-agt"


#: the methods whose sharers release DP trees and synthetic records
SHARING = (Method.PFDS, Method.PFDS_S, Method.PFDS_MINUS)


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

    h_max: int | None = option(None, "tree depth (none: the paper's 8, at most the number of attributes)", low=2)
    t: int = option(10, "candidate split values per numeric attribute", low=1)
    p: int | None = option(None, "levels in the consistency step (none: the paper's 4, at most h_max)", low=2)
    max_leaves: int = option(1024, "leaf bound per tree", low=1)

    def check(self) -> None:
        if self.h_max is not None and self.p is not None and self.p > self.h_max:
            raise ParameterError(explain("p", self.p, f"at most h_max = {self.h_max}", "lower p or raise h_max"))


@dataclass(frozen=True)
class PFDSVariantSettings(PFDSSettings):
    variant: str = option("mpdp", "'mpdp' (each agent picks the shared data's weight and its regulariser by "
                          "cross-validation on its own records) or 'paper' (the paper's fit on the union)",
                          choices=("mpdp", "paper"))


#: DP-Pred's default regulariser times a sharer's record count (the reproductions' 0.05 at their ~360 records per
#: agent; at Adult's 12,000 records per party of a 3-party run it gives 0.0015)
DP_PRED_N_LAM = 18.0


@dataclass(frozen=True)
class DPPredSettings(AgentSettings):
    lam: float | None = option(None, "DP-Pred's regulariser (none: 18 / the sharer's records, so the noise's pull "
                               "on the minimiser stays the same whatever the sharer's size)", low=0.0, low_open=True)


def dp_pred_lam_for(lam: float | None, records: int) -> float:
    """DP-Pred's regulariser for a sharer of ``records`` records: ``lam``, or by default ``18 / records``.

    Objective perturbation's linear noise moves the minimiser by about ``||b|| / (n lam)`` with ``||b||`` of the
    order of ``d / eps``, so keeping ``n lam`` fixed keeps that pull the same at any size; a fixed ``lam`` (0.05
    suits ~360 records) shrinks a large sharer's model to the intercept, the majority class. The guarantee holds
    for replace-one neighbours, whose record count is the same."""
    return lam if lam is not None else DP_PRED_N_LAM / max(records, 1)


_SUMMARIES = {
    Method.PFDS: "PFDS: DP trees, consistent synthetic data labelled by the trees' vote, ERM on own + shared data",
    Method.PFDS_S: "PFDS(s): each sharer labels its synthetic data with its own tree only",
    Method.PFDS_MINUS: "PFDS-: PFDS without the consistency (least-squares) step",
    Method.DP_PRED: "DP-Pred: objective perturbation / functional mechanism per sharer, majority vote or average",
    Method.NP_AGT: "NP-Agt: each agent's non-private predictor on its own data (baseline, no privacy)",
}
#: each method's options
SETTINGS: dict[Method, type[AgentSettings]] = {
    Method.PFDS: PFDSVariantSettings, Method.PFDS_S: PFDSSettings, Method.PFDS_MINUS: PFDSSettings,
    Method.DP_PRED: DPPredSettings, Method.NP_AGT: AgentSettings}


def settings_of(method: Method, config: RunConfig) -> AgentSettings:
    """``config.settings`` as ``method``'s options (exactly its class); a config built with plain ``options``
    and no settings gets them checked by the same class."""
    cls = SETTINGS[method]
    if config.settings is None:
        return cls.from_options(config.options, source=f"options of {method}:")
    if type(config.settings) is not cls:
        raise ParameterError(explain(f"settings of {method}", type(config.settings).__name__, cls.__name__,
                                     "build them with the algorithm's spec (spec.settings_from)"))
    return config.settings


def agent_cost(method: Method, epsilon: float, *, sharer: bool, regression: bool = False) -> PrivacyCost | None:
    """What one agent's run of ``method`` costs it (paper 004, Theorem 3.3), charged before it sends anything.

    A sharer of PFDS or PFDS(s) pays ``eps`` (its tree, ``h_max * eps / (2 h_max)``, plus its consistent level
    counts, ``eps / 2``); of PFDS-, ``eps / 2`` (the tree only: Algorithm 5 is skipped); of DP-Pred, ``eps`` (one
    objective perturbation, or the functional mechanism for regression). An agent that does not share, and
    every NP-Agt agent, releases nothing: None. Every engine charges this (a deployed agent's own ledger, the
    in-memory report, the estimator's ledger) and bounds the run's own spending by it."""
    if method == Method.NP_AGT or not sharer:
        return None
    if method == Method.DP_PRED:
        return PrivacyCost(epsilon=epsilon, mechanism="functional mechanism" if regression
                           else "objective perturbation")
    return PrivacyCost(epsilon=epsilon / 2 if method == Method.PFDS_MINUS else epsilon, mechanism=Method.PFDS.value)


_SHARERS = RoleInfo("agent0 .. agent{m-1}", "one per agent (--parties)", "holds its own records; a sharer "
                    "releases DP trees (or a DP predictor), an evaluated agent trains on its own records and what "
                    "was shared and scores itself on the analyst's held-out records")
_AUDITS = {Method.PFDS: (AuditHook("dp-tree-split", Ref("mpdp.audit.cases.pfds:split_choice_case"), 4_000),
                         AuditHook("pfds-leaf-counts", Ref("mpdp.audit.cases.pfds:leaf_counts_case"), 2_000))}
_PKG = "mpdp.learning.pfds"

SPECS: tuple[AlgorithmSpec, ...] = tuple(
    AlgorithmSpec(name=method.value, summary=summary, paper="004", partitioning="horizontal",
                  task="classification", settings=SETTINGS[method], roles=(_SHARERS,), min_parties=2,
                  deployment=Ref(f"{_PKG}.deployment:PfdsDeployment"), audits=_AUDITS.get(method, ()),
                  release=Ref("mpdp.learning.release.build:records_of") if method in SHARING else None,
                  estimator=Ref(f"{_PKG}.estimator:PFDSClassifier") if method is Method.PFDS else None)
    for method, summary in _SUMMARIES.items())
