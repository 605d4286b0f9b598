"""The baselines PFDS is compared with (paper 004, section 4): NP-Agt and DP-Pred.

* **NP-Agt**: every agent trains the ERM task on its own records only, without privacy (the error is the
  mean over agents).
* **DP-Pred**: every sharer releases a DP predictor trained on its own records, and the released predictors
  are aggregated: a majority vote of their class predictions (logistic regression, SVM) or a committee
  average (linear regression). The predictors are objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011,
  Algorithm 2; :class:`mpdp.dp.ObjectivePerturbation`) for logistic regression and for the SVM (with the
  Huber hinge, which the method's smoothness condition needs), and the functional mechanism (Zhang et al.
  2012; :func:`mpdp.learning.functional_mechanism.model.centralized_fm`) for linear regression. Each release
  is charged to the sharer's ledger.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 2.2 (majority voting, committee machines),
section 4 (Mechanisms), section 5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mpdp.dp import ObjectivePerturbation
from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import ParameterError, explain
from mpdp.learning import erm
from mpdp.learning.pfds.schema import Schema, encoded_features, features
from mpdp.randomness import RandomSource

__all__ = ["committee", "dp_pred_model", "np_agent_model", "regression_prediction"]

FloatArray = npt.NDArray[np.float64]


def np_agent_model(schema: Schema, values: FloatArray, labels: FloatArray, loss: erm.Loss, lam: float) -> FloatArray:
    """NP-Agt: the non-private ERM solution on one agent's own records."""
    X = features(schema, values)
    y = erm.to_pm1(labels) if loss.task == "classification" else labels
    return erm.solve(erm.Objective(loss, X, y, lam), tol=1e-8).theta


def dp_pred_model(schema: Schema, values: FloatArray, labels: FloatArray, loss: erm.Loss, *, epsilon: float,
                  lam: float, rng: RandomSource, ledger: BudgetSpender | None) -> FloatArray:
    """One sharer's DP predictor (its parameter vector over :func:`features`), charged to ``ledger``.

    Classification: objective perturbation (CMS11 Algorithm 2) needs ``||x|| <= 1`` (true of
    :func:`features`), a 1-Lipschitz loss and a bound ``c`` on its second derivative: the logistic loss
    (``c = 1/4``) or the Huber hinge (``c = 1/(2h)``); the plain hinge is refused. Regression: the functional
    mechanism on the encoded features (in [-1, 1]) with its own intercept.
    """
    if loss.task == "regression":
        # imported here: the functional mechanism's module brings scikit-learn, which a classification agent's
        # process need not import
        from mpdp.learning.functional_mechanism.model import centralized_fm

        Xi = _with_constant(encoded_features(schema, values))
        # Each encoded row has L1 norm <= #attributes (one 1 per categorical block), plus the constant column.
        result = centralized_fm("linear", Xi, labels, epsilon=epsilon, row_l1=len(schema.attributes) + 1.0,
                                rng=rng, ledger=ledger)
        return np.asarray(result.weights, dtype=np.float64)
    if not np.isfinite(loss.smoothness):
        raise ParameterError(explain("loss", loss.name, "a smooth loss (logistic or smooth_hinge)",
                                     "objective perturbation needs a twice-differentiable loss: use SmoothHingeLoss"))
    X = features(schema, values)
    n, d = X.shape
    op = ObjectivePerturbation(epsilon=epsilon, n_samples=n, regularization=lam, smoothness=loss.smoothness)
    b = op.noise(d, rng=rng, ledger=ledger, label="dp-pred objective perturbation")
    objective = erm.Objective(loss, X, erm.to_pm1(labels), lam + op.extra_regularization, linear=b / n)
    return erm.solve(objective, tol=1e-8).theta


def _with_constant(X: FloatArray) -> FloatArray:
    out: FloatArray = np.hstack([X, np.ones((X.shape[0], 1))])
    return out


def regression_prediction(schema: Schema, model: FloatArray, values: FloatArray) -> FloatArray:
    """A DP-Pred linear regression model's predictions (its features are the encoding plus a constant)."""
    out: FloatArray = _with_constant(encoded_features(schema, values)) @ model
    return out


def committee(schema: Schema, models: Sequence[FloatArray], values: FloatArray, task: str,
              rng: RandomSource) -> FloatArray:
    """DP-Pred's aggregate prediction: majority vote of classes (ties: a fair coin) or the mean prediction."""
    if task == "regression":
        Xi = _with_constant(encoded_features(schema, values))
        preds: FloatArray = np.mean([Xi @ m for m in models], axis=0)
        return preds
    X = features(schema, values)
    votes = np.sum([np.where(X @ m >= 0.0, 1, -1) for m in models], axis=0)
    coin = rng.bits(votes.shape[0]).astype(np.float64)
    out: FloatArray = np.where(votes > 0, 1.0, np.where(votes < 0, 0.0, coin))
    return out
