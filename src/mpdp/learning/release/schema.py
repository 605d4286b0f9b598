"""The table schema a released model carries, and the strict reading and writing of tables in it.

A :class:`TableSchema` is the public part of a training set's description: each attribute's name and type,
numeric bounds, category labels, in the order the encoding uses (:mod:`mpdp.datasets.encoding`), plus the
label's name and task. It is what ``mpdp predict`` needs to encode a new CSV exactly as training did, and what
``mpdp synthesize`` needs to write a twin in the original column names, category labels, units and types (an
integer attribute, ``"integer": true`` in the file, is written in whole numbers).

Reading a CSV for a model (:func:`read_table`) never guesses:

* the file is read by :func:`~mpdp.datasets.table.read_csv_table` (delimiter ``,``): an empty file, a header
  without rows, repeated or empty column names and a row of the wrong length are refused with
  :class:`~mpdp.errors.SchemaMismatchError` naming the file and line (a missing file is a
  :class:`~mpdp.errors.DatasetUnavailableError`, a byte that is not UTF-8 a :class:`~mpdp.errors.DatasetError`);
* a column of the schema missing from the header is refused (:class:`~mpdp.errors.SchemaMismatchError`);
  other columns (the label, identifiers) are ignored;
* a missing value (empty, ``?``, ``NA``, ...), a non-number in a numeric column or a category the model never
  saw is refused with its line numbers and values;
* a numeric value outside the declared bounds is clipped to them and counted per column
  (``out_of_bounds="clip"``, the default: the encoding is defined on the bounds only), or refused with its
  line numbers (``out_of_bounds="error"``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset, Task
from mpdp.datasets.encoding import encode
from mpdp.datasets.table import read_csv_table
from mpdp.errors import ModelFileError, SchemaMismatchError, explain

__all__ = ["MISSING", "TableRead", "TableSchema", "format_value", "read_table", "write_table"]

FloatArray = npt.NDArray[np.float64]
MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})
_MAX_LINES_SHOWN = 5


@dataclass(frozen=True)
class TableSchema:
    """Attributes in encoding order, the label's name and the task (see the module docstring).

    ``label_bounds``: a regression target's public bounds, when declared (``--bounds LABEL=lo:hi``); the model
    is trained on the target scaled from them to [-1, 1], and predictions are scaled back to the label's units.
    Without them predictions stay on the [-1, 1] scale.

    ``label_classes``: the names of classes 0 and 1 (``Dataset.label_classes``: Adult's ``<=50K`` and ``>50K``, a
    CSV label's two values, smaller first, or ``not P`` and ``P`` with ``--positive P``); predictions and twins
    write the names, or the codes 0 and 1 where the names are unknown.
    """

    attributes: tuple[Attribute, ...]
    label: str
    task: Task
    label_bounds: tuple[float, float] | None = None
    label_classes: tuple[str, str] | None = None

    @classmethod
    def of(cls, data: Dataset, *, label_bounds: tuple[float, float] | None = None,
           label_classes: tuple[str, str] | None = None) -> TableSchema:
        """The schema of ``data``; a dataset without an attribute view is numeric features in [-1, 1]."""
        attrs = data.attributes or tuple(Attribute(n, "numeric", bounds=(-1.0, 1.0)) for n in data.feature_names)
        bounds = (float(label_bounds[0]), float(label_bounds[1])) if label_bounds and data.task == "regression" \
            else None
        classes = (str(label_classes[0]), str(label_classes[1])) if label_classes and \
            data.task == "classification" else None
        schema = cls(tuple(attrs), data.label_name, data.task, bounds, classes)
        if schema.feature_names != data.feature_names:
            raise SchemaMismatchError(explain(f"features of {data.name}", data.feature_names[:6],
                                              f"the encoding of its attributes {schema.feature_names[:6]}",
                                              "build the dataset with mpdp.datasets.make_dataset"))
        return schema

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def feature_names(self) -> tuple[str, ...]:
        return encode(self.attributes, np.zeros((0, len(self.attributes))))[1]

    def encode(self, values: FloatArray) -> FloatArray:
        """Attribute-view rows (numeric in units, categorical codes) -> features in [-1, 1]."""
        return encode(self.attributes, values)[0]

    def label_units(self, scaled: FloatArray) -> FloatArray:
        """Regression values on the [-1, 1] scale in the label's units (unchanged without ``label_bounds``)."""
        if self.label_bounds is None:
            return scaled
        lo, hi = self.label_bounds
        out: FloatArray = lo + (np.asarray(scaled, dtype=np.float64) + 1.0) * (hi - lo) / 2.0
        return out

    def label_text(self, values: FloatArray) -> list[str]:
        """Labels as written in a table: class names (or 0/1), or regression values in the label's units."""
        if self.task == "classification":
            names = self.label_classes or ("0", "1")
            return [names[int(v)] for v in values]
        return [f"{v:.10g}" for v in self.label_units(values)]

    def to_dict(self) -> dict[str, Any]:
        return {"attributes": [_attribute_dict(a) for a in self.attributes], "label": self.label, "task": self.task,
                "label_bounds": None if self.label_bounds is None else list(self.label_bounds),
                "label_classes": None if self.label_classes is None else list(self.label_classes)}

    @classmethod
    def from_dict(cls, data: Any) -> TableSchema:
        body = _exact(data, {"attributes", "label", "task", "label_bounds", "label_classes"}, "schema")
        attrs = body["attributes"]
        if not isinstance(attrs, list) or not attrs:
            raise ModelFileError(explain("schema.attributes", type(attrs).__name__, "a non-empty list",
                                         "write the model with mpdp run --save"))
        if not isinstance(body["label"], str) or body["task"] not in ("classification", "regression"):
            raise ModelFileError(explain("schema.label/task", (body["label"], body["task"]),
                                         "a name and 'classification' or 'regression'", "rewrite the model file"))
        out = tuple(_attribute(a) for a in attrs)
        if len({a.name for a in out}) != len(out):
            raise ModelFileError(explain("schema.attributes", [a.name for a in out], "unique names",
                                         "rewrite the model file"))
        lb = body["label_bounds"]
        if lb is not None and not (isinstance(lb, list) and len(lb) == 2 and all(_finite(b) for b in lb)
                                   and lb[0] < lb[1] and body["task"] == "regression"):
            raise ModelFileError(explain("schema.label_bounds", lb, "null, or [low, high] of a regression target",
                                         "rewrite the model file"))
        lc = body["label_classes"]
        if lc is not None and not (isinstance(lc, list) and len(lc) == 2 and all(isinstance(c, str) for c in lc)
                                   and lc[0] != lc[1] and body["task"] == "classification"):
            raise ModelFileError(explain("schema.label_classes", lc, "null, or the two class names of a classifier",
                                         "rewrite the model file"))
        return cls(out, body["label"], body["task"], None if lb is None else (float(lb[0]), float(lb[1])),
                   None if lc is None else (lc[0], lc[1]))


def _attribute_dict(attr: Attribute) -> dict[str, Any]:
    if attr.kind == "numeric":
        out = {"name": attr.name, "kind": "numeric", "bounds": [float(b) for b in attr.bounds or ()]}
        return {**out, "integer": True} if attr.integer else out  # the key is there for integer attributes only
    return {"name": attr.name, "kind": "categorical", "categories": list(attr.categories or ())}


def _exact(data: Any, keys: set[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict) or set(data) != keys:
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ModelFileError(explain(where, got, f"an object with exactly the keys {sorted(keys)}",
                                     "write the model with mpdp run --save; do not edit it"))
    return data


def _attribute(data: Any) -> Attribute:
    kind = data.get("kind") if isinstance(data, dict) else None
    try:
        if kind == "numeric":
            keys = {"name", "kind", "bounds"} | ({"integer"} if "integer" in data else set())
            body = _exact(data, keys, "schema attribute")
            bounds = body["bounds"]
            if not (isinstance(bounds, list) and len(bounds) == 2 and all(_finite(b) for b in bounds)):
                raise ModelFileError(explain("bounds", bounds, "[low, high], finite", "rewrite the model file"))
            integer = body.get("integer", False)
            if not isinstance(integer, bool):
                raise ModelFileError(explain("integer", integer, "true or false", "rewrite the model file"))
            return Attribute(str(body["name"]), "numeric", bounds=(float(bounds[0]), float(bounds[1])),
                             integer=integer)
        if kind == "categorical":
            body = _exact(data, {"name", "kind", "categories"}, "schema attribute")
            cats = body["categories"]
            if not (isinstance(cats, list) and all(isinstance(c, str) for c in cats) and len(set(cats)) == len(cats)):
                raise ModelFileError(explain("categories", cats, "distinct strings", "rewrite the model file"))
            return Attribute(str(body["name"]), "categorical", categories=tuple(cats))
    except ModelFileError:
        raise
    except (ValueError, TypeError) as exc:  # Attribute's own validation (empty categories, low >= high)
        raise ModelFileError(explain("schema attribute", data, "a valid attribute", str(exc))) from exc
    raise ModelFileError(explain("schema attribute kind", kind, "'numeric' or 'categorical'", "rewrite the file"))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- reading a table in the schema ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TableRead:
    """Rows read in a schema: attribute-view ``values`` (n x a) and how many values were clipped per column."""

    values: FloatArray
    clipped: dict[str, int]

    @property
    def rows(self) -> int:
        return int(self.values.shape[0])


def _lines(bad: Sequence[tuple[int, str]]) -> str:
    shown = ", ".join(f"line {n}: {v!r}" for n, v in bad[:_MAX_LINES_SHOWN])
    return shown + (f" and {len(bad) - _MAX_LINES_SHOWN} more" if len(bad) > _MAX_LINES_SHOWN else "")


def read_table(schema: TableSchema, path: str | Path, *,
               out_of_bounds: Literal["clip", "error"] = "clip") -> TableRead:
    """Read the CSV at ``path`` in ``schema`` (rules in the module docstring)."""
    if out_of_bounds not in ("clip", "error"):
        raise SchemaMismatchError(explain("out_of_bounds", out_of_bounds, "'clip' or 'error'", "pick one"))
    table = read_csv_table(path, "CSV file", delimiter=",", error=SchemaMismatchError)
    header = table.header
    missing = [n for n in schema.names if n not in header]
    if missing:
        raise SchemaMismatchError(explain(f"columns of {table.path.name}", list(header[:12]), f"the model's "
                                          f"columns, missing {missing}", "add the columns the model was trained on"))
    body = table.rows
    values = np.zeros((len(body), len(schema.attributes)))
    clipped: dict[str, int] = {}
    for j, attr in enumerate(schema.attributes):
        col = header.index(attr.name)
        raw = [(line, cells[col].strip()) for line, cells in body]
        gaps = [(n, v) for n, v in raw if v.lower() in MISSING]
        if gaps:
            raise SchemaMismatchError(explain(f"column {attr.name}", f"missing values at {_lines(gaps)}",
                                              "a value in every row", "fill the values or drop those rows"))
        if attr.kind == "categorical":
            cats = attr.categories or ()
            unseen = [(n, v) for n, v in raw if v not in cats]
            if unseen:
                raise SchemaMismatchError(explain(f"column {attr.name}", f"unseen categories at {_lines(unseen)}",
                                                  f"one of {list(cats)[:8]}", "map them to the model's categories "
                                                  "or drop those rows"))
            lookup = {c: i for i, c in enumerate(cats)}
            values[:, j] = [lookup[v] for _, v in raw]
            continue
        numbers = [(n, v, _number(v)) for n, v in raw]
        bad = [(n, v) for n, v, x in numbers if x is None]
        if bad:
            raise SchemaMismatchError(explain(f"numeric column {attr.name}", f"non-numbers at {_lines(bad)}",
                                              "finite numbers", "clean the values or drop those rows"))
        column = np.array([x for _, _, x in numbers], dtype=np.float64)
        lo, hi = attr.bounds or (-math.inf, math.inf)
        outside = [(n, v) for (n, v, _), x in zip(numbers, column, strict=True) if not lo <= x <= hi]
        if outside and out_of_bounds == "error":
            raise SchemaMismatchError(explain(f"column {attr.name}", f"values outside [{lo:g}, {hi:g}] at "
                                              f"{_lines(outside)}", "values within the model's public bounds",
                                              "pass --out-of-bounds clip to clip them to the bounds"))
        if outside:
            clipped[attr.name] = len(outside)
        values[:, j] = np.clip(column, lo, hi)
    return TableRead(values, clipped)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# -- writing a table in the schema ----------------------------------------------------------------------------
def write_table(path: str | Path, columns: Mapping[str, Sequence[str]]) -> Path:
    """Write ``columns`` (name -> cells, all of one length) as a CSV with a header; returns the path."""
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise SchemaMismatchError(explain("columns", sorted(lengths), "one length", "report this bug"))
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        writer.writerows(zip(*columns.values(), strict=True))
    return out


def format_value(attr: Attribute, value: float) -> str:
    """One attribute-view value in the table's terms and type: a category label, a whole number for an integer
    attribute (age ``51``, never ``50.70693479``), else a number in the attribute's units; always within the
    attribute's domain (:meth:`~mpdp.datasets.dataset.Attribute.in_domain`)."""
    inside = float(attr.in_domain(value))
    if attr.kind == "categorical":
        return (attr.categories or ())[int(inside)]
    if attr.integer:
        return str(int(inside))
    return f"{inside:.10g}"
