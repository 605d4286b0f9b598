"""Each party's own data file and the public schema every party shares.

A deployed party reads two things from disk: the public ``schema.json`` (the dataset's attributes, their
bounds and categories, its encoded columns, the label's name and, for column splits, which party holds which
columns and the label) and its *own* CSV, which holds only its columns (vertical) or only its rows
(horizontal). No party reads another party's file.

The CSV is the encoded view the algorithms train on (features already scaled into [-1, 1], one-hot blocks as
0/1 columns), written with 17 significant digits so that reading it back gives the very same float64 values. Its
header names every column: ``x:<feature>`` for a feature, ``v:<attribute>`` for the attribute view (horizontal
files, which some algorithms need) and ``y:<label>`` for the label (only in the label holder's file).
The file is read by :func:`~mpdp.datasets.table.read_csv_table`; a file whose columns or row count disagree with
the schema is refused with a typed error naming the party, a cell that is not a finite number with its line and
column.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.datasets.table import CsvTable, read_csv_table
from mpdp.errors import DatasetError, ParameterError, ShapeMismatchError, explain

__all__ = ["PartyData", "attributes_from_schema", "dataset_from_schema", "read_party_data", "records_digest",
           "schema_dataset", "schema_of", "write_party_data"]

FloatArray = npt.NDArray[np.float64]


def schema_of(data: Dataset) -> dict[str, Any]:
    """The public description of ``data`` (no records): what every party may know."""
    return {
        "name": data.name,
        "task": data.task,
        "label": data.label_name,
        "features": list(data.feature_names),
        "attributes": [{"name": a.name, "kind": a.kind, "bounds": None if a.bounds is None else list(a.bounds),
                        "categories": None if a.categories is None else list(a.categories), "integer": a.integer}
                       for a in data.attributes],
        "encoded_columns": [list(c) for c in data.encoded_columns],
        "groups": {k: list(v) for k, v in data.groups.items()},
        "label_classes": None if data.label_classes is None else list(data.label_classes),
    }


@dataclass(frozen=True)
class PartyData:
    """What one party holds: its features (its columns or its rows), the labels if it holds them, and (rows
    only) the attribute view."""

    party: str
    X: FloatArray
    features: tuple[str, ...]
    y: FloatArray | None = None
    values: FloatArray | None = None
    ids: tuple[str, ...] | None = None  # the record identifiers, for a file aligned privately by the parties

    def take(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> PartyData:
        """The rows ``rows`` in that order (a party keeps its aligned records); the ids are dropped."""
        idx = np.asarray(rows, dtype=np.int64)
        return PartyData(self.party, np.ascontiguousarray(self.X[idx]), self.features,
                         None if self.y is None else np.ascontiguousarray(self.y[idx]),
                         None if self.values is None else np.ascontiguousarray(self.values[idx]))

    @property
    def n(self) -> int:
        return int(self.X.shape[0])


def write_party_data(path: str | Path, data: PartyData, *, id_column: str | None = None) -> Path:
    """Write ``data`` as the party's CSV (exact float64 round trip); with ``id_column``, ``data.ids`` come
    first as the text column ``id:<id_column>``."""
    out = Path(path)
    header = [f"x:{f}" for f in data.features]
    blocks = [data.X]
    if data.values is not None:
        header += [f"v:{j}" for j in range(data.values.shape[1])]
        blocks.append(data.values)
    if data.y is not None:
        header.append("y:label")
        blocks.append(data.y[:, None])
    table = np.hstack(blocks) if blocks else np.zeros((0, 0))
    if id_column is not None:
        if data.ids is None or len(data.ids) != data.n:
            raise ParameterError(explain(f"ids of {data.party}", None if data.ids is None else len(data.ids),
                                         f"one per row ({data.n})", "give PartyData its ids"))
        with out.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([f"id:{id_column}", *header])
            writer.writerows([i, *(f"{v:.17g}" for v in row)] for i, row in zip(data.ids, table, strict=True))
        return out
    with out.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow(header)
        np.savetxt(handle, table, fmt="%.17g", delimiter=",")  # 17 significant digits: float64 round-trips
    return out


def read_party_data(path: str | Path, party: str, schema: Mapping[str, Any], *,
                    features: Sequence[str] | None = None, label: bool = False, values: bool = False,
                    rows: int | None = None, id_column: str | None = None) -> PartyData:
    """Read party ``party``'s CSV and check it against what the schema says it holds.

    ``features``: the feature names the party must hold (default: all of the schema's); ``label``: whether it
    holds the label; ``values``: whether it carries the attribute view; ``rows``: the row count it must have;
    ``id_column``: the file's first column is ``id:<id_column>``, the records' identifiers (kept as text).

    The file is read by :func:`~mpdp.datasets.table.read_csv_table` (delimiter ``,``; a header without rows is a
    table of 0 rows, refused only when ``rows`` asks for more). A cell that is not a finite number is a
    :class:`~mpdp.errors.DatasetError` naming its file, line and column; columns or a row count that disagree
    with the schema are a :class:`~mpdp.errors.ShapeMismatchError`.
    """
    source = Path(path)
    if id_column is None:
        fix = f"give {party} the file `mpdp launch` (or your own export) wrote for it, with the schema's columns"
    else:
        fix = f"give {party} its file whose first column is id:{id_column}, then the schema's columns"
    table = read_csv_table(source, f"data file of {party}", delimiter=",", allow_no_rows=True)
    header = list(table.header)
    first = 0
    if id_column is not None:
        if header[0] != f"id:{id_column}":
            raise ShapeMismatchError(explain(f"first column of {party}'s data file {source}", header[0],
                                             f"id:{id_column}", fix))
        header, first = header[1:], 1
    want_features = list(schema["features"]) if features is None else list(features)
    expected = [f"x:{f}" for f in want_features]
    if values:
        expected += [f"v:{j}" for j in range(len(schema["attributes"]))]
    if label:
        expected.append("y:label")
    if header != expected:
        missing = [h for h in expected if h not in header][:5]
        extra = [h for h in header if h not in expected][:5]
        raise ShapeMismatchError(explain(f"columns of {party}'s data file {source}",
                                         f"{len(header)} columns (missing {missing}, unexpected {extra})",
                                         f"the {len(expected)} columns the schema assigns to {party}", fix))
    if rows is not None and table.n != rows:
        raise ShapeMismatchError(explain(f"rows of {party}'s data file {source}", table.n,
                                         f"{rows} rows (the schema's count for {party})", fix))
    numbers = _numbers(table, first, f"data file of {party}", fix)
    d = len(want_features)
    X = np.ascontiguousarray(numbers[:, :d])
    view = np.ascontiguousarray(numbers[:, d:d + len(schema["attributes"])]) if values else None
    y = np.ascontiguousarray(numbers[:, -1]) if label else None
    ids = None if id_column is None else tuple(cells[0] for _, cells in table.rows)
    return PartyData(party, X, tuple(want_features), y, view, ids)


def _numbers(table: CsvTable, first: int, what: str, fix: str) -> FloatArray:
    """The cells of columns ``first:`` as float64 (n x columns); a cell that is not a finite number is refused
    with its file, line and column. numpy parses each cell as Python's ``float`` does (correctly rounded), so
    the 17 significant digits :func:`write_party_data` writes read back as the very same float64."""
    try:
        out: FloatArray = np.array([cells[first:] for _, cells in table.rows], dtype=np.float64)
        if np.isfinite(out).all():
            return out.reshape(table.n, len(table.header) - first)
    except ValueError:
        pass  # some cell is not a number: found and named below
    for line, cells in table.rows:
        for j in range(first, len(cells)):
            if not _finite_number(cells[j]):
                raise DatasetError(explain(f"{what}, {table.where(line, j)}", cells[j], "a finite number", fix))
    raise DatasetError(explain(what, str(table.path), "a table of numbers below the header", fix))


def _finite_number(text: str) -> bool:
    try:
        return bool(np.isfinite(np.array(text, dtype=np.float64)))
    except ValueError:
        return False


def attributes_from_schema(schema: Mapping[str, Any]) -> tuple[Attribute, ...]:
    """The typed attributes of a public schema (:func:`schema_of`)."""
    return tuple(Attribute(a["name"], a["kind"], None if a["bounds"] is None else tuple(a["bounds"]),
                           None if a["categories"] is None else tuple(a["categories"]), bool(a.get("integer", False)))
                 for a in schema["attributes"])


def records_digest(data: PartyData) -> str:
    """sha256 of a file's float64 contents (features, attribute view, labels, in that order): what parties
    compare to agree that they hold the same held-out records."""
    h = hashlib.sha256()
    for block in (data.X, data.values, data.y):
        if block is not None:
            h.update(repr(block.shape).encode())
            h.update(np.ascontiguousarray(block, dtype=np.float64).tobytes())
    return h.hexdigest()


def dataset_from_schema(schema: Mapping[str, Any], data: PartyData) -> Dataset:
    """A party's rows as a :class:`Dataset` with the public schema's attributes (horizontal parties)."""
    if data.y is None or tuple(schema["features"]) != data.features:
        raise ParameterError(explain(f"data of {data.party}", data.features[:3], "every feature and the label",
                                     "a horizontal party holds whole rows"))
    attributes = attributes_from_schema(schema)
    return Dataset(name=str(schema["name"]), X=data.X, y=data.y, feature_names=data.features, task=schema["task"],
                   attributes=attributes, values=data.values if attributes else None,
                   encoded_columns=tuple(tuple(c) for c in schema["encoded_columns"]), label_name=schema["label"],
                   groups={k: tuple(v) for k, v in schema["groups"].items()},
                   label_classes=_classes(schema.get("label_classes")))


def _classes(names: Any) -> tuple[str, str] | None:
    return None if names is None else (str(names[0]), str(names[1]))


def schema_dataset(schema: Mapping[str, Any]) -> Dataset:
    """The public schema as a :class:`Dataset` without records: its names, encoding, task and label classes
    (what a released model's file needs, and its public row-norm bound), for a party that holds no training set."""
    d = len(schema["features"])
    empty = PartyData("schema", np.zeros((0, d)), tuple(schema["features"]), np.zeros(0),
                      np.zeros((0, len(schema["attributes"]))))
    return dataset_from_schema(schema, empty)


def dump_json(path: str | Path, body: Mapping[str, Any]) -> Path:
    """Write a JSON document (configs, schema) readably."""
    out = Path(path)
    out.write_text(json.dumps(body, indent=1, sort_keys=True))
    return out
