"""One party's own CSV file keyed by an id column, before and after record alignment.

Vertically partitioned parties each hold a file of their own columns plus an identifier column, in their own
row order. :func:`read_party_table` reads one (the id column kept apart: it is never a feature);
:func:`joined_rows` puts several parties' aligned rows side by side (for simulating every party in one
process) and :func:`write_table` writes one party's aligned file. The alignment itself is
:mod:`mpdp.protocols.alignment`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mpdp.datasets.table import read_csv_table
from mpdp.errors import DatasetError, ParameterError, explain

__all__ = ["PartyTable", "joined_rows", "parse_data_spec", "read_party_table", "write_table"]


@dataclass(frozen=True)
class PartyTable:
    """A party's file: its id column apart from its other columns (``cells[i]`` is row ``i`` of those)."""

    party: str
    path: Path
    id_column: str
    columns: tuple[str, ...]
    ids: list[str]
    cells: list[list[str]]

    @property
    def n(self) -> int:
        return len(self.ids)


def parse_data_spec(text: str) -> tuple[str, Path]:
    """``"alice=path/a.csv"`` -> ``("alice", Path("path/a.csv"))`` (the ``--data`` argument)."""
    name, eq, path = text.partition("=")
    if not eq or not name.strip() or not path.strip():
        raise ParameterError(explain("--data", text, "PARTY=FILE.csv", "write e.g. --data alice=alice.csv"))
    return name.strip(), Path(path.strip()).expanduser()


def read_party_table(party: str, path: str | os.PathLike[str], *, id_column: str) -> PartyTable:
    """Read ``path`` with :func:`~mpdp.datasets.table.read_csv_table` (header row, then data rows; delimiter
    ``,``, ``;``, tab or ``|``, sniffed). The ids are kept as written, the other cells stripped of blanks.

    Raises :class:`~mpdp.errors.DatasetUnavailableError` for a missing file and
    :class:`~mpdp.errors.DatasetError` for a file without the id column, without data rows, with repeated or
    empty column names, or with rows of the wrong length.
    """
    table = read_csv_table(path, f"{party}'s file")
    header = table.header
    if id_column not in header:
        raise DatasetError(explain(f"id column of {party} ({table.path.name})", id_column, f"one of {list(header)}",
                                   "name the identifier column every party's file has (--id-column NAME)"))
    at = header.index(id_column)
    ids = [cells[at] for _, cells in table.rows]
    cells = [[c.strip() for i, c in enumerate(row) if i != at] for _, row in table.rows]
    return PartyTable(party, table.path, id_column, tuple(h for h in header if h != id_column), ids, cells)


def joined_rows(tables: Sequence[PartyTable], rows: Mapping[str, npt.NDArray[np.int64]]
                ) -> tuple[list[str], list[list[str]]]:
    """Every table's aligned rows side by side, ids left out: ``(header, rows)``.

    ``rows[party][r]`` is that party's row of the ``r``-th aligned record. Column names must be unique across
    the parties (the id column excepted).
    """
    header: list[str] = []
    owner: dict[str, str] = {}
    for table in tables:
        for column in table.columns:
            if column in owner:
                raise DatasetError(explain("column", column, "a name held by one party only",
                                           f"rename it in {owner[column]}'s or {table.party}'s file"))
            owner[column] = table.party
            header.append(column)
    sizes = {len(rows[t.party]) for t in tables}
    if len(sizes) != 1:
        raise DatasetError(explain("aligned rows per party", sizes, "the same number for every party",
                                   "align every party's table in one run"))
    out = [[] for _ in range(sizes.pop())]  # type: list[list[str]]
    for table in tables:
        cells = table.cells
        for r, i in enumerate(rows[table.party].tolist()):
            out[r].extend(cells[i])
    return header, out


def write_table(path: str | os.PathLike[str], header: Sequence[str], rows: Sequence[Sequence[str]]) -> Path:
    """Write a CSV file (``,``-separated, quoted where needed); returns its path."""
    file = Path(path).expanduser()
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return file
