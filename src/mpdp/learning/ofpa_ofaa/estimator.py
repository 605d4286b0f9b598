"""OFPA / OFAA logistic regression as a scikit-learn classifier (paper 001), all owners simulated in-process.

``OfpaOfaaClassifier(method=Method.OFAA, epsilon=0.8, parties=3).fit(X, y)`` splits the rows of ``X`` at random
into ``parties`` near-equal owners and runs :func:`mpdp.learning.ofpa_ofaa.model.fit` (every owner's perturbed
local fit, secure aggregation, the rounds). Features must lie in [-1, 1] (``clip=True`` clips them there); the
public row-norm bound is then ``sqrt(d)``, and rows enter the proofs' unit ball as ``[x, 1] / sqrt(d + 1)``.
Labels are 0 and 1. Parameters, randomness, cloning and the budget: :mod:`mpdp.learning.estimator`.
Each fit charges the owners' cost (:func:`~mpdp.learning.ofpa_ofaa.model.owner_cost`: ``epsilon``, a record's
guarantee since owners hold disjoint rows) on ``ledger`` before any owner starts, as every engine charges it.
Parameter defaults are the spec's (:mod:`mpdp.learning.ofpa_ofaa.spec`); the options are checked by its settings.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.dp.sensitivities.ofpa_ofaa import intercept_weight
from mpdp.errors import ParameterError, explain
from mpdp.learning.estimator import LinearBinaryClassifier, binary_labels, classes_of, row_split, unit_box
from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, fit, owner_cost
from mpdp.learning.ofpa_ofaa.parties import Method
from mpdp.learning.ofpa_ofaa.spec import OfaaSettings, OfpaSettings
from mpdp.learning.spec.run import DEFAULT_EPSILON, DEFAULT_PARTIES
from mpdp.randomness import RandomSource

__all__ = ["OfpaOfaaClassifier"]

FloatArray = npt.NDArray[np.float64]
_DEFAULTS = OfpaSettings()  # the options' defaults, written once in the spec


class OfpaOfaaClassifier(LinearBinaryClassifier):
    """Paper 001's OFPA, Algorithm 1 or OFAA (``method``, a :class:`~mpdp.learning.ofpa_ofaa.parties.Method`); see
    the module.

    After fit: ``coef_``, ``intercept_`` (on the features as given), ``theta_`` (on the unit-ball rows),
    ``classes_``, ``epsilon_spent_`` (per owner), ``rounds_``, ``communication_``.
    """

    def __init__(self, method: str = Method.OFPA.value, epsilon: float = DEFAULT_EPSILON, *,
                 parties: int = DEFAULT_PARTIES["horizontal"],
                 lam: float = _DEFAULTS.lam, eta: float = _DEFAULTS.eta, max_rounds: int = _DEFAULTS.max_rounds,
                 noise: str = _DEFAULTS.noise, clip: bool = False,
                 ledger: BudgetSpender | None = None, rng: RandomSource | None = None,
                 random_state: int | None = None) -> None:
        self.method = method
        self.epsilon = epsilon
        self.parties = parties
        self.lam = lam
        self.eta = eta
        self.max_rounds = max_rounds
        self.noise = noise
        self.clip = clip
        self.ledger = ledger
        self.rng = rng
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> Self:
        Xa, ya = self._check_features_labels(X, y)
        Xa, ya = unit_box(Xa, clip=self.clip), binary_labels(ya)
        settings = self._settings()
        root = self._fit_source()
        names = tuple(f"x{j}" for j in range(Xa.shape[1]))
        owners = [Dataset(name=f"owner{k}", X=Xa[idx], y=ya[idx], feature_names=names, task="classification")
                  for k, idx in enumerate(row_split(Xa.shape[0], self.parties, root.spawn("rows")))]
        cost = owner_cost(settings)
        if self.ledger is not None and cost is not None:  # the owners' guarantee, charged before any owner starts
            self.ledger.spend(cost, label=f"{self.method}")
        result = fit(owners, settings, rng=root.spawn("fit"))
        self.theta_ = result.theta
        h = intercept_weight(math.sqrt(Xa.shape[1]))  # prepare_rows: [x, 1] * h
        self.coef_, self.intercept_ = h * result.theta[:-1], float(h * result.theta[-1])
        self.classes_ = classes_of()
        self.epsilon_spent_ = dict(result.epsilon_spent)
        self.rounds_ = result.rounds
        self.communication_ = dict(result.communication)
        return self

    def _settings(self) -> OfpaOfaaSettings:
        """The run's settings: the parameters checked by the algorithm's spec (the same errors as every engine)."""
        private = [m for m in Method if m != Method.NONE]
        if self.method not in private:
            raise ParameterError(explain("method", self.method, f"one of {private} (a DP release)",
                                         "the non-private fit is mpdp.learning.ofpa_ofaa.model.fit"))
        given: dict[str, Any] = {"lam": self.lam, "eta": self.eta, "max_rounds": self.max_rounds, "noise": self.noise}
        options: OfaaSettings
        if self.method == Method.OFAA:
            options = OfaaSettings.from_options(given, source=type(self).__name__)
        else:
            options = OfpaSettings.from_options(
                {**given, "perturbation": "objective" if self.method == Method.OFPA else "output"},
                source=type(self).__name__)
        return OfpaOfaaSettings.of(options, self.epsilon)

    def decision_function(self, X: Any) -> FloatArray:
        Xa = unit_box(self._check_features(X, reset=False), clip=True)
        out: FloatArray = Xa @ self.coef_ + self.intercept_
        return out
