"""Label and feature conventions of ERM, checked: labels in ``{-1, +1}``, an intercept column, rows in the unit ball."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ShapeMismatchError, explain

__all__ = ["add_intercept", "as_xy", "require_unit_ball", "to_pm1"]

FloatArray = npt.NDArray[np.float64]


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


def as_xy(X: npt.ArrayLike, y: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if Xa.ndim != 2 or ya.shape != (Xa.shape[0],):
        raise ShapeMismatchError(explain("X, y shapes", (Xa.shape, ya.shape), "(n, d) and (n,)",
                                         "pass one label per row of X"))
    if Xa.shape[0] == 0:
        raise ShapeMismatchError(explain("records", 0, "at least one record", "give every party some data"))
    return Xa, ya
