"""The functional mechanism on vertically partitioned data: linear and logistic regression (paper 000).

Implements Xu, Yuan, Wu, "Achieving Differential Privacy in Vertically Partitioned Multiparty Learning"
(IEEE BigData 2021; :data:`mpdp.learning.papers.PAPERS`): Algorithm 1, the dissection of Equation 5, Theorem 1
(eps-DP on D), Theorem 2 (per-party guarantees) and the bottom-up extension (Corollary 1), on top of the
centralised functional mechanism of Zhang et al. (PVLDB 2012), which :func:`centralized_fm` implements as the
reference.

Deviations from the paper, each sound
-------------------------------------
* Monomials are a set (``w_a w_b == w_b w_a``): each is released once, with coefficient ``2 M_ab``; the paper's
  sensitivity is unchanged and the noise on ``M_ab`` halves.
* Per-party sensitivities for linear regression use the corrected Lemma 2 value (see the sensitivities module).
* Bottom-up, the guarantee on D is the composition ``sum eps^k + sum eps^kl``, tighter than Corollary 1.
* Noise is exact discrete Laplace on a grid, calibrated to the grid-inflated sensitivity.
* Optional public row-L1 bounds per party (e.g. one per encoded attribute, since a one-hot group has L1 norm 1)
  replace the box bound ``d_k``; the default is the paper's.
* Cross-party coefficients stay secret-shared between the two parties until each adds its noise, so no party
  learns an exact cross-party coefficient (the paper lets the parties decrypt them). One secure product per
  pair of parties gives all the blocks the pair shares.
* Approximate products (CKKS) move the coefficients by up to their documented error; that error is added to
  the sensitivity, so the guarantee covers what is really released (:func:`~mpdp.learning.functional_mechanism.noise.
  approximation_inflation`). Exact backends (shares, Paillier) release bit-for-bit the centralised objective of
  the features rounded to the plan's fixed-point grid (Claim 1).

References
----------
Paper 000 (Xu et al., IEEE BigData 2021; :data:`mpdp.learning.papers.PAPERS`): Algorithm 1, Equations 2-7,
Lemmas 1-2, Theorems 1-2, Claim 1, Corollary 1, Tables 1-3. Zhang, Zhang, Xiao, Yang, Winslett, "Functional
mechanism: regression analysis under differential privacy", PVLDB 5(11), 2012.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from sklearn.base import RegressorMixin

from mpdp.datasets.dataset import Dataset
from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.dp.sensitivities.functional_mechanism import FMObjective
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.erm import LogisticLoss, Objective, add_intercept, solve, to_pm1
from mpdp.learning.estimator import LinearBinaryClassifier, PrivateEstimator, binary_labels, classes_of
from mpdp.learning.functional_mechanism.noise import (
    FMPlan,
    PartyNoise,
    add_noise,
    assemble_release,
    local_units,
    plan_for_columns,
)
from mpdp.learning.functional_mechanism.objective import (
    ColumnPartition,
    attribute_l1_bounds,
    check_features,
    check_labels,
    exact_objective,
)
from mpdp.learning.functional_mechanism.parties import run_vertical_fm
from mpdp.learning.functional_mechanism.release import FMResult, SolveSettings, solve_release
from mpdp.learning.functional_mechanism.spec import SETTINGS, FMSettings
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "FMLinearRegression",
    "FMLogisticRegression",
    "FMResult",
    "SolveSettings",
    "centralized_fm",
    "fm_estimator",
    "non_private_score",
    "paper_metric",
    "solve_release",
]

FloatArray = npt.NDArray[np.float64]

def centralized_fm(objective: FMObjective, X: npt.ArrayLike, y: npt.ArrayLike, *, epsilon: float,
                   row_l1: float | None = None, clip: bool = False, settings: SolveSettings | None = None,
                   rng: RandomSource | None = None, noise_rng: RandomSource | None = None,
                   ledger: BudgetSpender | None = None) -> FMResult:
    """The functional mechanism of Zhang et al. (2012) with one data holder: the reference for Claim 1.

    Parameters
    ----------
    objective:
        ``"linear"`` (``y`` in [-1, 1]) or ``"logistic"`` (``y`` in {0, 1}, order-2 Taylor expansion).
    X:
        Features in [-1, 1] (refused otherwise, or clipped with ``clip=True``).
    epsilon:
        The budget; every coefficient gets ``Lap(Delta_f / epsilon)`` on the grid.
    row_l1:
        Public bound on each row's L1 norm (default d: the paper's Delta_f).
    rng, noise_rng:
        The noise is drawn from ``noise_rng`` (default ``rng.spawn("fm-noise")``) by the column-keyed streams of
        :mod:`mpdp.learning.functional_mechanism.noise`, so a vertical run given the same ``noise_rng`` draws the
        same noise.
    ledger:
        Charged ``epsilon`` before any noise is drawn.

    Security
    --------
    eps-DP for D under replace-one-record neighbours (Theorem 1), given the feature and label domain.

    Accuracy
    --------
    Features and labels are rounded to the grid 2^-f of the plan (as the secure products encode them; f >= 4,
    typically 11-20); coefficient noise is Laplace with scale ``(floor(Delta 2^k) + D) / (eps 2^k)``, a relative
    inflation below ``D 2^-k eps / Delta``; the order-2 Taylor objective is biased for logistic regression
    (paper, "Logistic Regression"). The solve trims noise-dominated directions (:class:`SolveSettings`).
    """
    Xc = check_features(X, row_l1, clip=clip)
    yc = check_labels(objective, y, clip=clip)
    if Xc.shape[0] != yc.shape[0]:
        raise ShapeMismatchError(explain("X, y", (Xc.shape, yc.shape), "one label per row", "align X and y"))
    d = Xc.shape[1]
    plan = FMPlan(objective, ColumnPartition((tuple(range(d)),), 0),
                  party_l1=(float(d) if row_l1 is None else float(row_l1),), epsilon=epsilon, records=Xc.shape[0])
    root = resolve(rng)
    noise = PartyNoise(plan, noise_rng if noise_rng is not None else root.spawn("fm-noise"))
    if ledger is not None:
        for cost in plan.costs():
            ledger.spend(cost, label=f"fm-{objective}")
    exact = exact_objective(objective, plan.round_features(Xc), plan.round_features(yc))
    released = {}
    for block in plan.groups:
        value: Any = exact.constant if block[0] == "const" else exact.linear if block[0] == "lin" else exact.quad
        released[block] = add_noise(plan, 0, block, local_units(plan, block, value), noise)
    noisy = assemble_release(plan, released)
    solved = solve_release(plan, noisy, settings or SolveSettings())
    return FMResult(solved.weights, plan, noisy, solved, plan.total_epsilon, plan.per_party_epsilon())


# -- estimators ------------------------------------------------------------------------------------------

class _FMEstimator(PrivateEstimator):
    """Shared scikit-learn machinery; see :class:`FMLogisticRegression` and :class:`FMLinearRegression`.

    Parameters, randomness (``rng``, ``noise_rng``, ``random_state``), cloning and the budget spent per fit on
    ``ledger``: :mod:`mpdp.learning.estimator`. ``ledger`` (the analyst's) is charged the release's cost on D
    (the run's total, ``epsilon``); ``party_ledgers`` (keyed ``party0``, ``party1``, ...) each party's own
    guarantee ``eps^(k)`` (:func:`~mpdp.learning.functional_mechanism.parties.party_cost`), what a deployed
    party's ledger is charged. ``fit_intercept`` and ``settings`` (the server's solve; None: the spec's
    defaults, :mod:`mpdp.learning.functional_mechanism.spec`) are checked by the spec's settings at fit.
    """

    _objective: FMObjective = "logistic"

    def __init__(self, epsilon: float | None = 1.0, *, partition: Sequence[Sequence[int]] | None = None,
                 label_party: int = 0, backend: str = "shares", fit_intercept: bool = FMSettings.intercept,
                 row_l1: Sequence[float] | None = None, bottom_up: Mapping[str, Any] | None = None,
                 clip: bool = False, settings: SolveSettings | None = None, rng: RandomSource | None = None,
                 noise_rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                 party_ledgers: Mapping[str, BudgetSpender] | None = None,
                 backend_options: Mapping[str, Any] | None = None, random_state: int | None = None) -> None:
        self.epsilon = epsilon
        self.partition = partition
        self.label_party = label_party
        self.backend = backend
        self.fit_intercept = fit_intercept
        self.row_l1 = row_l1
        self.bottom_up = bottom_up
        self.clip = clip
        self.settings = settings
        self.rng = rng
        self.noise_rng = noise_rng
        self.ledger = ledger
        self.party_ledgers = party_ledgers
        self.backend_options = backend_options
        self.random_state = random_state

    def _labels(self, y: FloatArray) -> FloatArray:
        return y

    def spec_settings(self) -> FMSettings:
        """The estimator's spec options (``ridge``, ``trim``, ``intercept``) checked by the objective's
        settings class: the same typed errors as ``--option``."""
        solve = self.settings or SolveSettings()
        if not isinstance(solve, SolveSettings):
            raise ParameterError(explain(f"settings of {type(self).__name__}", type(solve).__name__,
                                         "None or a SolveSettings", "pass settings=SolveSettings(trim_factor=...)"))
        return SETTINGS[self._objective].from_options(
            {"ridge": solve.ridge_factor, "trim": solve.trim(self._objective), "intercept": self.fit_intercept},
            source=type(self).__name__)

    # The parameters are never changed by fit (STYLE: fit never changes constructor parameters).
    def plan_for(self, d: int) -> FMPlan:
        """The public plan of a fit on ``d`` feature columns (what every party and the server agree on)."""
        return plan_for_columns(self._objective, d, partition=self.partition, label_party=self.label_party,
                                fit_intercept=self.spec_settings().intercept, row_l1=self.row_l1,
                                epsilon=self.epsilon if self.bottom_up is None else None, bottom_up=self.bottom_up)

    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> Self:
        """Train on ``X`` (n x d, columns split by ``partition``) and ``y``; spends the budget once."""

        start = time.perf_counter()
        options = self.spec_settings()
        Xa, ya = self._check_features_labels(X, y)
        ya = self._labels(ya)
        n, d = Xa.shape
        plan = self.plan_for(d)
        part = plan.partition
        if options.intercept:
            Xa = np.hstack([Xa, np.ones((n, 1))])
        solve = SolveSettings(ridge_factor=options.ridge, trim_factor=options.trim_factor())
        result = run_vertical_fm(plan, part.split(Xa), ya, backend=self.backend, clip=self.clip, settings=solve,
                                 rng=self._fit_source(), noise_rng=self.noise_rng, ledger=self.ledger,
                                 party_ledgers=self.party_ledgers, backend_options=self.backend_options)
        return self.adopt(result, d, seconds=time.perf_counter() - start)

    def adopt(self, result: FMResult, d: int, *, seconds: float = 0.0) -> Self:
        """Take ``result``, a finished run's release on ``d`` feature columns, as this estimator's fit: what
        :meth:`fit` does once its parties are done, and what the deployment's report does with the server's
        result. Spends nothing (the run was charged)."""
        w = result.weights
        intercept = self.spec_settings().intercept
        if w.shape != (d + int(intercept),):
            raise ShapeMismatchError(explain("released weights", w.shape, f"({d + int(intercept)},): d features"
                                             + (" and the intercept" if intercept else ""),
                                             "adopt a run of this estimator's plan"))
        self.n_features_in_ = d
        self.coef_ = w[:d]
        self.intercept_ = float(w[d]) if intercept else 0.0
        if self._objective == "logistic":
            self.classes_ = classes_of()
        self.result_ = result
        self.epsilon_spent_ = result.epsilon_spent
        self.per_party_epsilon_ = result.per_party_epsilon
        self.communication_ = result.communication
        self.phases_ = result.phases
        self.seconds_ = seconds
        return self

    def _linear(self, X: npt.ArrayLike) -> FloatArray:
        """``X @ coef_ + intercept_`` (the released model applied to features in the fitted encoding)."""
        Xa = self._check_features(X, reset=False)
        out: FloatArray = Xa @ self.coef_ + self.intercept_
        return out


class FMLogisticRegression(LinearBinaryClassifier, _FMEstimator):
    """Differentially private logistic regression by the functional mechanism, on vertically split columns.

    ``fit(X, y)`` simulates the K parties of ``partition`` (lists of column indices; default one party, the
    centralised FM) and an honest-but-curious server, running every party's role over the in-memory transport
    with cross-party coefficients from the ``backend`` (``"shares"``, ``"ckks"``, ``"paillier"``).
    ``y`` in {0, 1}; features in [-1, 1]. After fit: ``coef_``, ``intercept_``, ``classes_`` (0 and 1),
    ``epsilon_spent_``, ``per_party_epsilon_``, ``communication_``, ``phases_`` (seconds per phase).
    ``score`` is the accuracy.
    """

    _objective: FMObjective = "logistic"

    def _labels(self, y: FloatArray) -> FloatArray:
        return binary_labels(y)

    def decision_function(self, X: npt.ArrayLike) -> FloatArray:
        """``X @ coef_ + intercept_``: the log-odds of class 1."""
        return self._linear(X)


class FMLinearRegression(RegressorMixin, _FMEstimator):  # type: ignore[misc]
    """Differentially private linear regression by the functional mechanism (see FMLogisticRegression).

    ``y`` in [-1, 1] (``clip=True`` clips it there, as it clips the features). ``score`` is scikit-learn's R^2
    (higher is better, what model selection maximises); :meth:`mse` is the paper's metric, the mean squared error.
    """

    _objective: FMObjective = "linear"

    def predict(self, X: npt.ArrayLike) -> FloatArray:
        return self._linear(X)

    def mse(self, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
        """Mean squared error (paper 000's metric; lower is better)."""
        return float(np.mean((self.predict(X) - np.asarray(y, dtype=np.float64)) ** 2))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # DP noise; the label domain [-1, 1] is public
        return tags


# -- a run's estimator and paper 000's metrics ----------------------------------------------------------------

def fm_estimator(train: Dataset, columns: Sequence[Sequence[int]], label_party: int, epsilon: float, backend: str,
                 rng: RandomSource, settings: FMSettings) -> FMLogisticRegression | FMLinearRegression:
    """The estimator of ``settings``' objective on the vertical split ``columns`` of ``train``, with the run's
    options: each party's row-L1 bound from the encoding (``l1="attributes"``) or its column count (``"box"``),
    the server's solve, the intercept."""
    cls: type[FMLogisticRegression | FMLinearRegression]
    cls = FMLogisticRegression if settings.objective == "logistic" else FMLinearRegression
    l1 = attribute_l1_bounds(train, columns) if settings.l1 == "attributes" else None
    return cls(epsilon, partition=[list(c) for c in columns], label_party=label_party, backend=backend,
               row_l1=l1, settings=SolveSettings(ridge_factor=settings.ridge, trim_factor=settings.trim_factor()),
               rng=rng, fit_intercept=settings.intercept)


def paper_metric(model: FMLogisticRegression | FMLinearRegression, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Paper 000's metric: accuracy (logistic) or mean squared error (linear)."""
    return model.mse(X, y) if isinstance(model, FMLinearRegression) else model.score(X, y)


def non_private_score(objective: FMObjective, train: Dataset, test: Dataset) -> float:
    """Paper 000's non-private reference: accuracy of (barely regularised) logistic regression, or MSE of least
    squares, with an intercept."""
    if objective == "logistic":
        sol = solve(Objective(LogisticLoss(), add_intercept(train.X), to_pm1(train.y), lam=1e-6))
        z = add_intercept(test.X) @ sol.theta
        return float(np.mean((z >= 0) == (test.y == 1.0)))
    A = add_intercept(train.X)
    theta, *_ = np.linalg.lstsq(A, train.y, rcond=None)
    return float(np.mean((add_intercept(test.X) @ theta - test.y) ** 2))
