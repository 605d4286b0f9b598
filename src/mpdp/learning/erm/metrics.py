"""Plain (non-private) metrics of a linear model ``theta`` on rows ``X``: scores, accuracy, errors, log-loss."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpdp.learning.erm.data import to_pm1

__all__ = ["accuracy", "log_loss", "misclassification", "mse", "predict"]

FloatArray = npt.NDArray[np.float64]


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
