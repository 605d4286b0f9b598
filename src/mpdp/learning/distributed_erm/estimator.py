"""Paper 003's six methods as scikit-learn estimators, every party simulated in-process.

``DistributedERMClassifier(method="mpc-gradp", epsilon=0.5, delta=1e-3, T=100, parties=10).fit(X, y)`` splits
the rows of ``X`` at random into ``parties`` near-equal parties and runs the method
(:mod:`mpdp.learning.distributed_erm`): MPC Grad P / MPC Out P with the noise made inside the secure computation,
Pathak et al., or the local baselines. :class:`DistributedERMRegressor` is the same with the Huber-capped ridge
loss. Features must lie in [-1, 1] (``clip=True`` clips them there, and a regression target into [-1, 1]); rows
enter the unit ball the proofs assume by the public map ``[x / sqrt(d), 1] / sqrt(2)``. Parameters, randomness,
cloning and the budget (each fit charges its cost on ``ledger`` before anything is released):
:mod:`mpdp.learning.estimator`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Self, cast

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin

from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import ParameterError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.baselines import fit_local_gradp, fit_local_objp, fit_local_outp
from mpdp.learning.distributed_erm.common import Accountant, DistributedFit, GradientPerturbation, OutputPerturbation
from mpdp.learning.distributed_erm.mpc import MPCSetup, fit_mpc_gradp, fit_mpc_outp, fit_pathak
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.learning.estimator import (
    LinearBinaryClassifier,
    PrivateEstimator,
    binary_labels,
    classes_of,
    row_split,
    unit_box,
)
from mpdp.randomness import RandomSource

__all__ = ["DistributedERMClassifier", "DistributedERMRegressor"]

FloatArray = npt.NDArray[np.float64]
_FITS: dict[str, Callable[..., DistributedFit]] = {
    "pathak": fit_pathak, "local-outp": fit_local_outp, "local-objp": fit_local_objp,
    "local-gradp": fit_local_gradp, "mpc-outp": fit_mpc_outp, "mpc-gradp": fit_mpc_gradp}
_GRADIENT = ("local-gradp", "mpc-gradp")
_MPC = ("mpc-outp", "mpc-gradp", "pathak")


class _DistributedERM(PrivateEstimator):
    """Shared fit; see :class:`DistributedERMClassifier`."""

    _loss: erm.Loss = erm.LogisticLoss()

    def __init__(self, method: str = "mpc-gradp", epsilon: float = 0.5, delta: float = 1e-3, *, T: int = 100,
                 eta: float = 1.0, lam: float = 1e-3, parties: int = 3, accountant: str = "zcdp",
                 aggregators: int = 2, clip: bool = False, ledger: BudgetSpender | None = None,
                 rng: RandomSource | None = None, random_state: int | None = None) -> None:
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

    def _labels(self, y: FloatArray) -> FloatArray:  # pragma: no cover - overridden
        raise NotImplementedError

    def fit(self, X: Any, y: Any) -> Self:
        if self.method not in _FITS:
            raise ParameterError(explain("method", self.method, f"one of {sorted(_FITS)}", "pick a paper-003 method"))
        Xa, ya = self._check_features_labels(X, y)
        Xa, ya = unit_box(Xa, clip=self.clip), self._labels(ya)
        d = Xa.shape[1]
        rows = erm.add_intercept(Xa / math.sqrt(d))
        root = self._fit_source()
        parties = HorizontalParties.from_rows(rows, ya, row_split(Xa.shape[0], self.parties, root.spawn("rows")),
                                              task=self._loss.task)
        settings: GradientPerturbation | OutputPerturbation
        if self.method in _GRADIENT:
            settings = GradientPerturbation(epsilon=self.epsilon, delta=self.delta, T=self.T, eta=self.eta,
                                            accountant=cast(Accountant, self.accountant))
        else:
            settings = OutputPerturbation(epsilon=self.epsilon)
        kwargs: dict[str, Any] = {"setup": MPCSetup(aggregators=self.aggregators)} if self.method in _MPC else {}
        fit: DistributedFit = _FITS[self.method](ERMProblem(self._loss, lam=self.lam), parties, settings,
                                                 rng=root.spawn(self.method), ledger=self.ledger, **kwargs)
        h = 1.0 / math.sqrt(2.0)  # add_intercept: [x / sqrt(d), 1] / sqrt(2)
        self.theta_ = fit.theta
        self.coef_ = fit.theta[:-1] * h / math.sqrt(d)
        self.intercept_ = float(fit.theta[-1] * h)
        self.epsilon_spent_, self.delta_spent_ = fit.privacy.epsilon, fit.privacy.delta
        self.per_party_epsilon_ = dict(fit.privacy.per_party or {})
        self.communication_ = dict(fit.communication)
        return self

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
