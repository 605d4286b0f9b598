"""The one CSV reader (:mod:`mpdp.datasets.table`) and the four entry points that read CSV through it: every row
carries the file line it starts on, and every malformed file is a typed error naming the file and the line.

Entry points: ``load_csv`` (``--dataset``), ``read_party_table`` (``--data`` party files), ``read_party_data``
(a deployed party's file) and ``read_table`` (``mpdp predict``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.datasets.csvfile import load_csv
from mpdp.datasets.dataset import Attribute
from mpdp.datasets.holdings import PartyData, read_party_data, write_party_data
from mpdp.datasets.party_files import read_party_table
from mpdp.datasets.table import read_csv_table
from mpdp.errors import (
    DatasetError,
    DatasetUnavailableError,
    MpdpError,
    ParameterError,
    SchemaMismatchError,
    ShapeMismatchError,
)
from mpdp.learning.release.schema import TableSchema, read_table

SCHEMA = TableSchema((Attribute("age", "numeric", bounds=(0.0, 100.0)),
                      Attribute("city", "categorical", categories=("Lyon", "Paris"))), "y", "classification")

# Per entry point: a valid header and two valid rows, and how the entry point is called.
GOOD: dict[str, tuple[str, str, str]] = {
    "csvfile": ("age,city,y", "30,Lyon,yes", "40,Paris,no"),
    "party_files": ("id,age,city", "1,30,Lyon", "2,40,Paris"),
    "deploy": ("x:age,x:city", "0.5,-1", "0.25,1"),
    "predict": ("age,city,y", "30,Lyon,yes", "40,Paris,no"),
}
READERS: dict[str, Callable[[Path], Any]] = {
    "csvfile": lambda p: load_csv(p, label="y", categorical=["city"], bounds={"age": (0, 100)},
                                  categories={"city": ["Lyon", "Paris"], "y": ["no", "yes"]}),
    "party_files": lambda p: read_party_table("alice", p, id_column="id"),
    "deploy": lambda p: read_party_data(p, "alice", {"features": ["age", "city"], "attributes": []}, rows=2),
    "predict": lambda p: read_table(SCHEMA, p),
}


def _layout(header: str, first: str, second: str) -> bytes:
    """A blank line, the header (line 2), a blank line, a row (line 4), two blank lines, a row (line 7)."""
    return f"\n{header}\n\n{first}\n\n  \n{second}\n".encode()


def _ragged(header: str, first: str, second: str) -> bytes:
    return _layout(header, first, second.rpartition(",")[0])


def _duplicate_header(header: str, first: str, second: str) -> bytes:
    names = header.split(",")
    return _layout(",".join([names[0], names[0], *names[2:]]), first, second)


def _header_only(header: str, first: str, second: str) -> bytes:
    return f"\n{header}\n\n".encode()


def _latin1(header: str, first: str, second: str) -> bytes:
    return _layout(header, first, second).replace(second.encode(), second.encode()[:1] + b"\xe9" + second.encode()[1:])


# malformation -> (file bytes, the line the message must name, or None where the file has no line to point to)
MALFORMED: dict[str, tuple[Callable[[str, str, str], bytes] | None, str | None]] = {
    "ragged row": (_ragged, ":7"),
    "duplicate header": (_duplicate_header, "line 2"),
    "header only": (_header_only, "line 2"),
    "non-UTF-8 byte": (_latin1, "line 7, column 2"),
    "missing file": (None, None),
}


def _expected(reader: str, case: str) -> tuple[type[MpdpError], str | None]:
    """The error class each entry point raises for ``case``, and the line its message names."""
    line = MALFORMED[case][1]
    if case == "missing file":
        return DatasetUnavailableError, None
    if case == "non-UTF-8 byte":
        return DatasetError, line  # the byte is refused before any CSV parsing, alike for every reader
    if reader == "predict":
        return SchemaMismatchError, line
    if reader == "deploy" and case == "header only":
        return ShapeMismatchError, None  # a 0-row file is readable; the schema's row count refuses it
    return DatasetError, line


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_entry_point_refuses_a_malformed_file_naming_file_and_line(tmp_path: Path, reader: str,
                                                                        case: str) -> None:
    make, _ = MALFORMED[case]
    path = tmp_path / "table.csv"
    if make is not None:
        path.write_bytes(make(*GOOD[reader]))
    error, line = _expected(reader, case)
    with pytest.raises(error) as info:
        READERS[reader](path)
    message = str(info.value)
    assert str(path) in message
    if line is not None:
        assert line in message, message
    assert "Fix:" in message


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_entry_point_reads_the_good_layout(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "table.csv"
    path.write_bytes(_layout(*GOOD[reader]))
    READERS[reader](path)  # blank lines anywhere are skipped


# -- the true file line after blank lines, in each caller's own checks ------------------------------------------
def test_load_csv_names_the_true_line_of_a_missing_value(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(_layout("age,city,y", "30,Lyon,yes", ",Paris,no"))
    with pytest.raises(DatasetError, match=r"lines 7\b"):
        load_csv(path, label="y", missing="error", bounds={"age": (0, 100)},
                 categories={"city": ["Lyon", "Paris"], "y": ["no", "yes"]})


def test_read_party_table_names_the_true_line_of_a_ragged_row(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id;x\n\n\nA;1\n\nB\n")
    with pytest.raises(DatasetError, match=r"t\.csv:6: received '1 fields'"):
        read_party_table("alice", path, id_column="id")


def test_read_party_data_names_the_true_line_and_column_of_a_non_number(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id:k,x:a,y:label\n\np,0.5,1\n\n\nq,0.5x,0\n")
    schema = {"features": ["a"], "attributes": []}
    with pytest.raises(DatasetError, match=r"t\.csv:6, column 2 \(x:a\): received '0\.5x', expected a finite"):
        read_party_data(path, "alice", schema, label=True, id_column="k")
    path.write_text("x:a,y:label\n0.5,1\n\nnan,0\n")
    with pytest.raises(DatasetError, match=r"t\.csv:4, column 1 \(x:a\): received 'nan'"):
        read_party_data(path, "alice", schema, label=True)


def test_read_party_data_keeps_ids_apart_without_a_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id:k,x:a,y:label\n\np 1,0.5,1\nq,-0.25,0\n")
    data = read_party_data(path, "alice", {"features": ["a"], "attributes": []}, label=True, id_column="k", rows=2)
    assert data.ids == ("p 1", "q") and data.X.tolist() == [[0.5], [-0.25]] and data.y is not None
    assert data.y.tolist() == [1.0, 0.0] and sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    with pytest.raises(ShapeMismatchError, match="id:k"):
        read_party_data(path, "alice", {"features": ["a"], "attributes": []}, label=True, id_column="other")


def test_read_table_names_the_true_line_of_a_non_number(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(_layout("age,city", "30,Lyon", "abc,Paris"))
    with pytest.raises(SchemaMismatchError, match=r"non-numbers at line 7: 'abc'"):
        read_table(SCHEMA, path)


# -- the reader itself ------------------------------------------------------------------------------------------
_CELL = st.text(alphabet="ab ,;|\t\"\n1", max_size=6)  # delimiters, quotes and line breaks inside quoted fields


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.text(alphabet="xyz", min_size=1, max_size=3), _CELL, _CELL), min_size=1,
                     max_size=8),
       blanks=st.lists(st.integers(0, 2), min_size=9, max_size=9), delimiter=st.sampled_from(",;\t|"))
def test_each_row_carries_the_line_it_starts_on(tmp_path: Path, rows: list[tuple[str, str, str]],
                                                blanks: list[int], delimiter: str) -> None:
    text = io.StringIO()
    writer = csv.writer(text, delimiter=delimiter, lineterminator="\n")
    starts = []
    for gap, row in zip(blanks, [("a", "b", "c"), *rows], strict=False):
        text.write("\n" * gap)
        starts.append(text.getvalue().count("\n") + 1)  # the line the row starts on, counted in the text
        writer.writerow(row)
    path = tmp_path / "t.csv"
    path.write_text(text.getvalue(), encoding="utf-8")
    table = read_csv_table(path, "CSV file", delimiter=delimiter)
    assert (table.header, table.header_line) == (("a", "b", "c"), starts[0])
    assert [r.line for r in table.rows] == starts[1:]
    assert [r.cells for r in table.rows] == list(rows)


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed(tmp_path: Path, delimiter: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(delimiter.join(["a", "b", "c"]) + "\n" + delimiter.join(["1", "x y", "3"]) + "\n")
    table = read_csv_table(path, "CSV file")
    assert (table.delimiter, table.header, table.rows[0].cells) == (delimiter, ("a", "b", "c"), ("1", "x y", "3"))


def test_header_names_are_stripped_and_must_be_named_once(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("\ufeff a , b\n1,2\n")
    assert read_csv_table(path, "CSV file").header == ("a", "b")
    path.write_text("a,,b,a\n1,2,3,4\n")
    with pytest.raises(DatasetError, match=re.escape("repeated ['a']; empty at columns [2]")):
        read_csv_table(path, "CSV file")


def test_the_error_class_is_the_callers_and_a_header_alone_may_be_a_table(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n")
    with pytest.raises(SchemaMismatchError, match=r"line 1\) and no data rows"):
        read_csv_table(path, "CSV file", error=SchemaMismatchError)
    assert read_csv_table(path, "CSV file", allow_no_rows=True).n == 0
    path.write_text(" \n\n")
    with pytest.raises(DatasetError, match="an empty file"):
        read_csv_table(path, "CSV file")


def test_bad_delimiters_and_unparseable_rows_are_typed(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    for bad in (",,", "", '"', "\n"):
        with pytest.raises(ParameterError, match="one character"):
            read_csv_table(path, "CSV file", delimiter=bad)
    limit = csv.field_size_limit()
    path.write_text("a,b\n1,2\n\n" + "1," + "x" * (limit + 1) + "\n")
    with pytest.raises(DatasetError, match=r"t\.csv:4: received 'field larger than field limit"):
        read_csv_table(path, "CSV file")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(*[st.floats(allow_nan=False, allow_infinity=False, width=64)] * 3), min_size=1, max_size=20))
def test_party_data_reads_back_exactly_what_was_written(tmp_path: Path, rows: list[tuple[float, float, float]]) -> None:
    X = np.array(rows, dtype=np.float64)  # any finite float64, subnormals and extremes included
    path = write_party_data(tmp_path / "p.csv", PartyData("p", X, ("a", "b", "c")))
    back = read_party_data(path, "p", {"features": ["a", "b", "c"], "attributes": []}, rows=len(rows))
    assert back.X.tobytes() == X.tobytes()
