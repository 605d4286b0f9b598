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

Simulation shortcuts (results unchanged): every agent's ERM starts its solver from the solution on the shared
data alone (a public computation every agent could make; the objective is strictly convex, so the minimiser
does not depend on the start), and ``eval_agents`` may restrict the PFDS/NP-Agt error to a uniformly random
subset of the agents (an unbiased estimate of the mean over agents).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import HorizontalPartition, horizontal_by_anchors
from mpdp.dp.accounting import PrivacyLedger
from mpdp.errors import ParameterError, PrivacyLeakWarning, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.learning.pfds import baselines as pfds_baselines
from mpdp.learning.pfds.fit import cv_fit
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, Schema, features, vote_labels
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

__all__ = ["LOSSES", "METHODS", "Setting", "SplitResult", "attribute_view", "evaluate_split", "loss_for"]

FloatArray = npt.NDArray[np.float64]

METHODS = ("pfds", "pfds-mpdp", "pfds-s", "pfds-minus", "dp-pred", "np-agt", "np-agt-cv", "pfds-vote")
LOSSES = ("logistic", "svm", "linear")


def loss_for(name: str) -> erm.Loss:
    """The ERM loss of a task name.

    The SVM is Chaudhuri et al.'s Huber hinge (``h = 0.5``) for every method: objective perturbation (DP-Pred)
    needs its smoothness, and for the others it gives a certified optimum where L-BFGS on the plain hinge is
    only a heuristic (and slow); it equals the hinge wherever the margin is off by more than ``h``.
    """
    if name == "logistic":
        return erm.LogisticLoss()
    if name == "svm":
        return erm.SmoothHingeLoss(h=0.5)
    if name == "linear":
        return erm.SquaredLoss()
    raise ParameterError(explain("loss", name, f"one of {LOSSES}", "pass logistic, svm or linear"))


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
        DP-Pred's regularisation (objective perturbation needs a strongly convex objective).
    """

    agents: int = 100
    epsilon: float = 1.0
    params: PFDSParams = field(default_factory=PFDSParams)
    sharers: int | None = None
    anchor: str | None = None
    eval_agents: int | None = None
    dp_pred_lam: float = 0.05

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
    #: The synthetic records every sharer released (attribute view, labels), per protocol run ("pfds",
    #: "pfds-s", "pfds-minus"): what ``mpdp run pfds --save`` writes.
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


def _error(loss_name: str, predicted: FloatArray, truth: FloatArray) -> float:
    if loss_name == "linear":
        return float(np.mean((predicted - truth) ** 2))
    return float(np.mean(predicted != truth))


def _theta_error(schema: Schema, loss_name: str, theta: FloatArray, X: FloatArray, y: FloatArray) -> float:
    scores = X @ theta
    predicted = scores if loss_name == "linear" else (scores >= 0).astype(np.float64)
    return _error(loss_name, predicted, y)


def evaluate_split(train: Dataset, test: Dataset, setting: Setting, *, methods: Sequence[str] = METHODS,
                   losses: Sequence[str] = ("logistic", "svm"), rng: RandomSource,
                   rows: Sequence[npt.NDArray[np.int64]] | None = None) -> SplitResult:
    """Run the methods on one train/test split (module docstring); errors are misclassification or MSE.

    ``rows`` (one index array into ``train`` per agent) replaces the paper's distance-to-anchor split."""
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
    names = [f"agent{k}" for k in nonempty]
    data = {name: attribute_view(part.party(k)) for name, k in zip(names, nonempty, strict=True)}
    sharers = names if setting.sharers is None else names[:setting.sharers]
    picker = rng.spawn("evaluated agents")
    evaluated = names if setting.eval_agents is None or setting.eval_agents >= len(names) else \
        [names[int(i)] for i in np.sort(picker.permutation(len(names))[:setting.eval_agents])]
    X_test = features(schema, test.values)
    y_test = test.y
    errors: dict[tuple[str, str], float] = {}
    spent: dict[str, float] = {}
    per_party: dict[str, dict[str, float]] = {}
    shared: dict[str, tuple[FloatArray, FloatArray]] = {}
    comm: dict[str, int] = {"bytes": 0, "messages": 0, "rounds": 0}
    extra: dict[str, Any] = {"agents_with_data": len(names), "sharers": len(sharers), "evaluated": len(evaluated)}

    variants = {"pfds": setting.params,
                "pfds-s": PFDSParams(**{**setting.params.__dict__, "labelling": "own"}),
                "pfds-minus": PFDSParams(**{**setting.params.__dict__, "optimize": False})}
    for method, params in variants.items():
        uses_run = (method,) + (("pfds-vote", "pfds-mpdp") if method == "pfds" else ())
        if not any(m in methods for m in uses_run):
            continue
        ledgers = {n: PrivacyLedger(epsilon=setting.epsilon, subject=f"party:{n}") for n in names}
        agents = {n: PFDSAgent(n, data[n][0], data[n][1], schema, params, setting.epsilon, sharers,
                               ledger=ledgers[n]) for n in names}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # experiments use seeded sources on purpose
            run = run_protocol(agents, rng=rng.spawn(method))
        per_party[method] = {n: led.spent.epsilon for n, led in ledgers.items()}
        shared[method] = agents[names[0]].training_set(include_own=False)
        spent[method] = max(per_party[method].values())
        if method == "pfds":
            comm = run.communication()
            extra["synthetic_records"] = int(sum(r["synthetic"] for r in run.results.values()))
            if "pfds-vote" in methods and task == "classification":
                trees = [a.tree for a in agents.values() if a.tree is not None]
                votes = vote_labels(trees, test.values, schema, rng.spawn("vote ties"))
                for loss_name in losses:
                    errors[("pfds-vote", loss_name)] = _error(loss_name, votes, y_test)
            if "pfds-mpdp" in methods:
                per_party["pfds-mpdp"], spent["pfds-mpdp"] = per_party["pfds"], spent["pfds"]
                chosen: dict[str, list[tuple[float, float]]] = {}
                for loss_name in losses:
                    fits = [agents[n].fit_choice(loss_for(loss_name), variant="mpdp",
                                                 rng=rng.spawn(f"mpdp fit {n} {loss_name}")) for n in evaluated]
                    errors[("pfds-mpdp", loss_name)] = float(np.mean(
                        [_theta_error(schema, loss_name, f.theta, X_test, y_test) for f in fits]))
                    chosen[loss_name] = [(f.shared_weight, f.lam) for f in fits]
                extra["mpdp_choices"] = {k: {"shared_weight_mean": float(np.mean([w for w, _ in v])),
                                             "shared_weight_zero": float(np.mean([w == 0 for w, _ in v]))}
                                         for k, v in chosen.items()}
            if method not in methods:
                continue
        shared_values, shared_labels = agents[names[0]].training_set(include_own=False)
        for loss_name in losses:
            loss = loss_for(loss_name)
            y_shared = erm.to_pm1(shared_labels) if task == "classification" else shared_labels
            theta0 = erm.solve(erm.Objective(loss, features(schema, shared_values), y_shared, params.lam),
                               tol=1e-8).theta
            errs = [_theta_error(schema, loss_name, agents[n].fit(loss, variant="paper", theta0=theta0),
                                 X_test, y_test)
                    for n in evaluated]
            errors[(method, loss_name)] = float(np.mean(errs))

    if "np-agt" in methods:
        per_party["np-agt"] = {n: 0.0 for n in names}  # nothing released
        spent["np-agt"] = 0.0
        for loss_name in losses:
            errs = [_theta_error(schema, loss_name, pfds_baselines.np_agent_model(
                schema, data[n][0], data[n][1], loss_for(loss_name), setting.params.lam), X_test, y_test)
                for n in evaluated]
            errors[("np-agt", loss_name)] = float(np.mean(errs))
    if "np-agt-cv" in methods:  # NP-Agt with pfds (mpdp)'s regulariser choice: what sharing adds beyond tuning
        per_party["np-agt-cv"] = {n: 0.0 for n in names}
        spent["np-agt-cv"] = 0.0
        p = setting.params
        for loss_name in losses:
            loss = loss_for(loss_name)
            errs = []
            for n in evaluated:
                X_own, labels = features(schema, data[n][0]), data[n][1]
                y_own = erm.to_pm1(labels) if task == "classification" else labels
                if X_own.shape[0] < 2:  # cannot cross-validate one record: the fixed regulariser, as NP-Agt
                    theta = pfds_baselines.np_agent_model(schema, data[n][0], labels, loss, p.lam)
                else:
                    theta = cv_fit(loss, X_own, y_own, X_own[:0], y_own[:0], weights=(0.0,), lams=p.lams,
                                   folds=min(p.cv_folds, X_own.shape[0]), prior_correction=False,
                                   rng=rng.spawn(f"np-agt-cv {n} {loss_name}")).theta
                errs.append(_theta_error(schema, loss_name, theta, X_test, y_test))
            errors[("np-agt-cv", loss_name)] = float(np.mean(errs))
    if "dp-pred" in methods:
        vote_rng = rng.spawn("dp-pred votes")
        for loss_name in losses:
            ledgers = {n: PrivacyLedger(epsilon=setting.epsilon, subject=f"party:{n}") for n in sharers}
            models = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                for n in sharers:
                    models.append(pfds_baselines.dp_pred_model(
                        schema, data[n][0], data[n][1], loss_for(loss_name),
                        epsilon=setting.epsilon, lam=setting.dp_pred_lam, rng=rng.spawn(f"dp-pred {n} {loss_name}"),
                        ledger=ledgers[n]))
            predicted = pfds_baselines.committee(schema, models, test.values, task, vote_rng)
            errors[("dp-pred", loss_name)] = _error(loss_name, predicted, y_test)
            per_party[f"dp-pred/{loss_name}"] = {n: led.spent.epsilon for n, led in ledgers.items()}
            spent[f"dp-pred/{loss_name}"] = max(per_party[f"dp-pred/{loss_name}"].values())
    return SplitResult(errors, spent, per_party, comm, time.perf_counter() - start, extra, shared)
