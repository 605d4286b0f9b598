"""Regularised empirical risk minimisation: losses, objectives, a solver and plain metrics.

Shared by the papers that train linear models (001, 003, 004). Everything here is plaintext maths on
one party's (or the union's) data; nothing here knows about parties, networks or privacy. The private
algorithms call these pieces on the data a party holds and take sensitivities from
:mod:`mpdp.dp.sensitivities.erm`.

The objective is the one of Chaudhuri, Monteleoni and Sarwate (JMLR 2011) and Jayaraman et al.
(``003``, section 3)::

    J(theta) = sum_i w_i * loss(<x_i, theta>, y_i) + (lam / 2) * ||theta||^2 + <b, theta>

with weights ``w_i`` summing to one (``1/n`` each by default; ``1/(m n_j)`` for party-averaged
objectives as in 003 section 3.2) and an optional linear term ``b`` (objective perturbation). The
regulariser ``N(theta) = ||theta||^2 / 2`` makes ``J`` ``lam``-strongly convex.

Losses are functions of the margin/prediction ``z = <x, theta>`` and the label:

================  ==============================================  ============  ================
loss              formula                                         G (||x||<=1)  L (||x||<=1)
================  ==============================================  ============  ================
logistic          log(1 + exp(-y z)), y in {-1, +1}               1             1/4
squared           (z - y)^2 / 2                                   unbounded     1
huber(c)          squared for |z - y| <= c, else c|z - y| - c^2/2  c             1
hinge             max(0, 1 - y z)                                 1             not smooth
smooth_hinge(h)   Chaudhuri's Huber hinge (below)                 1             1/(2h)
================  ==============================================  ============  ================

``huber(c)`` is ridge regression with each residual's influence capped at ``c``: it equals the squared
loss wherever ``|z - y| <= c`` and is the standard way to make ridge regression ``c``-Lipschitz, which the
output- and gradient-perturbation sensitivities need (the plain squared loss has no Lipschitz constant on
an unbounded parameter space).

References
----------
K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially private empirical risk minimization",
JMLR 12 (2011), sections 2-3 (losses, Huber hinge, Lipschitz/smoothness conditions).
B. Jayaraman, L. Wang, D. Evans, Q. Gu, "Distributed learning without distress", NeurIPS 2018
(``/work/shared/papers/003_83239d0ffdf62923.txt``), section 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize as _scipy_minimize
from scipy.special import expit

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain

__all__ = [
    "HingeLoss",
    "HuberLoss",
    "LogisticLoss",
    "Loss",
    "Objective",
    "SmoothHingeLoss",
    "Solution",
    "SquaredLoss",
    "accuracy",
    "add_intercept",
    "log_loss",
    "misclassification",
    "mse",
    "predict",
    "require_unit_ball",
    "solve",
    "solve_batch",
    "to_pm1",
]

FloatArray = npt.NDArray[np.float64]
Task = Literal["classification", "regression"]


# ---------------------------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------------------------
class Loss:
    """A convex loss of the prediction ``z = <x, theta>`` and a label.

    Subclasses implement :meth:`value` and :meth:`derivative` (d loss / d z, a subgradient where the loss
    is not differentiable) and state the constants the DP analyses use: ``lipschitz`` bounds
    ``|d loss / d z|`` and ``smoothness`` bounds ``d^2 loss / d z^2``; with ``||x|| <= r`` the loss is
    ``r * lipschitz``-Lipschitz and ``r^2 * smoothness``-smooth in ``theta``.
    """

    name: ClassVar[str] = "loss"
    task: ClassVar[Task] = "classification"

    @property
    def lipschitz(self) -> float:
        """Bound on ``|d loss / d z|``."""
        return float("inf")

    @property
    def smoothness(self) -> float:
        """Bound on ``d^2 loss / d z^2``."""
        return float("inf")

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        raise NotImplementedError

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        raise NotImplementedError

    def check_labels(self, y: FloatArray) -> None:
        """Raise :class:`~mpdp.errors.DomainError` when ``y`` is not a label vector this loss accepts."""
        if self.task == "classification":
            if not np.all(np.isin(y, (-1.0, 1.0))):
                raise DomainError(explain(f"labels for the {self.name} loss", np.unique(y)[:5],
                                          "labels in {-1, +1}", "map {0, 1} labels with erm.to_pm1(y)"))
        elif not np.all(np.isfinite(y)):
            raise DomainError(explain("regression targets", "non-finite values", "finite floats",
                                      "drop or impute missing targets"))

    def lipschitz_constant(self, x_norm: float = 1.0) -> float:
        """``G``: the loss's Lipschitz constant in ``theta`` when every ``||x|| <= x_norm``."""
        return self.lipschitz * x_norm

    def smoothness_constant(self, x_norm: float = 1.0) -> float:
        """``L``: the loss's smoothness constant in ``theta`` when every ``||x|| <= x_norm``."""
        return self.smoothness * x_norm * x_norm


@dataclass(frozen=True)
class LogisticLoss(Loss):
    """``log(1 + exp(-y z))`` for labels ``y in {-1, +1}``: 1-Lipschitz and 1/4-smooth in ``z``."""

    name: ClassVar[str] = "logistic"
    task: ClassVar[Task] = "classification"

    @property
    def lipschitz(self) -> float:
        return 1.0

    @property
    def smoothness(self) -> float:
        return 0.25

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = np.logaddexp(0.0, -y * z)  # stable for large |z|
        return out

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = -y * expit(-y * z)
        return out


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """``(z - y)^2 / 2``: 1-smooth, but not Lipschitz on an unbounded domain (use :class:`HuberLoss` for DP)."""

    name: ClassVar[str] = "squared"
    task: ClassVar[Task] = "regression"

    @property
    def smoothness(self) -> float:
        return 1.0

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = 0.5 * (z - y) ** 2
        return out

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = z - y
        return out


@dataclass(frozen=True)
class HuberLoss(Loss):
    """Ridge regression's squared loss with the residual's derivative capped at ``c``.

    ``r^2 / 2`` for ``|r| <= c`` and ``c |r| - c^2 / 2`` beyond, with ``r = z - y``: convex, ``c``-Lipschitz
    and 1-smooth in ``z``, and equal to :class:`SquaredLoss` whenever ``|r| <= c``.
    """

    c: float = 1.0
    name: ClassVar[str] = "huber"
    task: ClassVar[Task] = "regression"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.c) and self.c > 0):
            raise ParameterError(explain("c", self.c, "a finite number > 0", "pass e.g. HuberLoss(c=1.0)"))

    @property
    def lipschitz(self) -> float:
        return float(self.c)

    @property
    def smoothness(self) -> float:
        return 1.0

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        r = np.abs(z - y)
        out: FloatArray = np.where(r <= self.c, 0.5 * r * r, self.c * r - 0.5 * self.c * self.c)
        return out

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = np.clip(z - y, -self.c, self.c)
        return out


@dataclass(frozen=True)
class HingeLoss(Loss):
    """``max(0, 1 - y z)`` (linear SVM): 1-Lipschitz, not smooth; :meth:`derivative` is a subgradient."""

    name: ClassVar[str] = "hinge"
    task: ClassVar[Task] = "classification"

    @property
    def lipschitz(self) -> float:
        return 1.0

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = np.maximum(0.0, 1.0 - y * z)
        return out

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        out: FloatArray = np.where(y * z < 1.0, -y, 0.0)
        return out


@dataclass(frozen=True)
class SmoothHingeLoss(Loss):
    """Chaudhuri et al.'s Huber hinge with bandwidth ``h``: 1-Lipschitz and ``1/(2h)``-smooth in ``z``.

    With ``u = y z``: 0 for ``u > 1 + h``; ``(1 + h - u)^2 / (4h)`` for ``|1 - u| <= h``; ``1 - u`` for
    ``u < 1 - h`` (JMLR 2011, eq. (7)).
    """

    h: float = 0.5
    name: ClassVar[str] = "smooth_hinge"
    task: ClassVar[Task] = "classification"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.h) and 0 < self.h):
            raise ParameterError(explain("h", self.h, "a finite bandwidth > 0", "pass e.g. SmoothHingeLoss(h=0.5)"))

    @property
    def lipschitz(self) -> float:
        return 1.0

    @property
    def smoothness(self) -> float:
        return 1.0 / (2.0 * self.h)

    def value(self, z: FloatArray, y: FloatArray) -> FloatArray:
        u = y * z
        h = self.h
        out: FloatArray = np.where(u > 1 + h, 0.0, np.where(u < 1 - h, 1.0 - u, (1 + h - u) ** 2 / (4 * h)))
        return out

    def derivative(self, z: FloatArray, y: FloatArray) -> FloatArray:
        u = y * z
        h = self.h
        du = np.where(u > 1 + h, 0.0, np.where(u < 1 - h, -1.0, -(1 + h - u) / (2 * h)))
        out: FloatArray = y * du
        return out


# ---------------------------------------------------------------------------------------------------------
# Data checks and helpers
# ---------------------------------------------------------------------------------------------------------
def to_pm1(y: npt.ArrayLike) -> FloatArray:
    """Map class labels ``{0, 1}`` to ``{-1, +1}`` (labels already in ``{-1, +1}`` pass through)."""
    arr = np.asarray(y, dtype=np.float64)
    if np.all(np.isin(arr, (-1.0, 1.0))):
        return arr.copy()
    if not np.all(np.isin(arr, (0.0, 1.0))):
        raise DomainError(explain("labels", np.unique(arr)[:5], "labels in {0, 1} or {-1, +1}",
                                  "encode the two classes as 0/1"))
    out: FloatArray = 2.0 * arr - 1.0
    return out


def add_intercept(X: npt.ArrayLike) -> FloatArray:
    """Append a constant column and rescale by ``1/sqrt(2)`` so rows with ``||x|| <= 1`` stay in the unit ball.

    The intercept is the last coordinate of ``theta``. The rescaling is a public constant, so it does not
    depend on the data (what the sensitivity proofs need).
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeMismatchError(explain("X", arr.shape, "a 2-d array (n, d)", "pass one row per record"))
    out: FloatArray = np.hstack([arr, np.ones((arr.shape[0], 1))]) / np.sqrt(2.0)
    return out


def require_unit_ball(X: npt.ArrayLike, y: npt.ArrayLike | None = None, *, name: str = "X",
                      tol: float = 1e-9) -> None:
    """Raise :class:`~mpdp.errors.DomainError` unless every row of ``X`` (and every ``|y|``) is at most 1.

    The sensitivities of Chaudhuri et al. and of paper 003 assume every record lies in the unit ball.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeMismatchError(explain(name, arr.shape, "a 2-d array (n, d)", "pass one row per record"))
    if not np.all(np.isfinite(arr)):
        raise DomainError(explain(name, "non-finite values", "finite features", "impute or drop missing values"))
    norms = np.linalg.norm(arr, axis=1)
    if norms.size and norms.max() > 1.0 + tol:
        worst = int(np.argmax(norms))
        raise DomainError(explain(f"{name}[{worst}] norm", float(norms[worst]), "every row norm <= 1",
                                  "scale features into the unit ball, e.g. Dataset.unit_ball() or X / max row norm"
                                  " computed from public bounds"))
    if y is not None:
        labels = np.asarray(y, dtype=np.float64)
        if labels.size and (not np.all(np.isfinite(labels)) or np.abs(labels).max() > 1.0 + tol):
            raise DomainError(explain("labels/targets", float(np.abs(labels).max()), "|y| <= 1",
                                      "scale regression targets into [-1, 1] by their public range"))


def _as_xy(X: npt.ArrayLike, y: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if Xa.ndim != 2 or ya.shape != (Xa.shape[0],):
        raise ShapeMismatchError(explain("X, y shapes", (Xa.shape, ya.shape), "(n, d) and (n,)",
                                         "pass one label per row of X"))
    if Xa.shape[0] == 0:
        raise ShapeMismatchError(explain("records", 0, "at least one record", "give every party some data"))
    return Xa, ya


# ---------------------------------------------------------------------------------------------------------
# The objective
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Objective:
    """``J(theta) = sum_i w_i loss(<x_i, theta>, y_i) + lam/2 ||theta||^2 + <b, theta>`` (module docstring).

    Parameters
    ----------
    loss:
        A :class:`Loss`; its label convention is checked (``{-1, +1}`` for classification).
    X, y:
        Records (n x d) and labels/targets (n,).
    lam:
        Regularisation ``lambda >= 0`` (``> 0`` makes ``J`` strongly convex, which the DP analyses need).
    weights:
        Per-record weights (non-negative, summing to 1); ``None`` means ``1/n`` each.
    linear:
        Optional vector ``b`` of the linear term (objective perturbation); ``None`` means zero.
    """

    loss: Loss
    X: FloatArray
    y: FloatArray
    lam: float
    weights: FloatArray | None = None
    linear: FloatArray | None = None

    def __post_init__(self) -> None:
        X, y = _as_xy(self.X, self.y)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        if not (np.isfinite(self.lam) and self.lam >= 0):
            raise ParameterError(explain("lam", self.lam, "a finite number >= 0", "pass e.g. lam=1e-3"))
        self.loss.check_labels(y)
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=np.float64)
            if w.shape != y.shape or np.any(w < 0) or not np.isclose(w.sum(), 1.0, rtol=1e-9, atol=1e-12):
                raise ParameterError(explain("weights", f"shape {w.shape}, sum {w.sum():.6g}",
                                             f"{y.shape[0]} non-negative weights summing to 1",
                                             "normalise the weights or pass None for 1/n each"))
            object.__setattr__(self, "weights", w)
        if self.linear is not None:
            b = np.asarray(self.linear, dtype=np.float64)
            if b.shape != (X.shape[1],):
                raise ShapeMismatchError(explain("linear", b.shape, f"({X.shape[1]},)", "one entry per feature"))
            object.__setattr__(self, "linear", b)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def _mean(self, per_record: FloatArray) -> float:
        if self.weights is None:
            return float(per_record.mean())
        return float(self.weights @ per_record)

    def data_value(self, theta: FloatArray) -> float:
        """The empirical risk alone: ``sum_i w_i loss(<x_i, theta>, y_i)``."""
        return self._mean(self.loss.value(self.X @ theta, self.y))

    def value(self, theta: FloatArray) -> float:
        """``J(theta)``."""
        theta = np.asarray(theta, dtype=np.float64)
        total = self.data_value(theta) + 0.5 * self.lam * float(theta @ theta)
        if self.linear is not None:
            total += float(self.linear @ theta)
        return total

    def data_gradient(self, theta: FloatArray) -> FloatArray:
        """Gradient of the empirical risk alone (what gradient perturbation perturbs)."""
        dz = self.loss.derivative(self.X @ theta, self.y)
        coeff = dz / self.n if self.weights is None else dz * self.weights
        out: FloatArray = self.X.T @ coeff
        return out

    def gradient(self, theta: FloatArray) -> FloatArray:
        """``grad J(theta)`` (a subgradient for the hinge loss)."""
        theta = np.asarray(theta, dtype=np.float64)
        grad = self.data_gradient(theta) + self.lam * theta
        if self.linear is not None:
            grad = grad + self.linear
        return grad

    def value_and_gradient(self, theta: FloatArray) -> tuple[float, FloatArray]:
        theta = np.asarray(theta, dtype=np.float64)
        z = self.X @ theta
        per = self.loss.value(z, self.y)
        dz = self.loss.derivative(z, self.y)
        coeff = dz / self.n if self.weights is None else dz * self.weights
        val = self._mean(per) + 0.5 * self.lam * float(theta @ theta)
        grad = self.X.T @ coeff + self.lam * theta
        if self.linear is not None:
            val += float(self.linear @ theta)
            grad = grad + self.linear
        return val, grad

    def lipschitz(self) -> float:
        """``G`` for these records: the loss's constant times the largest row norm."""
        return self.loss.lipschitz_constant(float(np.linalg.norm(self.X, axis=1).max()))

    def smoothness(self) -> float:
        """Smoothness of ``J``: the loss's ``L`` at the largest row norm plus ``lam``."""
        return self.loss.smoothness_constant(float(np.linalg.norm(self.X, axis=1).max())) + self.lam


# ---------------------------------------------------------------------------------------------------------
# Solver
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Solution:
    """The minimiser found by :func:`solve` and how well it converged."""

    theta: FloatArray
    value: float
    gradient_norm: float
    iterations: int
    converged: bool


def solve(objective: Objective, *, theta0: npt.ArrayLike | None = None, tol: float = 1e-10,
          max_iter: int = 10_000) -> Solution:
    """Minimise ``objective`` with scipy's L-BFGS-B (deterministic; no randomness).

    Accuracy: for smooth, ``lam``-strongly convex objectives the returned ``theta`` satisfies
    ``||grad J(theta)|| <= tol`` (relative to scipy's projected-gradient test) when ``converged``, hence
    ``J(theta) - J(theta*) <= ||grad||^2 / (2 lam)``. For the hinge loss (non-smooth) L-BFGS is a heuristic;
    prefer :class:`SmoothHingeLoss` where a certified optimum matters.
    """
    if not (tol > 0 and max_iter >= 1):
        raise ParameterError(explain("tol, max_iter", (tol, max_iter), "tol > 0 and max_iter >= 1",
                                     "pass e.g. tol=1e-10, max_iter=10000"))
    x0 = np.zeros(objective.d) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    if x0.shape != (objective.d,):
        raise ShapeMismatchError(explain("theta0", x0.shape, f"({objective.d},)", "one entry per feature"))
    result = _scipy_minimize(objective.value_and_gradient, x0, jac=True, method="L-BFGS-B",
                             options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 20})
    theta = np.asarray(result.x, dtype=np.float64)
    grad_norm = float(np.linalg.norm(objective.gradient(theta)))
    return Solution(theta=theta, value=objective.value(theta), gradient_norm=grad_norm,
                    iterations=int(result.nit), converged=bool(result.success) or grad_norm <= tol)


def solve_batch(loss: Loss, X: npt.ArrayLike, y: npt.ArrayLike, lam: float, *,
                linear: npt.ArrayLike | None = None, tol: float = 1e-10, max_iter: int = 100) -> FloatArray:
    """Minimise ``g`` independent objectives of equal size at once: ``X`` is ``(g, n, d)``, ``y`` is ``(g, n)``.

    Each problem is ``(1/n) sum_i loss(<x_i, theta>, y_i) + lam/2 ||theta||^2 + <b, theta>`` with ``b`` the
    matching row of ``linear`` (``(g, d)``, default 0). Used where many parties each fit a local model (paper
    003's aggregation baselines with up to 50,000 one-record parties), where one scipy call per party would
    dominate the run time.

    Method: damped Newton on the strongly convex primal with Armijo backtracking, all problems in lock step.
    The Newton system is solved in whichever space is smaller: ``d x d`` (primal Hessian
    ``X^T D X / n + lam I``) or ``n x n`` (representer form: the step lies in ``span(x_i)`` and, by the
    push-through identity, ``H^{-1} X^T = X^T (D X X^T / n + lam I)^{-1}``).

    Accuracy: stops when every problem's gradient norm is ``<= tol`` (so ``J - J* <= tol^2 / (2 lam)``) or
    after ``max_iter`` Newton steps; the Huber and smoothed-hinge losses use their generalised second
    derivative (semismooth Newton). Requires ``lam > 0``; the plain hinge loss is not supported (not smooth).
    """
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if Xa.ndim != 3 or ya.shape != Xa.shape[:2] or Xa.shape[1] == 0:
        raise ShapeMismatchError(explain("X, y shapes", (Xa.shape, ya.shape), "(g, n, d) and (g, n) with n >= 1",
                                         "stack equal-size problems; solve unequal ones separately"))
    if not (np.isfinite(lam) and lam > 0):
        raise ParameterError(explain("lam", lam, "a finite number > 0", "pass e.g. lam=1e-3"))
    if not np.isfinite(loss.smoothness):
        raise ParameterError(explain("loss", loss.name, "a smooth loss", "use SmoothHingeLoss instead of HingeLoss"))
    loss.check_labels(ya.ravel())
    g, n, d = Xa.shape
    b = np.zeros((g, d)) if linear is None else np.asarray(linear, dtype=np.float64)
    if b.shape != (g, d):
        raise ShapeMismatchError(explain("linear", b.shape, f"({g}, {d})", "one linear term per problem"))

    def values(theta: FloatArray) -> FloatArray:
        z = np.einsum("gnd,gd->gn", Xa, theta)
        out: FloatArray = (loss.value(z, ya).mean(axis=1) + 0.5 * lam * np.einsum("gd,gd->g", theta, theta)
                           + np.einsum("gd,gd->g", b, theta))
        return out

    dual = n < d
    # Representer form: theta = X^T a - b / lam, so theta - theta_lin stays in span(x_i); start at a = 0.
    a = np.zeros((g, n))
    theta = -b / lam if dual else np.zeros((g, d))
    current = values(theta)
    stalled = np.zeros(g, dtype=bool)  # no decrease representable in float64: at the optimum to precision
    for _ in range(max_iter):
        z = np.einsum("gnd,gd->gn", Xa, theta)
        dz = loss.derivative(z, ya) / n
        grad = np.einsum("gnd,gn->gd", Xa, dz) + lam * theta + b
        active = (np.linalg.norm(grad, axis=1) > tol) & ~stalled
        if not active.any():
            break
        curv = _second_derivative(loss, z, ya) / n
        if dual:
            # grad = X^T (dz + lam a); the Newton step is X^T da with (D K + lam I) da = -(dz + lam a).
            K = np.einsum("gnd,gmd->gnm", Xa, Xa)
            A = curv[:, :, None] * K + lam * np.eye(n)
            da = -np.linalg.solve(A, (dz + lam * a)[..., None])[..., 0]
            step = np.einsum("gnd,gn->gd", Xa, da)
        else:
            H = np.einsum("gnd,gn,gne->gde", Xa, curv, Xa) + lam * np.eye(d)
            step = -np.linalg.solve(H, grad[..., None])[..., 0]
            da = np.zeros_like(a)
        slope = np.einsum("gd,gd->g", grad, step)
        t = np.ones(g)
        accepted = ~active
        for _ in range(50):  # Armijo backtracking, per problem
            trial = theta + t[:, None] * step
            trial_values = values(trial)
            # strict decrease: a step that changes nothing in float64 means the problem is solved to precision
            ok = ~accepted & (trial_values <= current + 1e-4 * t * slope) & (trial_values < current)
            theta[ok] = trial[ok]
            a[ok] += t[ok, None] * da[ok]
            current = np.where(ok, trial_values, current)
            accepted |= ok
            if accepted.all():
                break
            t = np.where(accepted, t, 0.5 * t)
        stalled |= ~accepted
    return theta


def _second_derivative(loss: Loss, z: FloatArray, y: FloatArray) -> FloatArray:
    """``d^2 loss / d z^2`` (generalised at kinks) for the smooth losses :func:`solve_batch` supports."""
    if isinstance(loss, LogisticLoss):
        s = expit(-y * z)
        out: FloatArray = s * (1.0 - s)
        return out
    if isinstance(loss, SquaredLoss):
        return np.ones_like(z)
    if isinstance(loss, HuberLoss):
        return (np.abs(z - y) <= loss.c).astype(np.float64)
    if isinstance(loss, SmoothHingeLoss):
        return (np.abs(1.0 - y * z) <= loss.h).astype(np.float64) / (2.0 * loss.h)
    raise ParameterError(explain("loss", loss.name, "logistic, squared, huber or smooth_hinge",
                                 "use solve() for other losses"))


# ---------------------------------------------------------------------------------------------------------
# Plain metrics
# ---------------------------------------------------------------------------------------------------------
def predict(theta: npt.ArrayLike, X: npt.ArrayLike) -> FloatArray:
    """Linear scores ``X theta`` (the regression prediction, or the classification margin)."""
    out: FloatArray = np.asarray(X, dtype=np.float64) @ np.asarray(theta, dtype=np.float64)
    return out


def accuracy(theta: npt.ArrayLike, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Fraction of records whose sign of ``<x, theta>`` matches the label (``{0,1}`` or ``{-1,+1}``).

    A score of exactly 0 counts as the positive class.
    """
    labels = to_pm1(y)
    pred = np.where(predict(theta, X) >= 0.0, 1.0, -1.0)
    return float(np.mean(pred == labels))


def misclassification(theta: npt.ArrayLike, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """``1 - accuracy``."""
    return 1.0 - accuracy(theta, X, y)


def mse(theta: npt.ArrayLike, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Mean squared error of the linear prediction."""
    resid = predict(theta, X) - np.asarray(y, dtype=np.float64)
    return float(np.mean(resid * resid))


def log_loss(theta: npt.ArrayLike, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Mean negative log-likelihood of the logistic model (natural log), computed stably."""
    labels = to_pm1(y)
    return float(np.mean(np.logaddexp(0.0, -labels * predict(theta, X))))
