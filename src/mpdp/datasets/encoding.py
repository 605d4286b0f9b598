"""The one encoding every loader uses: typed attributes -> features in [-1, 1].

* a numeric attribute with public bounds ``(lo, hi)`` becomes one column ``2 (v - lo) / (hi - lo) - 1``;
* a categorical attribute with ``k`` categories becomes ``k`` one-hot columns (exactly one 1 per row).

The bounds and category lists are part of the *declared schema*, not statistics of the rows: the map from a
record to its features is then the same whatever the other records are, which is what the papers'
sensitivity arguments need. Values outside the declared bounds are an error unless the caller asks for
clipping explicitly (``out_of_bounds="clip"``), which is also data-independent.

Because each categorical block holds a single 1, every encoded row has Euclidean norm at most
``sqrt(#numeric attributes + #categorical attributes)``; :attr:`Dataset.row_norm_bound` uses this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset, Task
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain

__all__ = ["OutOfBounds", "encode", "make_dataset", "scale_to_pm1"]

OutOfBounds = Literal["error", "clip"]


def scale_to_pm1(
    values: npt.ArrayLike, bounds: tuple[float, float], *, name: str = "values", out_of_bounds: OutOfBounds = "error"
) -> npt.NDArray[np.float64]:
    """Map ``values`` from the public interval ``bounds`` affinely onto [-1, 1].

    Raises :class:`DomainError` for values outside ``bounds`` (or non-finite), unless ``out_of_bounds="clip"``.
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ParameterError(explain(f"bounds of {name}", bounds, "finite (low, high) with low < high",
                                     "declare the attribute's public range"))
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise DomainError(explain(name, "non-finite values", "finite numbers", "drop or impute missing values"))
    if out_of_bounds == "clip":
        v = np.clip(v, lo, hi)
    elif out_of_bounds != "error":
        raise ParameterError(explain("out_of_bounds", out_of_bounds, "'error' or 'clip'", "choose a policy"))
    elif v.size and (v.min() < lo or v.max() > hi):
        raise DomainError(explain(
            name, f"values in [{v.min():g}, {v.max():g}]", f"values within the declared bounds [{lo:g}, {hi:g}]",
            "declare wider bounds, or pass out_of_bounds='clip' to clip to the bounds (a data-independent map)"))
    scaled: npt.NDArray[np.float64] = np.clip(2.0 * (v - lo) / (hi - lo) - 1.0, -1.0, 1.0)
    return scaled


def encode(
    attributes: Sequence[Attribute], values: npt.NDArray[np.float64], *, out_of_bounds: OutOfBounds = "error"
) -> tuple[npt.NDArray[np.float64], tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """Encode the attribute view ``values`` (n x a) into ``(X, feature_names, encoded_columns)``.

    Numeric columns of ``values`` are in the attributes' original units; categorical columns hold integer
    codes ``0 .. k-1``. Feature names are the attribute name (numeric) or ``"name=category"`` (one-hot).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(attributes):
        raise ShapeMismatchError(explain("values", values.shape, f"(n, {len(attributes)})",
                                         "pass one column per attribute"))
    n = values.shape[0]
    width = sum(1 if a.kind == "numeric" else len(a.categories or ()) for a in attributes)
    X = np.zeros((n, width), dtype=np.float64)
    names: list[str] = []
    encoded: list[tuple[int, ...]] = []
    col = 0
    for j, attr in enumerate(attributes):
        if attr.kind == "numeric":
            if attr.bounds is None:  # pragma: no cover - Attribute validates this
                raise ParameterError(explain("bounds", None, "declared bounds", "declare them"))
            X[:, col] = scale_to_pm1(values[:, j], attr.bounds, name=attr.name, out_of_bounds=out_of_bounds)
            names.append(attr.name)
            encoded.append((col,))
            col += 1
            continue
        cats = attr.categories or ()
        codes = values[:, j]
        if not np.all(np.isfinite(codes)) or np.any(codes != np.round(codes)) or (
            codes.size and (codes.min() < 0 or codes.max() >= len(cats))
        ):
            raise DomainError(explain(f"codes of {attr.name}", np.unique(codes)[:8],
                                      f"integer codes 0..{len(cats) - 1}",
                                      f"map values to the declared categories {cats[:6]}..."))
        X[np.arange(n), col + codes.astype(np.int64)] = 1.0
        names.extend(f"{attr.name}={c}" for c in cats)
        encoded.append(tuple(range(col, col + len(cats))))
        col += len(cats)
    return X, tuple(names), tuple(encoded)


def make_dataset(
    name: str,
    attributes: Sequence[Attribute],
    values: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    *,
    task: Task,
    label_name: str = "label",
    groups: Mapping[str, tuple[str, ...]] | None = None,
    out_of_bounds: OutOfBounds = "error",
) -> Dataset:
    """A :class:`Dataset` with both views, encoded by :func:`encode`."""
    values = np.asarray(values, dtype=np.float64)
    X, feature_names, encoded_columns = encode(attributes, values, out_of_bounds=out_of_bounds)
    if out_of_bounds == "clip":
        values = values.copy()
        for j, attr in enumerate(attributes):
            if attr.kind == "numeric" and attr.bounds is not None:
                values[:, j] = np.clip(values[:, j], *attr.bounds)
    return Dataset(
        name=name, X=X, y=np.asarray(y, dtype=np.float64), feature_names=feature_names, task=task,
        attributes=tuple(attributes), values=values, encoded_columns=encoded_columns, label_name=label_name,
        groups=dict(groups or {}),
    )
