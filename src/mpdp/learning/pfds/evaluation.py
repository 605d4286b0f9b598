"""Paper 004's experiments: one train/test split evaluated for PFDS, its variants and the baselines.

:func:`evaluate_split` partitions the training records among ``agents`` by distance to random anchors on a
numeric attribute (paper 004, section 4; :func:`mpdp.datasets.partition.horizontal_by_anchors`), runs the
PFDS protocol over the in-memory transport (every agent a :class:`~mpdp.learning.pfds.model.PFDSAgent` with its own
:class:`~mpdp.dp.accounting.PrivacyLedger`), and measures on the test records:

* ``pfds`` / ``pfds-s`` / ``pfds-minus``: the mean error of the agents' predictors trained on their own data
  plus all shared data by the paper's fit (PFDS, PFDS(s), PFDS-);
* ``pfds-mpdp``: the same protocol run as ``pfds`` (the variants' messages and privacy cost are identical),
  each agent trained by mpdp's cross-validated fit (:mod:`mpdp.learning.pfds.fit`);
* ``dp-pred``: the error of the majority vote (committee average for regression) of the sharers' DP predictors;
* ``np-agt``: the mean error of the agents' non-private predictors trained on their own data;
* ``np-agt-cv`` (not in the paper): the same with the regulariser chosen as ``pfds-mpdp`` chooses it (k-fold CV
  on the agent's own records), so that ``pfds-mpdp - np-agt-cv`` isolates what the shared data adds;
* ``pfds-vote`` (diagnostic, not in the paper): the error of the majority vote of the shared trees themselves.

Each agent computes its own figures: an evaluated agent is handed the test records
(:class:`~mpdp.learning.pfds.scoring.AgentEvaluation`), trains and scores its predictors after the protocol
and returns only their test errors, so the same runs work with every agent in its own process.
:mod:`~mpdp.learning.pfds.deployment` runs one method of this schedule for ``mpdp run`` and ``mpdp launch``
with the same roles, agents (:func:`split_agents`), run labels (:func:`run_label`), ledgers (:func:`agent_ledger`)
and analyst's figures (:func:`mean_error`, :func:`dp_pred_error`): under one seed both report the same.
``eval_agents`` may restrict the PFDS/NP-Agt error to a uniformly random subset of the
agents (an unbiased estimate of the mean over agents).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import HorizontalPartition, horizontal_by_anchors
from mpdp.dp.accounting import PrivacyLedger
from mpdp.errors import ParameterError, PrivacyLeakWarning, ShapeMismatchError, explain
from mpdp.learning.pfds import baselines as pfds_baselines
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, vote_labels
from mpdp.learning.pfds.schema import Schema
from mpdp.learning.pfds.scoring import LOSSES, AgentEvaluation, DPPredSharer, LocalAgent, error_of, loss_for
from mpdp.learning.pfds.spec import SHARING, Method, agent_cost, dp_pred_lam_for
from mpdp.learning.pfds.tree import PrivateTree
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource
from mpdp.runtime import ProtocolRun, run_protocol

__all__ = ["LOSSES", "METHODS", "AgentSplit", "Setting", "SplitResult", "agent_ledger", "attribute_view",
           "dp_pred_error", "evaluate_split", "loss_for", "mean_error", "released_records", "run_label",
           "split_agents", "variant_params", "votes_source"]

FloatArray = npt.NDArray[np.float64]

#: what :func:`evaluate_split` measures: the five methods, ``pfds-mpdp`` (the pfds run scored by mpdp's fit),
#: ``np-agt-cv`` and the ``pfds-vote`` diagnostic
METHODS = (Method.PFDS, "pfds-mpdp", Method.PFDS_S, Method.PFDS_MINUS, Method.DP_PRED, Method.NP_AGT, "np-agt-cv",
           "pfds-vote")



@dataclass(frozen=True)
class Setting:
    """One experimental setting of paper 004, section 4.

    Attributes
    ----------
    agents:
        Number of agents m (paper: 100 for Census).
    epsilon:
        Each agent's budget.
    params:
        PFDS hyper-parameters (paper: h_max = 8, t = 10, p = 4).
    sharers:
        How many agents share (the first ``sharers`` agents); ``None`` for all (``S = [m]``).
    anchor:
        The numeric attribute of the distance-to-anchor partition; ``None`` picks the first numeric one.
    eval_agents:
        Evaluate PFDS and NP-Agt on this many random agents (``None``: all).
    dp_pred_lam:
        DP-Pred's regularisation (objective perturbation needs a strongly convex objective; the paper gives none);
        None: :func:`~mpdp.learning.pfds.spec.dp_pred_lam_for` of each sharer's record count.
    """

    agents: int = 100
    epsilon: float = 1.0
    params: PFDSParams = field(default_factory=PFDSParams)
    sharers: int | None = None
    anchor: str | None = None
    eval_agents: int | None = None
    dp_pred_lam: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.agents, int) or self.agents < 1:
            raise ParameterError(explain("agents", self.agents, "an int >= 1", "pass e.g. agents=100"))
        if not (np.isfinite(self.epsilon) and self.epsilon > 0):
            raise ParameterError(explain("epsilon", self.epsilon, "a finite number > 0", "pass e.g. epsilon=1.0"))
        if self.sharers is not None and not 1 <= self.sharers <= self.agents:
            raise ParameterError(explain("sharers", self.sharers, f"between 1 and agents = {self.agents}",
                                         "pass fewer sharers"))
        if self.eval_agents is not None and self.eval_agents < 1:
            raise ParameterError(explain("eval_agents", self.eval_agents, "None or >= 1", "pass e.g. 10"))


@dataclass
class SplitResult:
    """Errors per (method, loss), with what was spent and sent."""

    errors: dict[tuple[str, str], float]
    epsilon_spent: dict[str, float]
    per_party: dict[str, dict[str, float]]
    communication: dict[str, int]
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    #: The synthetic records every sharer released (attribute view, labels), per protocol run of a sharing
    #: method (PFDS, PFDS(s), PFDS-): what ``mpdp run pfds --save`` writes.
    shared: dict[str, tuple[FloatArray, FloatArray]] = field(default_factory=dict)


def attribute_view(data: Dataset) -> tuple[FloatArray, FloatArray]:
    """``(values, y)`` of a dataset's attribute view, or a clear error when it has none."""
    if data.values is None or not data.attributes:
        raise ParameterError(explain(f"attributes of {data.name!r}", "not declared", "typed attributes",
                                     "load the data with mpdp.datasets (attribute kinds are needed by the trees)"))
    return data.values, data.y


def _anchor(data: Dataset, anchor: str | None) -> str:
    if anchor is not None:
        return anchor
    for attr in data.attributes:
        if attr.kind == "numeric":
            return attr.name
    raise ParameterError(explain("anchor", None, "a numeric attribute to partition by",
                                 "the data needs a numeric attribute for paper 004's partition"))


def variant_params(method: str, params: PFDSParams) -> PFDSParams:
    """The protocol parameters of ``pfds``, ``pfds-s`` (own-tree labelling) or ``pfds-minus`` (no consistency)."""
    if method == Method.PFDS_S:
        return PFDSParams(**{**params.__dict__, "labelling": "own"})
    if method == Method.PFDS_MINUS:
        return PFDSParams(**{**params.__dict__, "optimize": False})
    return params


def run_label(method: str, loss: str | None = None) -> str:
    """The label of ``method``'s protocol run under the split's random source (``rng.spawn(label)``): the
    method's name, and for DP-Pred one run per ``loss``. Every engine draws the agents' noise from it."""
    if method != Method.DP_PRED:
        return str(method)
    if loss is None:
        raise ParameterError(explain(f"run label of {method}", None, "a loss", "pass the run's loss"))
    return f"{method}/{loss}"


def agent_ledger(method: Method, epsilon: float, name: str, *, sharer: bool, regression: bool) -> PrivacyLedger:
    """The ledger an agent's run of ``method`` spends on: its budget is the agent's cost
    (:func:`~mpdp.learning.pfds.spec.agent_cost`), so the run cannot release more than every engine charges. An
    agent that releases nothing gets the run's ``epsilon``, which its role never spends."""
    cost = agent_cost(method, epsilon, sharer=sharer, regression=regression)
    return PrivacyLedger(epsilon=epsilon if cost is None else cost.epsilon, subject=f"party:{name}")


def votes_source(rng: RandomSource) -> RandomSource:
    """The analyst's coin for DP-Pred's tied votes, from the split's random source."""
    return rng.spawn(f"{Method.DP_PRED} votes")


def mean_error(results: Mapping[str, Any], names: Sequence[str], key: str) -> float:
    """The mean of the test errors ``key`` the agents ``names`` returned (section 4's error over agents)."""
    return float(np.mean([results[n]["errors"][key] for n in names]))


def released_records(results: Mapping[str, Any], sharers: Sequence[str], width: int) -> tuple[FloatArray, FloatArray]:
    """Every sharer's released records, in sharer order (what each agent holds as shared data)."""
    parts = [results[s]["released"] for s in sharers if results[s]["released"] is not None]
    if not parts:
        return np.empty((0, width)), np.empty(0)
    return (np.concatenate([np.asarray(p["values"], dtype=np.float64) for p in parts]),
            np.concatenate([np.asarray(p["labels"], dtype=np.float64) for p in parts]))


def dp_pred_error(schema: Schema, models: Sequence[FloatArray], test: Dataset, loss: str,
                  votes: RandomSource) -> float:
    """The analyst's DP-Pred figure: the released predictors voted (or averaged) on the test records."""
    if test.values is None:
        raise ParameterError(explain(f"attributes of {test.name!r}", "not declared", "typed attributes",
                                     "load the data with mpdp.datasets"))
    predicted = pfds_baselines.committee(schema, models, test.values, schema.task, votes)
    return error_of(loss, predicted, test.y)


@dataclass(frozen=True)
class AgentSplit:
    """The agents of one split: their names (agents with records), rows, the sharers and the evaluated ones."""

    names: tuple[str, ...]
    data: dict[str, tuple[FloatArray, FloatArray]]  # name -> (attribute-view rows, labels)
    sharers: tuple[str, ...]
    evaluated: tuple[str, ...]


def split_agents(train: Dataset, setting: Setting, rng: RandomSource,
                 rows: Sequence[npt.NDArray[np.int64]] | None = None) -> AgentSplit:
    """Partition ``train`` among ``setting.agents`` (paper 004's distance-to-anchor split from
    ``rng.spawn("partition")``, or ``rows``), drop empty agents, and pick the sharers and the evaluated agents
    (``rng.spawn("evaluated agents")``)."""
    if rows is None:
        part = horizontal_by_anchors(train, _anchor(train, setting.anchor), setting.agents, rng=rng.spawn("partition"))
    elif len(rows) != setting.agents:
        raise ShapeMismatchError(explain("rows", len(rows), f"{setting.agents} index arrays (one per agent)",
                                         "give one row array per agent"))
    else:
        part = HorizontalPartition(train, tuple(np.asarray(r, dtype=np.int64) for r in rows))
    nonempty = [k for k in range(setting.agents) if part.sizes[k] > 0]
    if not nonempty:
        raise ShapeMismatchError(explain("agents", setting.agents, "at least one agent with records",
                                         "use fewer agents or more data"))
    names = tuple(f"agent{k}" for k in nonempty)
    data = {name: attribute_view(part.party(k)) for name, k in zip(names, nonempty, strict=True)}
    sharers = names if setting.sharers is None else names[:setting.sharers]
    picker = rng.spawn("evaluated agents")
    evaluated = names if setting.eval_agents is None or setting.eval_agents >= len(names) else \
        tuple(names[int(i)] for i in np.sort(picker.permutation(len(names))[:setting.eval_agents]))
    return AgentSplit(names, data, sharers, evaluated)


def evaluate_split(train: Dataset, test: Dataset, setting: Setting, *, methods: Sequence[str] = METHODS,
                   losses: Sequence[str] = ("logistic", "svm"), rng: RandomSource,
                   rows: Sequence[npt.NDArray[np.int64]] | None = None,
                   progress: Progress = SILENT) -> SplitResult:
    """Run the methods on one train/test split (module docstring); errors are misclassification or MSE.
    ``progress`` prints a phase line per protocol run.

    ``rows`` (one index array into ``train`` per agent) replaces the paper's distance-to-anchor split.

    Every agent-side computation is a protocol run of the agents' roles (:mod:`mpdp.learning.pfds.scoring`),
    in this order, each from ``rng.spawn(run_label(...))``: one PFDS run per variant needed, NP-Agt, NP-Agt with
    CV and DP-Pred per loss; this function then averages the errors the evaluated agents returned
    and votes DP-Pred's released models on the test records, as the analyst."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ParameterError(explain("methods", unknown, f"names from {METHODS}", "fix the method names"))
    task: Literal["classification", "regression"] = "regression" if train.task == "regression" else "classification"
    if (task == "regression") != (tuple(losses) == ("linear",)):
        raise ParameterError(explain("losses", tuple(losses), "('linear',) for regression, logistic/svm otherwise",
                                     "match the losses to the task"))
    if not train.attributes or train.values is None or test.values is None:
        raise ParameterError(explain(f"attributes of {train.name!r}", "not declared", "typed attributes",
                                     "load the data with mpdp.datasets (attribute kinds are needed by the trees)"))
    start = time.perf_counter()
    schema = Schema(train.attributes, task)
    test_values = test.values
    split = split_agents(train, setting, rng, rows)
    names, data, sharers, evaluated = split.names, split.data, split.sharers, split.evaluated
    y_test = test.y
    errors: dict[tuple[str, str], float] = {}
    spent: dict[str, float] = {}
    per_party: dict[str, dict[str, float]] = {}
    shared: dict[str, tuple[FloatArray, FloatArray]] = {}
    comm: dict[str, int] = {"bytes": 0, "messages": 0, "rounds": 0}
    extra: dict[str, Any] = {"agents_with_data": len(names), "sharers": len(sharers), "evaluated": len(evaluated)}

    def evaluation(fits: tuple[str, ...] = ()) -> AgentEvaluation:
        return AgentEvaluation(test_values, y_test, tuple(losses), fits)

    def run(label: str, roles: dict[str, Any]) -> ProtocolRun[Any]:
        progress.phase(f"running {label} among {len(roles)} agents ({len(sharers)} sharing)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # experiments use seeded sources on purpose
            return run_protocol(roles, rng=rng.spawn(label))

    def ledger(method: str, name: str) -> PrivacyLedger:
        return agent_ledger(Method(method), setting.epsilon, name, sharer=name in sharers,
                            regression=task == "regression")

    for method in SHARING:
        fits = tuple(f for f, m in (("paper", method), ("mpdp", "pfds-mpdp")) if m in methods
                     and (f == "paper" or method == Method.PFDS))
        if not fits and not (method == Method.PFDS and "pfds-vote" in methods):
            continue
        params = variant_params(method, setting.params)
        agents = {n: PFDSAgent(n, data[n][0], data[n][1], schema, params, setting.epsilon, sharers,
                               ledger=ledger(method, n),
                               evaluation=evaluation(fits) if n in evaluated and fits else None)
                  for n in names}
        result = run(run_label(method), agents)
        per_party[method] = {n: float(result.results[n]["spent"]) for n in names}
        spent[method] = max(per_party[method].values())
        shared[method] = released_records(result.results, sharers, train.values.shape[1])
        for fit, key in (("paper", method), ("mpdp", "pfds-mpdp")):
            if fit in fits:
                for loss_name in losses:
                    errors[(key, loss_name)] = mean_error(result.results, evaluated, f"{fit}/{loss_name}")
        if method == Method.PFDS or not comm["messages"]:  # the traffic of pfds's run, else of the variant run
            comm = result.communication()
        if method != Method.PFDS:
            continue
        extra["synthetic_records"] = int(sum(r["synthetic"] for r in result.results.values()))
        if "pfds-vote" in methods and task == "classification":
            trees = [PrivateTree.from_wire(result.results[s]["tree"], schema.domain) for s in sharers]
            votes = vote_labels(trees, test.values, schema, rng.spawn("vote ties"))
            for loss_name in losses:
                errors[("pfds-vote", loss_name)] = error_of(loss_name, votes, y_test)
        if "pfds-mpdp" in methods:
            per_party["pfds-mpdp"], spent["pfds-mpdp"] = per_party[method], spent[method]
            chosen = {loss_name: [result.results[n]["choices"][loss_name] for n in evaluated] for loss_name in losses}
            extra["mpdp_choices"] = {k: {"shared_weight_mean": float(np.mean([w for w, _ in v])),
                                         "shared_weight_zero": float(np.mean([w == 0 for w, _ in v]))}
                                     for k, v in chosen.items()}

    p = setting.params
    # NP-Agt; NP-Agt with pfds (mpdp)'s regulariser
    for local, cv in ((str(Method.NP_AGT), False), ("np-agt-cv", True)):
        if local in methods:
            per_party[local] = {n: 0.0 for n in names}  # nothing released
            spent[local] = 0.0
            result = run(run_label(local), {
                n: LocalAgent(n, data[n][0], data[n][1], schema, evaluation(), lam=p.lam, cv=cv, lams=p.lams,
                              cv_folds=p.cv_folds) for n in evaluated})
            for loss_name in losses:
                errors[(local, loss_name)] = mean_error(result.results, evaluated, loss_name)
    if Method.DP_PRED in methods:
        votes_rng = votes_source(rng)
        for loss_name in losses:
            label = run_label(Method.DP_PRED, loss_name)
            sharer_roles = {n: DPPredSharer(n, data[n][0], data[n][1], schema, loss_name, epsilon=setting.epsilon,
                                            lam=dp_pred_lam_for(setting.dp_pred_lam, len(data[n][1])),
                                            ledger=ledger(Method.DP_PRED, n))
                            for n in sharers}
            result = run(label, sharer_roles)
            models = [np.asarray(result.results[n]["model"], dtype=np.float64) for n in sharers]
            errors[(Method.DP_PRED, loss_name)] = dp_pred_error(schema, models, test, loss_name, votes_rng)
            per_party[label] = {n: float(result.results[n]["spent"]) for n in sharers}
            spent[label] = max(per_party[label].values())
    return SplitResult(errors, spent, per_party, comm, time.perf_counter() - start, extra, shared)
