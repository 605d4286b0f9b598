"""Progress of long computations, for a person watching a terminal: phase lines and bars on stderr.

A :class:`Progress` is handed down explicitly, never read from a global: the CLI builds one per command
(:meth:`Progress.for_terminal`) and passes it on, in :class:`~mpdp.learning.spec.run.RunConfig` and
:class:`~mpdp.learning.registry.ReproOptions`, to the launcher and the audits, and as the ``progress=``
argument of long-running functions (training loops, secure products, the record alignment). Every such argument
defaults to :data:`SILENT`, whose methods do nothing.

What it prints, and only when its stream is an interactive terminal (``isatty``) and ``--quiet`` is not given:

* a **phase line** when a phase starts, stamped with the time since the command started::

      mpdp [0:03] fm-logistic: party0: encrypting 36,177 rows for party1 (paillier)

* a **bar** (tqdm) over a loop whose length is known: rounds, epochs, iterations, batches of ciphertexts,
  repetitions, audit samples. Bars are cleared when they end; the phase lines stay.

Everything goes to stderr, so a command's stdout holds only its result (one JSON object under ``--json``),
whether or not a terminal watches. Hooks are cheap: a silent ``Progress`` returns at once, and callers update
a bar once per batch, round or epoch, never per element of a hot loop. Bars may be updated from the threads
that simulate parties (tqdm serialises the writes); each bar has one updater.

>>> with SILENT.bar("rounds", total=3) as bar:
...     bar.update()
>>> list(SILENT.iterate(range(3), "work"))
[0, 1, 2]
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from types import TracebackType
from typing import Any, TextIO, TypeVar

__all__ = ["SILENT", "Bar", "Progress"]

T = TypeVar("T")


class Bar:
    """One bar: :meth:`update` advances it, :meth:`note` sets the text after it, :meth:`refresh` redraws it,
    :meth:`close` (or the end of the ``with`` block) clears it. A bar of a silent :class:`Progress` does
    nothing."""

    __slots__ = ("_bar",)

    def __init__(self, bar: Any = None) -> None:
        self._bar = bar

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def note(self, text: str) -> None:
        """Show ``text`` after the bar (e.g. the current epoch or the loss); redrawn with the next update."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def refresh(self) -> None:
        """Redraw now (the elapsed time of a bar that waits without advancing)."""
        if self._bar is not None:
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _sized(stream: Any) -> bool:
    """Whether the terminal reports its size (a fresh pseudo-terminal reports 0 x 0)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    return size.columns > 0 and size.lines > 0


def _interactive(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class Progress:
    """Where a long computation says what it is doing (module docstring); silent without a stream.

    Parameters
    ----------
    stream:
        The terminal to write to, or None for a silent reporter (see :data:`SILENT`).
    label:
        A prefix for every line and bar, e.g. ``"fm-logistic: "``; :meth:`scoped` adds to it.
    """

    __slots__ = ("_label", "_start", "_stream")

    def __init__(self, stream: TextIO | None = None, *, label: str = "", start: float | None = None) -> None:
        self._stream = stream
        self._label = label
        self._start = time.monotonic() if start is None else start

    @classmethod
    def for_terminal(cls, stream: TextIO | None = None, *, quiet: bool = False) -> Progress:
        """Writes to ``stream`` (default stderr) when it is an interactive terminal and not ``quiet``; else
        silent. What the CLI builds for every command."""
        out = sys.stderr if stream is None else stream
        return cls(out if not quiet and _interactive(out) else None)

    @property
    def enabled(self) -> bool:
        """Whether anything is printed (callers may skip preparing a message when not)."""
        return self._stream is not None

    def scoped(self, label: str) -> Progress:
        """The same reporter, with ``label: `` added to the prefix of its lines and bars (a party's name, an
        algorithm's)."""
        if self._stream is None:
            return self
        return Progress(self._stream, label=f"{self._label}{label}: ", start=self._start)

    def phase(self, text: str) -> None:
        """One line saying that a phase starts, stamped with the minutes and seconds since the command started."""
        if self._stream is None:
            return
        from tqdm import tqdm

        seconds = int(time.monotonic() - self._start)
        tqdm.write(f"mpdp [{seconds // 60}:{seconds % 60:02d}] {self._label}{text}", file=self._stream)

    def bar(self, desc: str, total: int | None = None, *, unit: str = "it") -> Bar:
        """A bar over ``total`` steps (None: a counter without an end), cleared when closed."""
        if self._stream is None:
            return _SILENT_BAR
        from tqdm import tqdm

        # a terminal that reports no size (a fresh pseudo-terminal) would get a bar 0 columns wide, hidden
        shape: dict[str, Any] = {"dynamic_ncols": True} if _sized(self._stream) else {"ncols": 100, "nrows": 24}
        return Bar(tqdm(total=total, desc=f"{self._label}{desc}", unit=unit, file=self._stream, leave=False,
                        mininterval=0.25, **shape))

    def iterate(self, iterable: Iterable[T], desc: str, *, total: int | None = None, unit: str = "it") -> Iterator[T]:
        """``iterable`` with a bar advanced after each item; unchanged (no wrapper at all) when silent."""
        if self._stream is None:
            return iter(iterable)
        if total is None:
            total = len(iterable) if isinstance(iterable, Sized) else None
        return self._iterate(iterable, desc, total, unit)

    def _iterate(self, iterable: Iterable[T], desc: str, total: int | None, unit: str) -> Iterator[T]:
        with self.bar(desc, total, unit=unit) as bar:
            for item in iterable:
                yield item
                bar.update()

    def __repr__(self) -> str:
        return f"Progress({'silent' if self._stream is None else 'to a terminal'}, label={self._label!r})"


_SILENT_BAR = Bar()

#: The reporter that prints nothing: the default of every ``progress=`` argument.
SILENT = Progress(None)
