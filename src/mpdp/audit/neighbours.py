"""Neighbouring datasets, checked: an audit on datasets that are not neighbours proves nothing.

Datasets are 2-D arrays of records (one row each). ``add_remove``: one dataset is the other with one row
removed; ``replace``: same number of rows, exactly one row differs. A query-level audit (a mechanism applied
to a query answer) checks that the answers differ by at most the query's sensitivity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, explain

__all__ = ["check_add_remove", "check_neighbours", "check_query_distance", "check_replace"]

_FIX = "pass datasets that differ in exactly one record under this mechanism's neighbouring relation"


def _rows(data: Any, name: str) -> npt.NDArray[np.float64]:
    values = np.asarray(data, dtype=np.float64)
    if values.ndim == 1:
        values = values.reshape(-1, 1)
    if values.ndim != 2:
        raise DomainError(explain(name, values.shape, "a 2-D array of records (one per row)", _FIX))
    return values


def check_add_remove(d0: Any, d1: Any) -> None:
    """Raise :class:`DomainError` unless one dataset is the other with exactly one row removed."""
    a, b = _rows(d0, "d0"), _rows(d1, "d1")
    big, small = (a, b) if a.shape[0] >= b.shape[0] else (b, a)
    if big.shape[0] != small.shape[0] + 1 or big.shape[1] != small.shape[1]:
        raise DomainError(explain("d0, d1 row counts", (a.shape, b.shape),
                                  "add/remove neighbours: row counts differing by exactly one, same columns", _FIX))
    for i in range(big.shape[0]):
        if np.array_equal(np.delete(big, i, axis=0), small):
            return
    raise DomainError(explain("d0, d1", "datasets differing in more than one record",
                              "the larger dataset equal to the smaller plus one row", _FIX))


def check_replace(d0: Any, d1: Any) -> None:
    """Raise :class:`DomainError` unless the datasets have the same shape and differ in exactly one row."""
    a, b = _rows(d0, "d0"), _rows(d1, "d1")
    if a.shape != b.shape:
        raise DomainError(explain("d0, d1 shapes", (a.shape, b.shape), "replace-one neighbours: equal shapes", _FIX))
    differing = int(np.count_nonzero(np.any(a != b, axis=1)))
    if differing != 1:
        raise DomainError(explain("rows differing between d0 and d1", differing, "exactly 1", _FIX))


def check_neighbours(d0: Any, d1: Any, relation: str) -> None:
    """Dispatch on ``relation`` (``"add_remove"`` or ``"replace"``)."""
    if relation == "add_remove":
        check_add_remove(d0, d1)
    elif relation == "replace":
        check_replace(d0, d1)
    else:
        raise DomainError(explain("relation", relation, "'add_remove' or 'replace'", "pick the mechanism's relation"))


def check_query_distance(v0: Any, v1: Any, sensitivity: float, *, norm: str = "l1") -> None:
    """Raise :class:`DomainError` unless the two query answers differ by at most ``sensitivity``."""
    diff = np.asarray(v0, dtype=np.float64) - np.asarray(v1, dtype=np.float64)
    size = float(np.abs(diff).sum()) if norm == "l1" else float(np.sqrt((diff**2).sum()))
    if size > sensitivity * (1 + 1e-12):
        raise DomainError(explain(f"{norm} distance between the query answers", size,
                                  f"at most the sensitivity {sensitivity:g}", _FIX))
