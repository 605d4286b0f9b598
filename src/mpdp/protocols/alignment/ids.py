"""Identifiers as the alignment compares them: one documented normalisation rule, refused when unusable.

Rule (:func:`normalise_id`): the identifier's text is put in Unicode normal form NFKC, surrounding whitespace
is stripped and, unless ``case_sensitive``, it is case-folded (``str.casefold``, a stronger ``lower``). So
``" Alice@Example.COM "`` and ``"alice@example.com"`` are the same identifier; ``"007"`` and ``"7"`` are not
(identifiers are text: normalise numbers before, e.g. ``str(int(x))``). Every party must use the same rule:
the protocol's specification carries it.

An identifier that is empty after normalisation, or that occurs in two rows of one party, is refused before
anything is sent (:func:`check_ids`): duplicates would make "row i is the same person everywhere" ambiguous.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpdp.errors import DatasetError, DuplicateIdError, ParameterError, explain

__all__ = ["check_ids", "normalise_id"]


def normalise_id(raw: str, *, case_sensitive: bool = False) -> str:
    """``raw`` under the alignment's rule: NFKC, whitespace stripped, case-folded unless ``case_sensitive``."""
    text = unicodedata.normalize("NFKC", raw).strip()
    return text if case_sensitive else text.casefold()


def check_ids(ids: Sequence[str], *, case_sensitive: bool = False, where: str = "id column") -> list[bytes]:
    """The normalised identifiers as UTF-8 bytes, in row order.

    Raises
    ------
    ParameterError
        An identifier that is not a str.
    DatasetError
        No identifiers, or identifiers empty after normalisation (their count and first rows).
    DuplicateIdError
        An identifier in more than one row (how many repeat, how many rows they take, the first rows).
    """
    given: Any = ids
    if isinstance(given, str | bytes) or not isinstance(given, Sequence | np.ndarray) or (
            isinstance(given, np.ndarray) and given.ndim != 1):
        raise ParameterError(explain(where, type(ids).__name__, "a sequence of str identifiers",
                                     "pass the id column as a list of str"))
    if len(ids) == 0:
        raise DatasetError(explain(where, "no rows", "at least one identifier", "give the party's id column"))
    bad_type = next((i for i, v in enumerate(ids) if not isinstance(v, str)), None)
    if bad_type is not None:
        raise ParameterError(explain(f"{where} row {bad_type}", type(ids[bad_type]).__name__, "str identifiers",
                                     "pass identifiers as text, e.g. [str(x) for x in column]"))
    normal = [normalise_id(v, case_sensitive=case_sensitive) for v in ids]
    empty = [i for i, v in enumerate(normal) if not v]
    if empty:
        raise DatasetError(explain(where, f"{len(empty)} empty identifier(s), first at rows {empty[:3]}",
                                   "a non-empty identifier in every row", "fill or drop those rows"))
    counts = Counter(normal)
    if len(counts) != len(normal):
        repeated = {v for v, c in counts.items() if c > 1}
        rows = [i for i, v in enumerate(normal) if v in repeated]
        raise DuplicateIdError(explain(
            where, f"{len(repeated)} identifier(s) repeated, in {len(rows)} rows (first rows {rows[:4]})",
            "every identifier once (after stripping and case-folding)",
            "merge or drop the duplicate rows; alignment needs one row per person"))
    return [v.encode("utf-8") for v in normal]
