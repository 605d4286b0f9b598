"""The one reader of CSV tables: every CSV file mpdp reads is parsed here, once.

Four callers read CSV text: a ``--dataset`` table (:mod:`mpdp.datasets.csvfile`), a party's id-keyed file
(:mod:`mpdp.datasets.party_files`), a deployed party's data file (:mod:`mpdp.datasets.holdings`) and a table
scored by ``mpdp predict`` (:mod:`mpdp.learning.release.schema`). :func:`read_csv_table` does the steps they
share and each caller keeps only its own checks (id column, schema columns, numbers):

* a missing path is a :class:`~mpdp.errors.DatasetUnavailableError`; a byte that is not UTF-8 is a
  :class:`~mpdp.errors.DatasetError` naming the line and column (:func:`mpdp.files.read_text_file`);
* the delimiter is given, or sniffed among ``,``, ``;``, tab and ``|`` (when the sniffer cannot tell, the one
  the header line holds most often; ``,`` if none);
* lines whose cells are all blank are skipped but still counted, so every row carries the file line it starts on
  (a quoted field may span lines) and every message names the true ``file:line``;
* the first non-blank row is the header: its names, stripped of surrounding blanks, must be unique and non-empty;
* an empty file, and (unless the caller accepts a table of no rows) a header without rows, are refused;
* every row has exactly the header's number of fields.

Errors other than the missing file and the undecodable byte are of the class the caller passes (``error=``),
so ``mpdp predict`` keeps refusing a table with :class:`~mpdp.errors.SchemaMismatchError`. Cells are kept as in
the file (callers strip them where their format says blanks do not count).
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from mpdp.errors import DatasetError, DatasetUnavailableError, MpdpError, ParameterError, explain
from mpdp.files import read_text_file

__all__ = ["SNIFFED_DELIMITERS", "CsvRow", "CsvTable", "read_csv_table"]

SNIFFED_DELIMITERS = ",;\t|"
_SNIFF_SAMPLE = 8192  # characters of the file the sniffer looks at


class CsvRow(NamedTuple):
    """One data row: the file line it starts on (1-based, blank lines counted) and its cells as in the file."""

    line: int
    cells: tuple[str, ...]


@dataclass(frozen=True)
class CsvTable:
    """A CSV file read by :func:`read_csv_table`: its header (names stripped, unique, non-empty), the line the
    header is on, and its data rows, each as long as the header and carrying its own starting line."""

    path: Path
    delimiter: str
    header: tuple[str, ...]
    header_line: int
    rows: tuple[CsvRow, ...]

    @property
    def n(self) -> int:
        return len(self.rows)

    def where(self, line: int, column: int | None = None) -> str:
        """``path:line`` (and ``, column j (name)``, ``j`` 1-based, for the 0-based ``column``): where an error
        points in this file."""
        at = f"{self.path}:{line}"
        return at if column is None else f"{at}, column {column + 1} ({self.header[column]})"


def read_csv_table(path: str | os.PathLike[str], what: str, *, delimiter: str | None = None,
                   error: type[MpdpError] = DatasetError, allow_no_rows: bool = False) -> CsvTable:
    """Read the CSV file at ``path`` (the steps in the module docstring).

    ``what`` names the file in messages (``"CSV file"``, ``"alice's file"``). ``delimiter``: one character, or
    ``None`` to sniff it. ``error``: the class of the errors about the table's shape (empty, header alone, header
    names, row lengths, unparseable CSV). ``allow_no_rows``: a header without rows is a table of 0 rows rather
    than an error.

    Raises :class:`~mpdp.errors.DatasetUnavailableError` (no such file), :class:`~mpdp.errors.DatasetError`
    (unreadable, or not UTF-8), :class:`~mpdp.errors.ParameterError` (a bad ``delimiter``) and ``error``.
    """
    file = Path(path).expanduser()
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n"):
        raise ParameterError(explain("delimiter", delimiter, "one character other than a quote or line break",
                                     "pass e.g. delimiter=';', or leave it out to sniff it"))
    if not file.is_file():
        raise DatasetUnavailableError(explain(what, str(file), "an existing file", "check the path"))
    text = read_text_file(file, what)
    if delimiter is None:
        delimiter = _sniff(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows: list[CsvRow] = []
    start = 1
    try:
        for cells in reader:
            if any(c.strip() for c in cells):
                rows.append(CsvRow(start, tuple(cells)))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise error(explain(f"{file}:{start}", str(exc), "a well-formed CSV row",
                            "fix the quoting on that line (a field holding quotes is written \"a \"\"b\"\" c\")")
                    ) from exc
    if not rows:
        raise error(explain(f"{what} {file}", "an empty file", "a header row, then data rows",
                            "write the column names on the first line and one record per line below"))
    header_line = rows[0].line
    header = tuple(h.strip() for h in rows[0].cells)
    _check_header(header, f"header of {file} (line {header_line})", error)
    body = tuple(rows[1:])
    if not body and not allow_no_rows:
        raise error(explain(f"{what} {file}", f"a header row (line {header_line}) and no data rows",
                            "at least one data row below the header",
                            "add the records below the header (or check that the right file was given)"))
    for row in body:
        if len(row.cells) != len(header):
            raise error(explain(f"{file}:{row.line}", f"{len(row.cells)} fields",
                                f"{len(header)} (as the header on line {header_line})",
                                f"fix the row, or quote fields that contain the delimiter {delimiter!r}"))
    return CsvTable(file, delimiter, header, header_line, body)


def _sniff(text: str) -> str:
    """The delimiter of ``text``: the sniffer's, or, when its rows are too uneven for it (a ragged row, which is
    then refused with its line), the candidate the header line holds most often (``,`` if none)."""
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_SAMPLE], delimiters=SNIFFED_DELIMITERS).delimiter
    except csv.Error:
        header = next((line for line in text.splitlines() if line.strip()), "")
        counts = {d: header.count(d) for d in SNIFFED_DELIMITERS}
        best = max(counts, key=lambda d: (counts[d], d == ","))
        return best if counts[best] else ","


def _check_header(header: tuple[str, ...], where: str, error: type[MpdpError]) -> None:
    """Refuse repeated or empty column names: a column must be found by its name, and by one column only."""
    repeated = sorted(name for name, count in Counter(header).items() if count > 1 and name)
    empty = [j + 1 for j, name in enumerate(header) if not name]
    if repeated or empty:
        problems = ([f"repeated {repeated}"] if repeated else []) + ([f"empty at columns {empty}"] if empty else [])
        raise error(explain(where, f"{list(header)} ({'; '.join(problems)})", "unique, non-empty column names",
                            "rename the repeated columns and name the empty ones (pandas writes its index "
                            "as an unnamed column: write with to_csv(..., index=False))"))
