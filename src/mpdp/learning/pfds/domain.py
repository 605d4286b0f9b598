"""The public data universe a PFDS tree partitions: attribute types, numeric bounds, category counts, labels.

Everything here is public knowledge declared with the data (``Dataset.attributes``), never read from the
records: a private tree may only split on what both neighbouring datasets share. Labels are classes
``0..k-1`` for classification and, for regression, ``b`` equal-width buckets of a public label range
(paper 004, section 3.1: "discretizes Y into b = 10 buckets").

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 3.1 (notation, Omega_a, label bucketing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain

__all__ = ["TreeDomain"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TreeDomain:
    """Attribute kinds and public ranges, and how labels become classes.

    Attributes
    ----------
    names:
        Attribute names, in the column order of the attribute view.
    numeric:
        ``numeric[j]`` is True for a numeric attribute, False for a categorical one.
    lower, upper:
        Public bounds of numeric attributes (NaN for categoricals).
    n_categories:
        Number of categories of categorical attributes (0 for numerics).
    task:
        ``"classification"`` (labels are class codes ``0..n_classes-1``) or ``"regression"``.
    n_classes:
        Number of label classes; for regression the number of buckets ``b``.
    label_range:
        Public ``(low, high)`` range of regression labels, cut into ``n_classes`` equal buckets.
    """

    names: tuple[str, ...]
    numeric: tuple[bool, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    n_categories: tuple[int, ...]
    task: str = "classification"
    n_classes: int = 2
    label_range: tuple[float, float] = (-1.0, 1.0)

    def __post_init__(self) -> None:
        d = len(self.names)
        if d == 0:
            raise ParameterError(explain("attributes", "none declared", "at least one typed attribute",
                                         "declare Dataset.attributes (numeric bounds or categories)"))
        for field_name in ("numeric", "lower", "upper", "n_categories"):
            if len(getattr(self, field_name)) != d:
                raise ShapeMismatchError(explain(field_name, len(getattr(self, field_name)), f"{d} entries",
                                                 "give one entry per attribute"))
        for j in range(d):
            if self.numeric[j]:
                if not (np.isfinite(self.lower[j]) and np.isfinite(self.upper[j]) and self.lower[j] < self.upper[j]):
                    raise ParameterError(explain(f"bounds of {self.names[j]}", (self.lower[j], self.upper[j]),
                                                 "finite low < high", "declare the attribute's public range"))
            elif self.n_categories[j] < 1:
                raise ParameterError(explain(f"categories of {self.names[j]}", self.n_categories[j], ">= 1",
                                             "declare the attribute's categories"))
        if self.task not in ("classification", "regression"):
            raise ParameterError(explain("task", self.task, "'classification' or 'regression'", "pick one"))
        if self.n_classes < 2:
            raise ParameterError(explain("n_classes", self.n_classes, ">= 2", "pass e.g. n_classes=2"))
        lo, hi = self.label_range
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ParameterError(explain("label_range", self.label_range, "finite (low, high) with low < high",
                                         "pass the public label range, e.g. (-1.0, 1.0)"))

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_dataset(cls, data: Dataset, *, label_buckets: int = 10,
                     label_range: tuple[float, float] = (-1.0, 1.0)) -> TreeDomain:
        """The domain declared by ``data.attributes`` (its values are never looked at)."""
        if not data.attributes or data.values is None:
            raise ParameterError(explain(f"attributes of dataset {data.name!r}", "not declared",
                                         "an attribute view (Dataset.attributes and Dataset.values)",
                                         "load the data with mpdp.datasets (or declare attribute kinds)"))
        numeric = tuple(a.kind == "numeric" for a in data.attributes)
        lower = tuple(float(a.bounds[0]) if a.bounds is not None else float("nan") for a in data.attributes)
        upper = tuple(float(a.bounds[1]) if a.bounds is not None else float("nan") for a in data.attributes)
        cats = tuple(len(a.categories) if a.kind == "categorical" and a.categories else 0 for a in data.attributes)
        if data.task == "classification":
            return cls(data.attribute_names, numeric, lower, upper, cats, "classification", 2, label_range)
        return cls(data.attribute_names, numeric, lower, upper, cats, "regression", label_buckets, label_range)

    # -- properties ----------------------------------------------------------------------------------------
    @property
    def d(self) -> int:
        return len(self.names)

    def branching(self, attribute: int) -> int:
        """Children of a node split on ``attribute``: 2 for a numeric split, one per category otherwise."""
        return 2 if self.numeric[attribute] else self.n_categories[attribute]

    def bounds_array(self) -> tuple[FloatArray, FloatArray]:
        """(lower, upper) as float arrays (categoricals: 0 and n_categories, the code range)."""
        lo = np.array([lo if num else 0.0 for lo, num in zip(self.lower, self.numeric, strict=True)])
        hi = np.array([hi if num else float(k) for hi, num, k in
                       zip(self.upper, self.numeric, self.n_categories, strict=True)])
        return lo, hi

    def signature(self) -> list[float]:
        """A flat public description, sent with a tree so a receiver can check it partitions the same universe."""
        lo, hi = self.bounds_array()
        out: list[float] = [float(self.d), float(self.n_classes)]
        for j in range(self.d):
            out += [1.0 if self.numeric[j] else 0.0, float(lo[j]), float(hi[j])]
        return out

    # -- checking data -------------------------------------------------------------------------------------
    def check_values(self, values: FloatArray, *, what: str = "values") -> None:
        """Raise when ``values`` (n x d attribute view) leaves the declared domain."""
        if values.ndim != 2 or values.shape[1] != self.d:
            raise ShapeMismatchError(explain(what, values.shape, f"(n, {self.d})", "pass the attribute view"))
        if not np.all(np.isfinite(values)):
            raise DomainError(explain(what, "non-finite entries", "finite values", "impute or drop them"))
        lo, hi = self.bounds_array()
        for j in range(self.d):
            col = values[:, j]
            if self.numeric[j]:
                bad = (col < lo[j]) | (col > hi[j])
            else:
                bad = (col < 0) | (col >= hi[j]) | (col != np.floor(col))
            if np.any(bad):
                raise DomainError(explain(f"{what} of attribute {self.names[j]}", col[bad][:3],
                                          f"values in the declared domain [{lo[j]}, {hi[j]}]",
                                          "clip to the public bounds or fix the declared categories"))

    def label_classes(self, y: FloatArray) -> IntArray:
        """Class codes of labels: classification labels as ints, regression labels bucketed."""
        if self.task == "classification":
            if not np.all(np.isin(y, np.arange(self.n_classes))):
                raise DomainError(explain("labels", np.unique(y)[:5], f"classes 0..{self.n_classes - 1}",
                                          "encode classes as 0..k-1"))
            return y.astype(np.int64)
        lo, hi = self.label_range
        if np.any((y < lo) | (y > hi)) or not np.all(np.isfinite(y)):
            raise DomainError(explain("regression labels", (float(np.min(y)), float(np.max(y))),
                                      f"values in the public label range {self.label_range}",
                                      "scale labels into the range or pass label_range"))
        width = (hi - lo) / self.n_classes
        codes: IntArray = np.clip(np.floor((y - lo) / width), 0, self.n_classes - 1).astype(np.int64)
        return codes

    def bucket_bounds(self, codes: IntArray) -> tuple[FloatArray, FloatArray]:
        """Regression: the [low, high) interval of each bucket code."""
        lo, hi = self.label_range
        width = (hi - lo) / self.n_classes
        low = lo + codes.astype(np.float64) * width
        return low, low + width
