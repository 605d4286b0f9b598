"""The regularised ERM objective ``J(theta)`` (see :mod:`mpdp.learning.erm`) and its exact minimisers.

:func:`solve` minimises any :class:`Objective` with L-BFGS to a gradient tolerance; :func:`solve_batch`
minimises many objectives of one smooth loss at once by vectorised Newton steps (the vectorised party groups
of paper 003).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.erm.data import as_xy
from mpdp.learning.erm.losses import HuberLoss, LogisticLoss, Loss, SmoothHingeLoss, SquaredLoss, expit

__all__ = ["Objective", "Solution", "solve", "solve_batch"]

FloatArray = npt.NDArray[np.float64]


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
        X, y = as_xy(self.X, self.y)
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
    from scipy.optimize import minimize  # on use: scipy.optimize is a large import the gradient paths never need

    result = minimize(objective.value_and_gradient, x0, jac=True, method="L-BFGS-B",
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
