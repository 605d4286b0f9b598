"""Horizontally partitioned ERM (paper 003's setting): parties' records, local computations, evaluation.

``m`` parties, party ``j`` holding ``n_j >= 1`` records in the unit ball, fit one regularised linear model
(:mod:`mpdp.learning.erm`). This module holds what every paper-003 method shares and that involves no
privacy and no network:

* :class:`ERMProblem`, the public setting: loss, ``lambda``, and the constants ``G`` and ``L``;
* :class:`HorizontalParties`, each party's records, stored as *groups* of equal-size parties stacked along a
  leading axis (``X`` of shape ``(g, n_j, d)``). A group is a vectorised simulation of ``g`` parties: row ``k``
  is party ``k``'s data and row ``k`` of every local result is what party ``k`` alone computes from it, so
  the 50,000 one-record parties of paper 003 run as one numpy call while their data never mix;
* :class:`Evaluator`, the experimenter's view used only to *score* models: the non-private centralised
  optimum ``theta*`` on the pooled training data, the optimality gap ``J(theta) - J(theta*)`` and the relative
  accuracy loss on test data (accuracy for classification, MSE for regression);
* :func:`prepare` and :func:`equal_parts`: a train/test pair of :class:`~mpdp.datasets.dataset.Dataset` in this
  form (records mapped into the unit ball by the public ``sqrt(d)``, an intercept appended), and the random split
  into near-equal parties every engine uses.

References
----------
Paper 003 (Jayaraman et al., NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`) sections 3 (setting) and 4
(metrics).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import horizontal_equal
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.randomness import RandomSource

__all__ = ["ERMProblem", "Evaluator", "HorizontalParties", "PartyGroup", "Prepared", "Scores", "equal_parts",
           "loss_for", "prepare"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ERMProblem:
    """The public learning problem: a loss and the regularisation ``lam`` (must be > 0, strong convexity).

    ``G`` and ``L`` are the loss's Lipschitz and smoothness constants for records in the unit ball; the
    sensitivities of :mod:`mpdp.dp.sensitivities.erm` are stated in terms of them.
    """

    loss: erm.Loss
    lam: float

    def __post_init__(self) -> None:
        if not isinstance(self.loss, erm.Loss):
            raise ParameterError(explain("loss", self.loss, "an mpdp.learning.erm.Loss",
                                         "pass e.g. erm.LogisticLoss()"))
        if not (np.isfinite(self.lam) and self.lam > 0):
            raise DomainError(explain("lambda", self.lam, "a finite regularisation > 0 (the analyses need "
                                      "lambda-strong convexity)", "pass e.g. lam=1e-3"))
        if not np.isfinite(self.loss.lipschitz):
            raise ParameterError(explain("loss", self.loss.name, "a Lipschitz loss (finite G)",
                                         "use erm.HuberLoss(c=1.0) for ridge regression"))

    @property
    def G(self) -> float:  # noqa: N802 - the paper's symbol
        return self.loss.lipschitz_constant(1.0)

    @property
    def L(self) -> float:  # noqa: N802 - the paper's symbol
        """Smoothness of ``J``: the loss's constant plus ``lam``."""
        return self.loss.smoothness_constant(1.0) + self.lam

    @property
    def task(self) -> str:
        return self.loss.task


@dataclass(frozen=True)
class PartyGroup:
    """``g`` parties with ``n`` records each: party ``first + k`` holds ``X[k]`` (n x d) and ``y[k]``."""

    first: int
    X: FloatArray
    y: FloatArray

    @property
    def size(self) -> int:
        return int(self.X.shape[0])

    @property
    def records(self) -> int:
        return int(self.X.shape[1])

    def local_gradients(self, problem: ERMProblem, theta: FloatArray) -> FloatArray:
        """Each party's ``(1/n_j) sum_i grad loss(theta; x_i, y_i)``, shape ``(g, d)`` (no regulariser)."""
        z = np.einsum("gnd,d->gn", self.X, theta)
        dz = problem.loss.derivative(z, self.y) / self.records
        out: FloatArray = np.einsum("gnd,gn->gd", self.X, dz)
        return out

    def local_minimizers(self, problem: ERMProblem, *, lam: float | None = None,
                         linear: FloatArray | None = None) -> FloatArray:
        """Each party's minimiser of its own objective (``+ <b_j, theta>`` with ``linear[k] = b_j``), ``(g, d)``."""
        return erm.solve_batch(problem.loss, self.X, self.y, problem.lam if lam is None else lam, linear=linear)


@dataclass(frozen=True)
class HorizontalParties:
    """Every party's records, grouped by record count; see the module docstring.

    Build with :meth:`from_parts` (one ``(X_j, y_j)`` per party) or :meth:`from_rows` (row indices per party
    into shared arrays, as a horizontal partitioner produces). Validation: no party without records, every
    record in the unit ball, labels in ``{-1, +1}`` for classification (``{0, 1}`` are mapped) and ``|y| <= 1``.
    """

    groups: tuple[PartyGroup, ...]
    sizes: tuple[int, ...]

    @classmethod
    def from_parts(cls, parts: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], *, task: str) -> HorizontalParties:
        if not parts:
            raise ShapeMismatchError(explain("parties", 0, "at least one party", "pass one (X, y) per party"))
        Xs = [np.asarray(X, dtype=np.float64) for X, _ in parts]
        ys = [np.asarray(y, dtype=np.float64) for _, y in parts]
        d = Xs[0].shape[1] if Xs[0].ndim == 2 else -1
        for j, (X, y) in enumerate(zip(Xs, ys, strict=True)):
            if X.ndim != 2 or X.shape[1] != d or y.shape != (X.shape[0],):
                raise ShapeMismatchError(explain(f"party {j} data", (X.shape, y.shape), f"(n_j, {d}) and (n_j,)",
                                                 "give every party the same features and one label per row"))
            if X.shape[0] == 0:
                raise ShapeMismatchError(explain(f"party {j} records", 0, "at least one record per party",
                                                 "drop empty parties or use fewer parties than records"))
        return cls._grouped(Xs, ys, task)

    @classmethod
    def from_rows(cls, X: npt.ArrayLike, y: npt.ArrayLike, indices: Sequence[npt.ArrayLike], *,
                  task: str) -> HorizontalParties:
        Xa = np.asarray(X, dtype=np.float64)
        ya = np.asarray(y, dtype=np.float64)
        if Xa.ndim != 2 or ya.shape != (Xa.shape[0],):
            raise ShapeMismatchError(explain("X, y", (Xa.shape, ya.shape), "(n, d) and (n,)", "one label per row"))
        idx = [np.asarray(i, dtype=np.int64) for i in indices]
        return cls.from_parts([(Xa[i], ya[i]) for i in idx], task=task)

    @classmethod
    def _grouped(cls, Xs: list[FloatArray], ys: list[FloatArray], task: str) -> HorizontalParties:
        if task not in ("classification", "regression"):
            raise ParameterError(explain("task", task, "'classification' or 'regression'", "pass the loss's task"))
        sizes = tuple(int(X.shape[0]) for X in Xs)
        X_all = np.concatenate(Xs)
        y_all = np.concatenate(ys)
        if task == "classification":
            y_all = erm.to_pm1(y_all)
        erm.require_unit_ball(X_all, y_all, name="records")
        # Consecutive parties of equal size form one group (equal partitions give at most two groups).
        groups: list[PartyGroup] = []
        start = 0
        offsets = np.cumsum([0, *sizes])
        while start < len(sizes):
            stop = start
            while stop < len(sizes) and sizes[stop] == sizes[start]:
                stop += 1
            n = sizes[start]
            Xg = X_all[offsets[start]:offsets[stop]].reshape(stop - start, n, -1)
            yg = y_all[offsets[start]:offsets[stop]].reshape(stop - start, n)
            groups.append(PartyGroup(first=start, X=Xg, y=yg))
            start = stop
        return cls(groups=tuple(groups), sizes=sizes)

    def __iter__(self) -> Iterator[PartyGroup]:
        return iter(self.groups)

    @property
    def m(self) -> int:
        return len(self.sizes)

    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    @property
    def n_min(self) -> int:
        """``n(1)``: the smallest party's record count."""
        return min(self.sizes)

    @property
    def d(self) -> int:
        return int(self.groups[0].X.shape[2])

    def pooled(self) -> tuple[FloatArray, FloatArray]:
        """All records together (for the evaluator's non-private reference only)."""
        X = np.concatenate([g.X.reshape(-1, self.d) for g in self.groups])
        y = np.concatenate([g.y.reshape(-1) for g in self.groups])
        return X, y


@dataclass(frozen=True)
class Scores:
    """One model's scores against the non-private optimum."""

    optimality_gap: float
    relative_accuracy_loss: float
    test_metric: float


class Evaluator:
    """Scores models against the non-private centralised optimum ``theta*`` (003 section 4).

    ``optimality_gap(theta) = J(theta) - J(theta*)`` on the pooled training records (``J`` with uniform
    weights ``1/n``); ``relative_accuracy_loss`` is ``acc(theta*) - acc(theta)`` on test data for
    classification and ``MSE(theta) - MSE(theta*)`` for regression (positive: worse than non-private).

    Accuracy: ``theta*`` is solved to gradient norm ``<= 1e-10``, so gaps are exact to about
    ``1e-20 / lam``; gaps below that are reported as computed (possibly tiny negatives from rounding).
    """

    def __init__(self, problem: ERMProblem, train: tuple[FloatArray, FloatArray],
                 test: tuple[FloatArray, FloatArray]) -> None:
        self.problem = problem
        y_train = train[1] if problem.task == "regression" else erm.to_pm1(train[1])
        self.objective = erm.Objective(problem.loss, train[0], y_train, lam=problem.lam)
        self.test_X = np.asarray(test[0], dtype=np.float64)
        self.test_y = np.asarray(test[1], dtype=np.float64)
        if self.test_X.ndim != 2 or self.test_X.shape[1] != self.objective.d:
            raise ShapeMismatchError(explain("test X", self.test_X.shape, f"(n_test, {self.objective.d})",
                                             "use the same features for training and test"))
        solution = erm.solve(self.objective)
        self.theta_star = solution.theta
        self.j_star = solution.value
        self.metric_star = self.test_metric(self.theta_star)

    @property
    def metric_name(self) -> str:
        return "accuracy" if self.problem.task == "classification" else "mse"

    def test_metric(self, theta: FloatArray) -> float:
        if self.problem.task == "classification":
            return erm.accuracy(theta, self.test_X, self.test_y)
        return erm.mse(theta, self.test_X, self.test_y)

    def optimality_gap(self, theta: FloatArray) -> float:
        return self.objective.value(theta) - self.j_star

    def relative_accuracy_loss(self, theta: FloatArray) -> float:
        metric = self.test_metric(theta)
        if self.problem.task == "classification":
            return self.metric_star - metric
        return metric - self.metric_star

    def score(self, theta: FloatArray) -> Scores:
        metric = self.test_metric(theta)
        loss = self.metric_star - metric if self.problem.task == "classification" else metric - self.metric_star
        return Scores(self.optimality_gap(theta), loss, metric)


def loss_for(task: str) -> erm.Loss:
    """Logistic loss for classification, Huber-capped ridge (c = G = 1) for regression."""
    return erm.LogisticLoss() if task == "classification" else erm.HuberLoss(c=1.0)


@dataclass(frozen=True)
class Prepared:
    """A train/test pair in paper 003's form, with its loss and the non-private evaluator."""

    problem: ERMProblem
    X: FloatArray
    y: FloatArray
    X_test: FloatArray
    y_test: FloatArray
    evaluator: Evaluator
    name: str


def prepare(train: Dataset, test: Dataset, *, lam: float) -> Prepared:
    """Unit-ball features with an intercept, labels in {-1, +1} (classification), the evaluator for theta*."""
    problem = ERMProblem(loss_for(train.task), lam=lam)
    X = erm.add_intercept(train.unit_ball())
    X_test = erm.add_intercept(test.unit_ball())
    y = erm.to_pm1(train.y) if train.task == "classification" else train.y.astype(np.float64)
    y_test = erm.to_pm1(test.y) if test.task == "classification" else test.y.astype(np.float64)
    erm.require_unit_ball(X, y, name="training records")
    return Prepared(problem, X, y, X_test, y_test, Evaluator(problem, (X, y), (X_test, y_test)), train.name)


def equal_parts(train: Dataset, m: int, *, rng: RandomSource) -> list[npt.NDArray[np.int64]]:
    """Row indices of ``m`` near-equal random parts, the smaller parts first.

    Party labels are arbitrary, and :class:`HorizontalParties` stacks *consecutive* equal-size parties into one
    vectorised group: ordering by size gives two groups (two runtime cohorts per 1,024 parties) instead of one per
    run of equal sizes (hundreds for 1,000 parts of Adult, with one thread and two messages each per round).
    """
    indices = [np.asarray(i, dtype=np.int64) for i in horizontal_equal(train, m, rng=rng).indices]
    return sorted(indices, key=len)  # stable: equal sizes keep the partitioner's order
