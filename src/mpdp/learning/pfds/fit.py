"""An agent's training step in PFDS (paper 004, Algorithm 1, line 3): the paper's fit and mpdp's.

Algorithm 1, line 3 trains each agent's predictor on "its data plus all shared data" and leaves open how the
two are weighed. Two readings are implemented; both are computed by the agent alone, on its own records and
on data it received, and neither releases anything.

* ``"paper"`` (:func:`paper_fit`): one ERM over the union, every record weighted alike, with the fixed
  regulariser ``PFDSParams.lam``. With 100 agents an agent holds ~400 records and receives ~40,000 synthetic
  ones, so the union is almost all synthetic data.
* ``"mpdp"`` (:func:`cv_fit`): the agent chooses the total weight ``w`` of the shared records relative to its
  own (a grid that contains ``0``, "go alone") and the regulariser ``lam`` by k-fold cross-validation on its
  own records only: the candidate models are trained on ``k - 1`` folds of its records plus the shared data
  and scored on the held-out fold of its records; the winner is refitted on all of them. For
  classification the shared records are reweighted so that their class balance matches the agent's own
  (prior correction; the trees' vote labels are not balanced like the population), and for speed the shared
  data enters through a uniformly random subsample of at most ``max_shared`` records (its total weight is
  ``w`` whatever the subsample size).

Privacy
-------
Neither fit costs privacy: the shared data is already DP (each sharer's ledger pays for it, Theorem 3.3),
the agent's own records need no protection from the agent, and the predictor stays with the agent (the
paper's setting: it is not released). The selection reads the agent's own labels, which is why the model
must not be released without a DP mechanism of its own; the same is true of the paper's fit.

Accuracy
--------
The cross-validated choice can only pick ``w = 0`` when sharing does not pay on the agent's own records, so
an ``"mpdp"`` agent is never much worse than going alone (up to the selection noise of k-fold CV on a few
hundred records, about ``+-0.01`` misclassification). On Census (Adult) with 100 agents the synthetic data
carries little usable signal for a linear model (mpdp.learning.pfds.model, Accuracy), and the chosen weights are
mostly ``0`` to ``0.3``; the gain over the paper's fit (0.188 vs 0.247 for LR at ``eps = 1``) comes from not
drowning the agent's records, and the small gain over NP-Agt mostly from the cross-validated regulariser
(figures: the Accuracy section of :mod:`mpdp.learning.pfds.model`).

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), Algorithm 1 (line 3) and section 4.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.randomness import RandomSource

__all__ = ["FitChoice", "cv_fit", "paper_fit", "prior_weights", "validate_grid"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FitChoice:
    """The fitted parameters and what cross-validation chose (``cv_error`` per ``(weight, lam)`` candidate)."""

    theta: FloatArray
    shared_weight: float
    lam: float
    cv_error: dict[tuple[float, float], float]


def validate_grid(name: str, grid: tuple[float, ...], *, allow_zero: bool) -> None:
    """Refuse an empty grid or one with negative, non-finite (or, where not allowed, zero) entries."""
    ok = isinstance(grid, tuple) and len(grid) > 0 and all(
        isinstance(v, (int, float)) and np.isfinite(v) and (v >= 0 if allow_zero else v > 0) for v in grid)
    if not ok:
        expected = "a non-empty tuple of finite numbers " + (">= 0" if allow_zero else "> 0")
        raise ParameterError(explain(name, grid, expected, f"pass e.g. {name}=(0.0, 0.1, 0.3, 1.0)"
                                     if allow_zero else f"pass e.g. {name}=(1e-4, 1e-3, 1e-2)"))


def paper_fit(loss: erm.Loss, X: FloatArray, y: FloatArray, lam: float, *,
              theta0: FloatArray | None = None) -> FloatArray:
    """The paper's reading: ERM over the union (``X``, ``y``) with equal weights and regulariser ``lam``."""
    return erm.solve(erm.Objective(loss, X, y, lam), theta0=theta0, tol=1e-8).theta


def prior_weights(y_shared: FloatArray, y_own: FloatArray) -> FloatArray:
    """Per-record weights (summing to 1) giving the shared records the own records' class balance.

    Labels are ``{-1, +1}``. A class absent from the shared data cannot be reweighted: its share goes to the
    other class (weights stay uniform within a class). A class absent from the agent's records gets weight 0.
    """
    pos_s = y_shared > 0
    n_pos, n_neg = int(pos_s.sum()), int((~pos_s).sum())
    target = float(np.mean(y_own > 0))
    if n_pos == 0 or n_neg == 0:
        return np.full(y_shared.shape[0], 1.0 / y_shared.shape[0])
    w: FloatArray = np.where(pos_s, target / n_pos, (1.0 - target) / n_neg)
    return w


def _weights(n_own: int, shared: FloatArray, weight: float) -> FloatArray:
    """Own records ``1 / n_own`` each (total 1), shared records ``weight * shared`` (total ``weight``)."""
    w = np.concatenate([np.full(n_own, 1.0 / n_own), weight * shared])
    out: FloatArray = w / w.sum()
    return out


def _error(loss: erm.Loss, theta: FloatArray, X: FloatArray, y: FloatArray) -> float:
    z = X @ theta
    if loss.task == "regression":
        return float(np.mean((z - y) ** 2))
    return float(np.mean(np.where(z >= 0.0, 1.0, -1.0) != y))


def cv_fit(loss: erm.Loss, X_own: FloatArray, y_own: FloatArray, X_shared: FloatArray, y_shared: FloatArray, *,
           weights: tuple[float, ...], lams: tuple[float, ...], folds: int, prior_correction: bool,
           rng: RandomSource) -> FitChoice:
    """mpdp's reading of Algorithm 1, line 3 (module docstring): ``(w, lam)`` by k-fold CV on own records.

    Labels are ``{-1, +1}`` for classification. The candidates are tried in the order ``w`` ascending,
    ``lam`` descending, and the first with the smallest CV error wins (ties go to less sharing and more
    regularisation). ``rng`` draws the folds.
    """
    validate_grid("shared_weights", weights, allow_zero=True)
    validate_grid("lams", lams, allow_zero=False)
    n = X_own.shape[0]
    if y_own.shape != (n,) or X_shared.shape[1:] != X_own.shape[1:] or y_shared.shape != (X_shared.shape[0],):
        raise ShapeMismatchError(explain("own/shared records", (X_own.shape, y_own.shape, X_shared.shape,
                                                                y_shared.shape),
                                         "own X (n x d), y (n,); shared X (m x d), y (m,)", "one label per row"))
    if not isinstance(folds, int) or not 2 <= folds <= n:
        raise ParameterError(explain("cv_folds", folds, f"an int in [2, {n}] (the agent's record count)",
                                     "pass cv_folds=3, or fit records-poor agents with variant='paper'"))
    classification = loss.task == "classification"
    m = X_shared.shape[0]
    base = prior_weights(y_shared, y_own) if classification and prior_correction and m else np.full(m, 1.0 / max(m, 1))
    # Folds of the agent's own records; stratified for classification so every fold sees both classes.
    order = rng.permutation(n)
    if classification:
        order = np.concatenate([order[y_own[order] > 0], order[y_own[order] <= 0]])
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[order] = np.arange(n) % folds
    grid = [(float(w), float(lam)) for w, lam in itertools.product(sorted(weights), sorted(lams, reverse=True))
            if m > 0 or w == 0.0]

    def train(rows: npt.NDArray[np.int64], w: float, lam: float, theta0: FloatArray | None) -> FloatArray:
        if w == 0.0:
            obj = erm.Objective(loss, X_own[rows], y_own[rows], lam)
        else:
            obj = erm.Objective(loss, np.vstack([X_own[rows], X_shared]), np.concatenate([y_own[rows], y_shared]),
                                lam, weights=_weights(rows.size, base, w))
        return erm.solve(obj, theta0=theta0, tol=1e-6).theta

    cv_error: dict[tuple[float, float], float] = {}
    for w, lam in grid:
        wrong = 0.0
        for k in range(folds):
            held = np.flatnonzero(fold_of == k)
            theta = train(np.flatnonzero(fold_of != k), w, lam, None)
            wrong += _error(loss, theta, X_own[held], y_own[held]) * held.size
        cv_error[(w, lam)] = wrong / n
    best = min(grid, key=lambda g: cv_error[g])  # min keeps the first of equals: the grid order breaks ties
    theta = train(np.arange(n), *best, None)
    return FitChoice(theta=theta, shared_weight=best[0], lam=best[1], cv_error=cv_error)
