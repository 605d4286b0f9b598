"""What paper 004's agents compute about themselves after the protocol, for the experiments' error figures.

Every figure of paper 004's section 4 is the error, on held-out test records, of a predictor that stays with an
agent (PFDS, PFDS(s), PFDS-, NP-Agt) or of the sharers' released DP predictors (DP-Pred). Here each of those
computations is a role of the agent itself, so the same code runs in memory and with every agent in its own
process (:mod:`mpdp.deploy`):

* :class:`AgentEvaluation` is what an evaluated agent is given: the analyst's test records (attribute view and
  labels), the losses and which fits to score. :class:`~mpdp.learning.pfds.model.PFDSAgent` scores its fits
  after the protocol and returns the test errors only: its predictor never leaves it;
* :class:`LocalAgent` is NP-Agt (and NP-Agt with the cross-validated regulariser): a fit on the agent's own
  records, scored the same way, with no message;
* :class:`DPPredSharer` is one DP-Pred sharer: it releases its DP predictor (charged to its ledger), and the
  analyst votes the released predictors on the test records.

Privacy
-------
A returned test error is a statistic of the agent's non-private predictor: evaluation output, not protected by
DP, as in the paper's experiments (the analyst who reports a figure learns it). An agent that only trains,
outside an experiment, is given no :class:`AgentEvaluation` and returns no error.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 4 (the error measures of Table 2 and Figure 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.learning.pfds import baselines
from mpdp.learning.pfds.fit import cv_fit
from mpdp.learning.pfds.schema import Schema, features
from mpdp.runtime import Comm, Party

__all__ = ["FITS", "LOSSES", "AgentEvaluation", "DPPredSharer", "LocalAgent", "SpendTally", "error_of",
           "loss_for", "theta_error"]

FloatArray = npt.NDArray[np.float64]

LOSSES = ("logistic", "svm", "linear")
#: how an agent trains on its own plus the shared records (:mod:`mpdp.learning.pfds.fit`)
FITS = ("paper", "mpdp")


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


def error_of(loss_name: str, predicted: FloatArray, truth: FloatArray) -> float:
    """Misclassification rate (classification losses) or mean squared error (``linear``)."""
    if loss_name == "linear":
        return float(np.mean((predicted - truth) ** 2))
    return float(np.mean(predicted != truth))


def theta_error(loss_name: str, theta: FloatArray, X: FloatArray, y: FloatArray) -> float:
    """The test error of a linear predictor ``theta`` over :func:`~mpdp.learning.pfds.model.features` rows."""
    scores = X @ theta
    predicted = scores if loss_name == "linear" else (scores >= 0).astype(np.float64)
    return error_of(loss_name, predicted, y)


@dataclass(frozen=True)
class AgentEvaluation:
    """The test records an evaluated agent scores its predictors on, the losses, and the fits to score."""

    values: FloatArray
    labels: FloatArray
    losses: tuple[str, ...]
    fits: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.values.ndim != 2 or self.labels.shape != (self.values.shape[0],) or self.values.shape[0] == 0:
            raise ShapeMismatchError(explain("test records", (self.values.shape, self.labels.shape),
                                             "n x d attribute-view rows (n >= 1) and n labels",
                                             "give the analyst's held-out records"))
        for name in self.losses:
            loss_for(name)
        unknown = [f for f in self.fits if f not in FITS]
        if unknown:
            raise ParameterError(explain("fits", unknown, f"names from {FITS}", "fix the fit names"))

    def test_features(self, schema: Schema) -> FloatArray:
        return features(schema, self.values)


class SpendTally:
    """A ledger wrapper that also sums what the agent charged in this run (its result reports it)."""

    def __init__(self, ledger: BudgetSpender) -> None:
        self.ledger = ledger
        self.costs: list[PrivacyCost] = []

    def spend(self, cost: PrivacyCost, *, label: str) -> Any:
        entry = self.ledger.spend(cost, label=label)
        self.costs.append(cost)
        return entry

    @property
    def epsilon(self) -> float:
        """The epsilons charged, summed exactly rounded (basic composition, as the ledger sums them)."""
        return math.fsum(c.epsilon for c in self.costs)


class LocalAgent(Party):
    """NP-Agt (paper 004's baseline): each loss fitted on the agent's own records only, without privacy.

    ``cv=True`` is NP-Agt with the regulariser chosen as the mpdp fit chooses it (``lams``, ``cv_folds``-fold
    CV on the agent's own records; an agent with one record keeps ``lam``). Returns ``{"errors": {loss:
    error}}`` on ``evaluation``'s test records; sends nothing, releases nothing."""

    def __init__(self, name: str, values: FloatArray, labels: FloatArray, schema: Schema,
                 evaluation: AgentEvaluation, *, lam: float, cv: bool = False,
                 lams: tuple[float, ...] = (), cv_folds: int = 3) -> None:
        super().__init__(name)
        self.values, self.labels, self.schema = values, labels, schema
        self.evaluation, self.lam, self.cv, self.lams, self.cv_folds = evaluation, lam, cv, lams, cv_folds

    def run(self, comm: Comm) -> dict[str, Any]:
        X_test, y_test = self.evaluation.test_features(self.schema), self.evaluation.labels
        errors = {}
        for loss_name in self.evaluation.losses:
            loss = loss_for(loss_name)
            if self.cv and self.values.shape[0] >= 2:
                X_own = features(self.schema, self.values)
                y_own = erm.to_pm1(self.labels) if loss.task == "classification" else self.labels
                theta = cv_fit(loss, X_own, y_own, X_own[:0], y_own[:0], weights=(0.0,), lams=self.lams,
                               folds=min(self.cv_folds, X_own.shape[0]), prior_correction=False,
                               rng=comm.rng.spawn(f"cv {loss_name}")).theta
            else:  # NP-Agt, or one record, which cannot be cross-validated: the fixed regulariser
                theta = baselines.np_agent_model(self.schema, self.values, self.labels, loss, self.lam)
            errors[loss_name] = theta_error(loss_name, theta, X_test, y_test)
        return {"errors": errors}


class DPPredSharer(Party):
    """One DP-Pred sharer: releases its DP predictor for ``loss`` (:func:`baselines.dp_pred_model`), charged to
    ``ledger``. Returns ``{"model": theta, "spent": epsilon}``; the analyst votes the released models."""

    def __init__(self, name: str, values: FloatArray, labels: FloatArray, schema: Schema, loss: str, *,
                 epsilon: float, lam: float, ledger: BudgetSpender) -> None:
        super().__init__(name)
        self.values, self.labels, self.schema, self.loss = values, labels, schema, loss
        self.epsilon, self.lam, self.ledger = epsilon, lam, ledger

    def run(self, comm: Comm) -> dict[str, Any]:
        tally = SpendTally(self.ledger)
        model = baselines.dp_pred_model(self.schema, self.values, self.labels, loss_for(self.loss),
                                        epsilon=self.epsilon, lam=self.lam, rng=comm.rng, ledger=tally)
        return {"model": np.asarray(model, dtype=np.float64), "spent": tally.epsilon}
