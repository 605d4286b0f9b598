"""The losses of regularised ERM as functions of the margin/prediction ``z = <x, theta>`` and the label.

Each loss gives its value, first derivative and, where smooth, second derivative in ``z``, with its public
Lipschitz constant ``G`` and smoothness ``L`` on the unit ball (the table in :mod:`mpdp.learning.erm`); the
sensitivities of :mod:`mpdp.dp.sensitivities.erm` read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["HingeLoss", "HuberLoss", "LogisticLoss", "Loss", "SmoothHingeLoss", "SquaredLoss", "Task", "expit"]

FloatArray = npt.NDArray[np.float64]
Task = Literal["classification", "regression"]


def expit(x: FloatArray) -> FloatArray:
    """The logistic function ``1 / (1 + exp(-x))``, elementwise: ``scipy.special.expit``'s formula, so the same
    bits wherever numpy's ``exp`` agrees with the C library's (checked on 16 million draws on the CI host), without
    importing ``scipy.special`` (with the numpy modules it pulls in, a fifth of the start of a Flower ClientApp,
    which Flower starts for every message). ``exp(-x)`` overflows to ``inf`` for ``x < -709``, giving 0, as scipy."""
    with np.errstate(over="ignore"):
        out: FloatArray = 1.0 / (1.0 + np.exp(-x))
    return out


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
