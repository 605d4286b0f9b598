"""Progress bars for long loops, switched by the caller (``RunConfig.progress``, ``ReproOptions.progress``).

``mpdp run``/``mpdp reproduce`` turn bars on for an interactive run and off under ``--quiet`` and ``--json``;
library code never decides on its own. Bars go to stderr (tqdm), so stdout stays machine-readable::

    for t in progress_bar(range(T), desc="DP-SGD", enabled=config.progress):
        ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

__all__ = ["progress_bar"]

T = TypeVar("T")


def progress_bar(
    iterable: Iterable[T], *, desc: str = "", total: int | None = None, enabled: bool = False, leave: bool = False
) -> Iterator[T]:
    """``iterable`` wrapped in a tqdm bar on stderr when ``enabled``, else returned unchanged."""
    if not enabled:
        return iter(iterable)
    bar: Iterator[T] = tqdm(iterable, desc=desc, total=total, leave=leave, dynamic_ncols=True)
    return bar
