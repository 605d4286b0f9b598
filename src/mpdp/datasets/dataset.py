"""The in-memory dataset every algorithm consumes.

A :class:`Dataset` carries two views of the same records:

* the **encoded** view ``X`` (n x d float64, one-hot categoricals, every feature scaled into [-1, 1]) and
  ``y`` (n,), used by the regression/classification papers (000, 001, 003, 004's ERM);
* the **attribute** view ``attributes`` + ``values`` (n x a float64: numeric attributes in their original
  units, categorical attributes as integer codes 0..k-1), used where a model needs the original types
  (002's Beta/Categorical mixture, 004's trees).

Two facts about the records travel with them: ``ids`` (record identifiers from the source, never features; for
aligning parties' records) and ``dropped_rows`` (how many source rows the loader dropped for missing values).

``encoded_columns[j]`` lists which columns of ``X`` attribute ``j`` produced, so a vertical partition by
attribute names maps to column blocks of ``X`` without ambiguity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain

__all__ = ["Attribute", "Dataset", "Task"]

Task = Literal["classification", "regression"]


@dataclass(frozen=True)
class Attribute:
    """One source attribute (before encoding).

    ``kind`` is ``"numeric"`` (with public ``bounds``, the range the scaling assumes) or ``"categorical"``
    (with its ``categories``, code i meaning ``categories[i]``). ``integer``: a numeric attribute whose values
    are whole numbers in the source (an age in years, a count); synthetic records round it to them
    (:meth:`in_domain`), so a twin keeps the column's type.
    """

    name: str
    kind: Literal["numeric", "categorical"]
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    integer: bool = False

    def __post_init__(self) -> None:
        if self.kind == "numeric":
            if self.bounds is None or not self.bounds[0] < self.bounds[1]:
                raise ParameterError(explain(f"bounds of {self.name}", self.bounds, "(low, high) with low < high",
                                             "declare the attribute's public range"))
            if self.integer and np.ceil(self.bounds[0]) > np.floor(self.bounds[1]):
                raise ParameterError(explain(f"bounds of integer attribute {self.name}", self.bounds,
                                             "a range holding a whole number", "widen the bounds"))
        elif self.integer:
            raise ParameterError(explain(f"integer flag of {self.name}", self.kind, "a numeric attribute",
                                         "drop integer=True: categories are labels"))
        elif self.kind == "categorical":
            if not self.categories:
                raise ParameterError(explain(f"categories of {self.name}", self.categories,
                                             "a non-empty tuple", "list the attribute's categories"))
        else:
            raise ParameterError(explain("kind", self.kind, "'numeric' or 'categorical'", "declare the type"))

    def in_domain(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Attribute-view values of synthetic records made valid: a numeric value clipped to the bounds (and
        rounded to the nearest whole number within them for an integer attribute); a categorical code rounded
        to the nearest code and clipped to ``0 .. len(categories) - 1``."""
        v = np.asarray(values, dtype=np.float64)
        if self.kind == "categorical":
            out: npt.NDArray[np.float64] = np.clip(np.rint(v), 0, len(self.categories or ()) - 1)
            return out
        lo, hi = self.bounds or (-np.inf, np.inf)
        if self.integer:
            return np.clip(np.rint(v), np.ceil(lo), np.floor(hi))
        return np.clip(v, lo, hi)


@dataclass(frozen=True)
class Dataset:
    """Records with an encoded view (X, y) and an attribute view (values); see the module docstring."""

    name: str
    X: npt.NDArray[np.float64]
    y: npt.NDArray[np.float64]
    feature_names: tuple[str, ...]
    task: Task
    attributes: tuple[Attribute, ...] = ()
    values: npt.NDArray[np.float64] | None = None
    encoded_columns: tuple[tuple[int, ...], ...] = ()
    label_name: str = "label"
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ids: npt.NDArray[np.str_] | None = None
    dropped_rows: int = 0
    #: the names of classes 0 and 1 as the source table writes them (the label's public domain), if known
    label_classes: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],):
            raise ShapeMismatchError(explain("X, y shapes", (self.X.shape, self.y.shape), "(n, d) and (n,)",
                                             "pass one label per row"))
        if len(self.feature_names) != self.X.shape[1]:
            raise ShapeMismatchError(explain("feature_names", len(self.feature_names), f"{self.X.shape[1]} names",
                                             "name every column of X"))
        if not np.all(np.isfinite(self.X)) or np.abs(self.X).max(initial=0.0) > 1.0:
            raise DomainError(explain("X", "values outside [-1, 1] or non-finite", "features scaled into [-1, 1]",
                                      "scale features with the loaders in mpdp.datasets"))
        if self.task == "classification" and not np.all(np.isin(self.y, (0.0, 1.0))):
            raise DomainError(explain("y", np.unique(self.y)[:5], "labels in {0, 1}", "encode classes as 0/1"))
        if self.values is not None:
            if self.values.shape != (self.X.shape[0], len(self.attributes)):
                raise ShapeMismatchError(explain("values", self.values.shape,
                                                 f"({self.X.shape[0]}, {len(self.attributes)})",
                                                 "one column per attribute"))
            if len(self.encoded_columns) != len(self.attributes):
                raise ShapeMismatchError(explain("encoded_columns", len(self.encoded_columns),
                                                 f"{len(self.attributes)} entries", "map each attribute to X columns"))
        if self.label_classes is not None and (
                self.task != "classification" or len(self.label_classes) != 2
                or not all(isinstance(c, str) for c in self.label_classes)
                or self.label_classes[0] == self.label_classes[1]):
            raise ParameterError(explain("label_classes", self.label_classes,
                                         "two distinct names (classes 0 and 1) of a classification label",
                                         "pass label_classes=(name_of_0, name_of_1), or None"))
        if self.ids is not None and self.ids.shape != (self.X.shape[0],):
            raise ShapeMismatchError(explain("ids", self.ids.shape, f"({self.X.shape[0]},)", "one id per row"))
        for group, names in self.groups.items():
            unknown = [n for n in names if n not in self.attribute_names and n not in self.feature_names]
            if unknown:
                raise ParameterError(explain(f"group {group!r}", unknown, "attribute or feature names",
                                             "name existing columns"))

    # -- shape ---------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    # -- views ---------------------------------------------------------------------------------------------
    def rows(self, index: npt.ArrayLike) -> Dataset:
        """The records at ``index`` (an int array or boolean mask), all views kept aligned."""
        idx = np.asarray(index)
        return Dataset(
            name=self.name, X=self.X[idx], y=self.y[idx], feature_names=self.feature_names, task=self.task,
            attributes=self.attributes, values=None if self.values is None else self.values[idx],
            encoded_columns=self.encoded_columns, label_name=self.label_name, groups=self.groups,
            ids=None if self.ids is None else self.ids[idx], dropped_rows=self.dropped_rows,
            label_classes=self.label_classes,
        )

    def columns_of(self, names: Sequence[str]) -> tuple[int, ...]:
        """Indices of X's columns for attribute or feature ``names`` (attributes expand to their one-hots)."""
        out: list[int] = []
        for name in names:
            if name in self.attribute_names:
                out.extend(self.encoded_columns[self.attribute_names.index(name)])
            elif name in self.feature_names:
                out.append(self.feature_names.index(name))
            else:
                raise ParameterError(explain("column", name, "an attribute or feature name of " + self.name,
                                             f"choose from {self.attribute_names or self.feature_names}"))
        return tuple(out)

    def labels_pm1(self) -> npt.NDArray[np.float64]:
        """Classification labels mapped {0, 1} -> {-1, +1}."""
        return 2.0 * self.y - 1.0

    @property
    def row_norm_bound(self) -> float:
        """A public bound on the Euclidean norm of every row of X, from the schema alone.

        Every column lies in [-1, 1], so sqrt(d) always holds. With an attribute view, each categorical
        attribute's one-hot block holds a single 1, so the bound tightens to
        sqrt(#columns outside categorical blocks + #categorical attributes): for Adult sqrt(14) instead of
        sqrt(104). A categorical block that is not one-hot (entries outside {0, 1} or several 1s in a row)
        is a construction error and raises, rather than silently weakening the bound.
        """
        if not self.attributes:
            return float(np.sqrt(max(self.d, 1)))
        count = self.d
        for attr, cols in zip(self.attributes, self.encoded_columns, strict=True):
            if attr.kind != "categorical" or len(cols) <= 1:
                continue
            block = self.X[:, list(cols)]
            if not (np.all((block == 0.0) | (block == 1.0)) and np.all(block.sum(axis=1) <= 1.0)):
                raise DomainError(explain(f"one-hot block of {attr.name}", "entries outside {0,1} or several 1s",
                                          "one 1 per row", "encode categoricals with mpdp.datasets.encoding"))
            count -= len(cols) - 1
        return float(np.sqrt(max(count, 1)))

    def unit_ball(self) -> npt.NDArray[np.float64]:
        """X divided by :attr:`row_norm_bound`, so every row has Euclidean norm <= 1 (what the proofs assume).

        Dividing by a public constant of the schema (not by each row's norm) keeps the map data-independent.
        """
        scaled: npt.NDArray[np.float64] = self.X / self.row_norm_bound
        return scaled
