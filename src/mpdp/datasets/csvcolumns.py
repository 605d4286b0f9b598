"""How the CSV loader decides what a column is, and the errors it raises instead of guessing.

Three rules, each either acting and saying so or refusing with the file's line numbers:

* **numeric or categorical.** A column whose every cell is a finite number is numeric. A column where numbers
  are the majority but some cells are not (``12.5, 13.0, abc, 11.2``) is refused: it is most likely a numeric
  column with typos, and reading it as categorical would make every distinct number a category. The error
  lists the first offending lines and values; the fix is to correct or blank those cells (a blank cell is a
  missing value), or to declare the column categorical. A column declared numeric refuses any cell that is not
  a number the same way. Any other column is categorical.
* **identifiers.** An undeclared feature column is an identifier when it has at least
  :data:`MIN_ROWS_FOR_IDENTIFIER` values, all distinct (missing cells aside), and they are text (``user-0001``) or
  whole numbers that either sit under an identifier-like name (``id``, ``customer_id``, ``uuid``, ``key``,
  ``index``) or count the rows (each one more than the row above). A distinct value per row carries no pattern a
  model could learn, only which record it is. Identifiers are kept out of the features (with a
  :class:`~mpdp.errors.DatasetWarning`); decimal numbers are never taken for identifiers (a measurement such as
  income is often unique per row). Declaring the column's type (numeric or categorical) or listing it among the
  feature columns keeps it as a feature; naming it as the identifier column (``id_column=``, ``--id-column``)
  excludes it without a warning.
* **missing values** are handled in :mod:`mpdp.datasets.csvfile` (rows dropped and counted, or refused).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import pairwise

from mpdp.errors import DatasetError, DomainError, explain

__all__ = ["MIN_ROWS_FOR_IDENTIFIER", "find_identifiers", "number", "numeric_column", "parse_numeric",
           "require_unique", "whole_numbers"]

#: Fewer complete rows than this and no column is taken for an identifier: uniqueness says little in a tiny table.
MIN_ROWS_FOR_IDENTIFIER = 10
_ID_NAME = re.compile(r"(?:.*[_\s.-])?(?:id|uuid|guid|key|index|identifier)", re.IGNORECASE)
_CAMEL_ID = re.compile(r".*[a-z](?:ID|Id)")
_WHOLE = re.compile(r"[+-]?\d+")
_SHOWN = 3  # offending cells quoted in an error message


def number(text: str) -> float | None:
    """``text`` as a finite float, else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _quote(lines: Sequence[int], cells: Sequence[str]) -> str:
    shown = "; ".join(f"line {line} {cell[:20]!r}" for line, cell in zip(lines[:_SHOWN], cells[:_SHOWN], strict=True))
    return shown + (f"; and {len(cells) - _SHOWN} more" if len(cells) > _SHOWN else "")


def parse_numeric(column: str, cells: Sequence[str], lines: Sequence[int], *, declared: bool,
                  source: str) -> list[float]:
    """The cells of a numeric column as floats; any other cell refused with its line (see the module docstring)."""
    values = [number(c) for c in cells]
    bad = [k for k, v in enumerate(values) if v is None]
    if bad:
        why = "declared numeric" if declared else "mostly numbers"
        raise DomainError(explain(
            f"column {column!r} of {source} ({why}), " + _quote([lines[k] for k in bad], [cells[k] for k in bad]),
            f"{len(bad)} of {len(cells)} cells not numbers",
            "a finite number in every cell",
            f"correct those cells, or blank them to treat them as missing values; if the column holds categories, "
            f"declare it categorical (--categorical {column}, categorical=[{column!r}])"))
    return [v for v in values if v is not None]


def whole_numbers(cells: Sequence[str]) -> bool:
    """Whether every cell of a numeric column is written as a whole number (``42``, not ``42.0``): the column is
    then an integer attribute, which synthetic twins write as whole numbers."""
    return bool(cells) and all(_WHOLE.fullmatch(c.strip()) for c in cells)


def numeric_column(cells: Sequence[str]) -> bool:
    """Whether an undeclared column is numeric (numbers are the majority; :func:`parse_numeric` refuses the rest)."""
    numbers = sum(number(c) is not None for c in cells)
    return 2 * numbers >= len(cells) > 0


def _looks_like_identifier(column: str, cells: Sequence[str]) -> bool:
    if len(cells) < MIN_ROWS_FOR_IDENTIFIER or len(set(cells)) != len(cells):
        return False
    if not numeric_column(cells):
        return True
    if not all(_WHOLE.fullmatch(c) for c in cells):
        return False
    if _ID_NAME.fullmatch(column) or _CAMEL_ID.fullmatch(column):
        return True
    whole = [int(c) for c in cells]
    return all(b - a == 1 for a, b in pairwise(whole))  # a row counter


def find_identifiers(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> list[str]:
    """The undeclared feature ``columns`` (``cells[j]``: their present cells' text) that are identifiers."""
    return [c for c, values in zip(columns, cells, strict=True) if _looks_like_identifier(c, values)]


def require_unique(column: str, cells: Sequence[str], lines: Sequence[int], *, source: str) -> None:
    """Refuse an identifier column with a repeated value, naming the value and its lines."""
    first: dict[str, int] = {}
    for cell, line in zip(cells, lines, strict=True):
        if cell in first:
            raise DatasetError(explain(
                f"identifier column {column!r} of {source}", f"{cell[:40]!r} on lines {first[cell]} and {line}",
                "a different value on every row", "correct the repeated identifier, or name another --id-column"))
        first[cell] = line
