"""Paper 003's six methods as scikit-learn estimators, every party simulated in-process.

``DistributedERMClassifier(method=Method.MPC_GRADP, epsilon=0.5, delta=1e-3, parties=10).fit(X, y)`` splits
the rows of ``X`` at random into ``parties`` near-equal parties and runs the method
(:mod:`mpdp.learning.distributed_erm`): MPC Grad P / MPC Out P with the noise made inside the secure computation,
Pathak et al., or the local baselines. :class:`DistributedERMRegressor` is the same with the Huber-capped ridge
loss. Features must lie in [-1, 1] (``clip=True`` clips them there, and a regression target into [-1, 1]); rows
enter the unit ball the proofs assume by the public map ``[x / sqrt(d), 1] / sqrt(2)``. Parameters, randomness,
cloning and the budget: :mod:`mpdp.learning.estimator`. Each fit charges a record's guarantee
(:meth:`~mpdp.learning.distributed_erm.rounds.Schedule.record_cost`, the largest charge of any party, the
charge every engine makes) on ``ledger`` before any party starts. Parameter defaults are the spec's
(:mod:`mpdp.learning.distributed_erm.spec`); the options are checked by its settings.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin

from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import ParameterError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.common import DistributedFit
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.learning.distributed_erm.rounds import fit, perturbation_of, setup_of
from mpdp.learning.distributed_erm.spec import ERMSettings, Method, MPCGradientSettings, settings_class
from mpdp.learning.estimator import (
    LinearBinaryClassifier,
    PrivateEstimator,
    binary_labels,
    classes_of,
    row_split,
    unit_box,
)
from mpdp.learning.spec.run import DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_PARTIES
from mpdp.randomness import RandomSource

__all__ = ["DistributedERMClassifier", "DistributedERMRegressor"]

FloatArray = npt.NDArray[np.float64]
_DEFAULTS = MPCGradientSettings()  # every option's default, written once in the spec
_OPTIONS = ("lam", "T", "eta", "accountant", "aggregators")  # the options an estimator takes as parameters


class _DistributedERM(PrivateEstimator):
    """Shared fit; see :class:`DistributedERMClassifier`."""

    _loss: erm.Loss = erm.LogisticLoss()

    def __init__(self, method: str = Method.MPC_GRADP.value, epsilon: float = DEFAULT_EPSILON,
                 delta: float = DEFAULT_DELTA, *, T: int = _DEFAULTS.T, eta: float = _DEFAULTS.eta,
                 lam: float = _DEFAULTS.lam, parties: int = DEFAULT_PARTIES["horizontal"],
                 accountant: str = _DEFAULTS.accountant, aggregators: int = _DEFAULTS.aggregators,
                 clip: bool = False, ledger: BudgetSpender | None = None, rng: RandomSource | None = None,
                 random_state: int | None = None) -> None:
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.T = T
        self.eta = eta
        self.lam = lam
        self.parties = parties
        self.accountant = accountant
        self.aggregators = aggregators
        self.clip = clip
        self.ledger = ledger
        self.rng = rng
        self.random_state = random_state

    def _settings(self) -> tuple[Method, ERMSettings]:
        """The method and its options, checked by the spec's settings (the errors of every engine)."""
        if self.method not in tuple(Method):
            raise ParameterError(explain("method", self.method, f"one of {[m.value for m in Method]}",
                                         "pick a paper-003 method"))
        method = Method(self.method)
        source = type(self).__name__
        given = MPCGradientSettings.from_options({k: getattr(self, k) for k in _OPTIONS}, source=source)
        options = settings_class(method)
        return method, options.from_options({k: getattr(given, k) for k in options.names() if k in _OPTIONS},
                                            source=source)

    def fit(self, X: Any, y: Any) -> Self:
        method, settings = self._settings()
        Xa, ya = self._check_features_labels(X, y)
        Xa, ya = unit_box(Xa, clip=self.clip), self._labels(ya)
        d = Xa.shape[1]
        rows = erm.add_intercept(Xa / math.sqrt(d))
        root = self._fit_source()
        parties = HorizontalParties.from_rows(rows, ya, row_split(Xa.shape[0], self.parties, root.spawn("rows")),
                                              task=self._loss.task)
        result: DistributedFit = fit(method, ERMProblem(self._loss, lam=settings.lam), parties,
                                     perturbation_of(method, settings, self.epsilon, self.delta),
                                     rng=root.spawn(method), ledger=self.ledger, setup=setup_of(settings))
        h = 1.0 / math.sqrt(2.0)  # add_intercept: [x / sqrt(d), 1] / sqrt(2)
        self.theta_ = result.theta
        self.coef_ = result.theta[:-1] * h / math.sqrt(d)
        self.intercept_ = float(result.theta[-1] * h)
        self.epsilon_spent_, self.delta_spent_ = result.privacy.epsilon, result.privacy.delta
        self.per_party_epsilon_ = dict(result.privacy.per_party or {})
        self.communication_ = dict(result.communication)
        return self

    def _labels(self, y: FloatArray) -> FloatArray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _linear(self, X: Any) -> FloatArray:
        Xa = unit_box(self._check_features(X, reset=False), clip=True)
        out: FloatArray = Xa @ self.coef_ + self.intercept_
        return out


class DistributedERMClassifier(LinearBinaryClassifier, _DistributedERM):
    """Regularised logistic regression by one of paper 003's methods (``method``); labels 0 and 1.

    After fit: ``coef_``, ``intercept_`` (on the features as given), ``theta_`` (on the unit-ball rows),
    ``classes_``, ``epsilon_spent_``, ``delta_spent_``, ``per_party_epsilon_``, ``communication_``.
    """

    _loss: erm.Loss = erm.LogisticLoss()

    def _labels(self, y: FloatArray) -> FloatArray:
        return erm.to_pm1(binary_labels(y))

    def fit(self, X: Any, y: Any) -> Self:
        super().fit(X, y)
        self.classes_ = classes_of()
        return self

    def decision_function(self, X: Any) -> FloatArray:
        return self._linear(X)


class DistributedERMRegressor(RegressorMixin, _DistributedERM):  # type: ignore[misc]
    """Ridge regression with the Huber-capped loss (c = 1) by one of paper 003's methods; ``y`` in [-1, 1]."""

    _loss: erm.Loss = erm.HuberLoss(c=1.0)

    def _labels(self, y: FloatArray) -> FloatArray:
        return np.clip(y, -1.0, 1.0) if self.clip else y

    def predict(self, X: Any) -> FloatArray:
        return self._linear(X)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
