"""The user's own table: a CSV file with a header row, a label column, numeric and categorical columns.

The file is read by :func:`mpdp.datasets.table.read_csv_table` (delimiter given or sniffed, blank lines skipped,
unique column names, rows as long as the header; every error names the file and its true line).

Types are declared (``categorical=``, ``numeric=``) or inferred by the rules of :mod:`mpdp.datasets.csvcolumns`,
which never guess silently: a column that is numeric except for a few cells is refused with their line numbers
and values, and a column with a distinct value on every row is an identifier, kept out of the features with a
:class:`~mpdp.errors.DatasetWarning` (``id_column=`` / ``--id-column`` names it explicitly; the dataset keeps
its values as :attr:`~mpdp.datasets.dataset.Dataset.ids`). Encoding, scaling and validation are those of every
mpdp dataset (:mod:`mpdp.datasets.encoding`).

The domain of each column (numeric bounds, category lists) should be *public*: declared from knowledge of
the schema, not read off the private rows. Domains inferred from the file are convenient but reveal, for
example, the largest value present; the loader then emits a :class:`~mpdp.errors.PrivacyLeakWarning` naming
the inferred columns and how to declare them (``bounds={"age": (0, 120)}``, ``--bounds age=0:120``).

A numeric column written in whole numbers only (``42``, not ``42.0``) is an integer attribute
(:attr:`~mpdp.datasets.dataset.Attribute.integer`): synthetic twins write it as whole numbers within its bounds.

Label: a column with two distinct values gives classification (the ``positive`` value, or the larger of the
two in sorted order, becomes 1); a numeric column with more values gives regression, scaled to [-1, 1] by
its bounds. The class names are kept (``Dataset.label_classes``: predictions and twins write them); declare
them as the label's categories (``categories={"income": ["<=50K", ">50K"]}``, ``--categories
income='<=50K|>50K'``, the positive class second), or names read off the rows are listed among the inferred
domains.

Missing values (empty, ``?``, ``NA``, ``NaN``, ``null``, ``None``) in a used column (features, label,
identifier): ``missing="drop"`` (``--missing drop``, the default) drops the row, warns with the count and the
first line numbers, and records the count as :attr:`~mpdp.datasets.dataset.Dataset.dropped_rows` (``mpdp run
--json`` reports it as ``"dropped_rows"``); ``missing="error"`` refuses the file, naming the lines. The count,
like the number of rows, is not protected by differential privacy: it is for the data holder.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np

from mpdp.datasets.csvcolumns import (
    find_identifiers,
    number,
    numeric_column,
    parse_numeric,
    require_unique,
    whole_numbers,
)
from mpdp.datasets.dataset import Attribute, Dataset, Task
from mpdp.datasets.encoding import OutOfBounds, make_dataset, scale_to_pm1
from mpdp.datasets.table import read_csv_table
from mpdp.errors import (
    DatasetError,
    DatasetWarning,
    DomainError,
    ParameterError,
    PrivacyLeakWarning,
    explain,
)

__all__ = ["MISSING", "load_csv", "parse_bounds_spec", "parse_categories_spec"]

MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})


def parse_bounds_spec(spec: str) -> dict[str, tuple[float, float]]:
    """``"age=0:120,hours=1:99"`` -> ``{"age": (0.0, 120.0), "hours": (1.0, 99.0)}``."""
    out: dict[str, tuple[float, float]] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, rng = item.partition("=")
        lo, _, hi = rng.partition(":")
        try:
            out[name.strip()] = (float(lo), float(hi))
        except ValueError:
            raise ParameterError(explain("bounds", item, "name=low:high", "write e.g. --bounds age=0:120")) from None
    return out


def parse_categories_spec(spec: str) -> dict[str, tuple[str, ...]]:
    """``"city=Lyon|Nice|Paris,member=no|yes"`` -> ``{"city": ("Lyon", "Nice", "Paris"), "member": ("no", "yes")}``."""
    out: dict[str, tuple[str, ...]] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, eq, values = item.partition("=")
        cats = tuple(v.strip() for v in values.split("|") if v.strip())
        if not eq or not name.strip() or not cats:
            raise ParameterError(explain("categories", item, "name=a|b|c", "write e.g. --categories city=Lyon|Paris"))
        out[name.strip()] = cats
    return out


def _lines(lines: Sequence[int]) -> str:
    shown = ", ".join(map(str, lines[:8]))
    return shown + (f" and {len(lines) - 8} more" if len(lines) > 8 else "")


def _complete_rows(rows: list[tuple[int, list[str]]], header: list[str], used: Sequence[str],
                   missing: str, source: str) -> tuple[list[tuple[int, list[str]]], int]:
    """Rows with a value in every used column, and how many were dropped (``missing="error"``: refused)."""
    index = [header.index(c) for c in used]
    kept: list[tuple[int, list[str]]] = []
    gaps: list[int] = []
    columns: list[str] = []
    for lineno, row in rows:
        empty = [header[i] for i in index if row[i].lower() in MISSING]
        if empty:
            gaps.append(lineno)
            columns.extend(c for c in empty if c not in columns)
        else:
            kept.append((lineno, row))
    if gaps and missing == "error":
        raise DatasetError(explain(
            f"{source}, lines {_lines(gaps)}", f"{len(gaps)} rows with missing values in {columns}",
            "a value in every used cell", "fill the values, or pass missing='drop' (--missing drop) to drop those "
            "rows, counted"))
    if gaps:
        warnings.warn(
            f"{source}: dropped {len(gaps)} of {len(rows)} rows with missing values (lines {_lines(gaps)}; columns "
            f"{', '.join(columns)}). Pass missing='error' (--missing error) to refuse them instead, or fill them.",
            DatasetWarning, stacklevel=3)
    return kept, len(gaps)


def load_csv(
    path: str | os.PathLike[str],
    *,
    label: str,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[str]] | None = None,
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    task: Task | None = None,
    positive: str | None = None,
    missing: Literal["drop", "error"] = "drop",
    out_of_bounds: OutOfBounds = "error",
    delimiter: str | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a CSV table as a :class:`Dataset` (see the module docstring for types, identifiers, domains and labels).

    ``columns`` keeps only those feature columns (default: every column except the label and identifiers).
    ``id_column`` names the column that identifies records: never a feature, unique per row, its values kept
    as ``Dataset.ids``. ``missing`` says what a row with a missing value gets: ``"drop"`` (counted, with a
    :class:`~mpdp.errors.DatasetWarning`) or ``"error"``.
    """
    file = Path(path).expanduser()
    if missing not in ("drop", "error"):
        raise ParameterError(explain("missing", missing, "'drop' or 'error'", "pass missing='drop' or 'error'"))
    table = read_csv_table(file, "CSV file", delimiter=delimiter)
    header = list(table.header)
    rows = [(line, [c.strip() for c in cells]) for line, cells in table.rows]
    bounds = dict(bounds or {})
    declared_cats = {k: tuple(v) for k, v in (categories or {}).items()}
    given = [id_column] if id_column is not None else []
    features = list(columns) if columns is not None else [h for h in header if h != label and h not in given]
    for what, names in (("label", [label]), ("categorical", categorical), ("numeric", numeric),
                        ("columns", features), ("bounds", list(bounds)), ("categories", list(declared_cats)),
                        ("id_column", given)):
        unknown = [c for c in names if c not in header]
        if unknown:
            raise ParameterError(explain(f"{what} column", unknown, f"columns of {file.name}: {header}",
                                         "check the spelling against the CSV header"))
    if label in features:
        raise ParameterError(explain("columns", features, "feature columns without the label", f"drop {label!r}"))
    if id_column is not None and (id_column == label or id_column in features or id_column in categorical
                                  or id_column in numeric or id_column in bounds or id_column in declared_cats):
        raise ParameterError(explain("id_column", id_column, "a column that is neither the label nor a feature",
                                     "name the identifier column once, and not among the label or feature options"))
    if both := set(categorical) & set(numeric):
        raise ParameterError(explain("column types", sorted(both), "each column either numeric or categorical",
                                     "declare each column once"))

    identifiers = list(given)
    if columns is None:
        undeclared = [c for c in features if c not in categorical and c not in numeric]
        cells = [[r[header.index(c)] for _, r in rows if r[header.index(c)].lower() not in MISSING]
                 for c in undeclared]
        found = find_identifiers(undeclared, cells)
        if found:
            warnings.warn(
                f"{file.name}: {', '.join(found)} is unique per row (a distinct value on every row), so it is "
                f"taken for a record identifier and kept out of the features. Name it with --id-column {found[0]} "
                f"(id_column={found[0]!r}) to say so, or declare its type (--numeric/--categorical) to keep it "
                "as a feature.",
                DatasetWarning, stacklevel=2)
            features = [c for c in features if c not in found]
            identifiers += found
    if not features:
        raise ParameterError(explain("feature columns", [], "at least one", "add feature columns to the CSV"))

    kept, dropped = _complete_rows(rows, header, [*features, label, *given], missing, file.name)
    if len(kept) < 2:
        raise DatasetError(explain(f"complete rows of {file.name}", len(kept), "at least 2", "add data"))
    lines = [lineno for lineno, _ in kept]
    ids: list[str] | None = None
    if identifiers:
        ids = [r[header.index(identifiers[0])] for _, r in kept]
        if any(v.lower() in MISSING for v in ids):  # a found identifier with gaps: no ids to align records by
            ids = None
        else:
            require_unique(identifiers[0], ids, lines, source=file.name)  # a named one; a found one is unique

    inferred: list[str] = []
    attrs: list[Attribute] = []
    cols: list[np.ndarray] = []
    for col in features:
        raw = [r[header.index(col)] for _, r in kept]
        if col in numeric or (col not in categorical and numeric_column(raw)):
            values = np.array(parse_numeric(col, raw, lines, declared=col in numeric, source=file.name),
                              dtype=np.float64)
            if col in bounds:
                lo, hi = bounds[col]
            else:
                lo, hi = float(values.min()), float(values.max())
                if lo == hi:
                    lo, hi = lo - 0.5, hi + 0.5
                inferred.append(f"{col} bounds [{lo:g}, {hi:g}]")
            whole = whole_numbers(raw) and np.ceil(lo) <= np.floor(hi)  # e.g. an age: twins write whole numbers
            attrs.append(Attribute(col, "numeric", bounds=(lo, hi), integer=bool(whole)))
            cols.append(values)
        else:
            if col in declared_cats:
                cats = declared_cats[col]
                unknown = sorted(set(raw) - set(cats))
                if unknown:
                    raise DomainError(explain(f"categories of {col}", unknown[:5], f"one of {list(cats)[:8]}",
                                              "declare every category the column may take"))
            else:
                cats = tuple(sorted(set(raw)))
                inferred.append(f"{col} categories ({len(cats)})")
            lookup = {c: i for i, c in enumerate(cats)}
            attrs.append(Attribute(col, "categorical", categories=cats))
            cols.append(np.array([lookup[v] for v in raw], dtype=np.float64))
    values = np.column_stack(cols)

    raw_label = [r[header.index(label)] for _, r in kept]
    distinct = sorted(set(raw_label))
    label_nums = [number(v) for v in raw_label]
    if task is None:
        task = "classification" if len(distinct) <= 2 or any(v is None for v in label_nums) else "regression"
    if task == "classification":
        if label in declared_cats:  # the label's public domain: its two class names, class 1 second
            names = declared_cats[label]
            if len(names) != 2 or names[0] == names[1] or (positive is not None and positive not in names):
                raise ParameterError(explain(f"categories of the label {label}", names,
                                             "two distinct class names, the positive one second",
                                             f"declare e.g. --categories {label}=no|yes"))
            outside = sorted(set(distinct) - set(names))
            if outside:
                raise DomainError(explain(f"label {label}", outside[:8], f"one of the declared classes {names}",
                                          "fix the rows or the declaration"))
            one = names[1] if positive is None else positive
            y = np.array([v == one for v in raw_label], dtype=np.float64)
            classes = (names[0] if one == names[1] else names[1], one)
        elif positive is not None:
            if positive not in distinct:
                raise ParameterError(explain("positive", positive, f"a value of {label}: {distinct[:8]}",
                                             "name the class that should be 1"))
            y = np.array([v == positive for v in raw_label], dtype=np.float64)
            classes = (f"not {positive}", positive)
        elif len(distinct) == 2:
            numeric_pair = all(v is not None for v in label_nums)
            pair = sorted(distinct, key=lambda v: float(v)) if numeric_pair else distinct
            y = np.array([v == pair[1] for v in raw_label], dtype=np.float64)
            classes = (pair[0], pair[1])
            if classes != ("0", "1"):  # names read off the rows (beyond the codes), written into a released model
                inferred.append(f"{label} (label) classes {pair[0]}|{pair[1]}")
        else:
            raise DomainError(explain(f"label {label}", distinct[:8], "exactly two classes",
                                      "pass positive=VALUE (--positive VALUE) for one class against the rest"))
    elif task == "regression":
        if any(v is None for v in label_nums):
            raise DomainError(explain(f"label {label}", "non-numeric values", "numbers for regression",
                                      "use task='classification' or clean the label"))
        target = np.array(label_nums, dtype=np.float64)
        if label in bounds:
            lbounds = bounds[label]
        else:
            lbounds = (float(target.min()), float(target.max()))
            if lbounds[0] == lbounds[1]:
                lbounds = (lbounds[0] - 0.5, lbounds[1] + 0.5)
            inferred.append(f"{label} (label) bounds [{lbounds[0]:g}, {lbounds[1]:g}]")
        y = scale_to_pm1(target, lbounds, name=label, out_of_bounds=out_of_bounds)
    else:
        raise ParameterError(explain("task", task, "'classification' or 'regression'", "pick one"))
    if inferred:
        warnings.warn(
            f"{file.name}: domains inferred from the data ({'; '.join(inferred)}); they are not protected by "
            "differential privacy. Declare public domains (bounds={'col': (lo, hi)} / --bounds col=lo:hi, "
            "categories={'col': [...]} / --categories col=a|b) for the full guarantee.",
            PrivacyLeakWarning, stacklevel=2)
    data = make_dataset(name or file.stem, attrs, values, y, task=task, label_name=label,
                        out_of_bounds=out_of_bounds)
    return replace(data, ids=None if ids is None else np.array(ids, dtype=np.str_), dropped_rows=dropped,
                   label_classes=classes if task == "classification" else None)
