"""The progress reporter: silent unless its stream is a terminal, never on stdout, cheap when silent."""

from __future__ import annotations

import io
import os
import pty

import pytest

from mpdp.progress import SILENT, Progress


def test_silent_reporter_prints_nothing_and_passes_iterables_through(capsys: pytest.CaptureFixture[str]) -> None:
    items = [3, 1, 2]
    assert SILENT.iterate(items, "work").__class__ is iter(items).__class__  # no wrapper at all
    assert list(SILENT.iterate(range(3), "work")) == [0, 1, 2]
    SILENT.phase("a phase")
    with SILENT.bar("bar", total=2) as bar:
        bar.update(2)
        bar.note("note")
    assert SILENT.scoped("party0") is SILENT and not SILENT.enabled
    assert capsys.readouterr() == ("", "")


def test_for_terminal_is_silent_off_a_terminal_and_under_quiet() -> None:
    assert not Progress.for_terminal(io.StringIO()).enabled  # a file or a pipe: no bars, no phase lines
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as terminal:
            assert Progress.for_terminal(terminal).enabled
            assert not Progress.for_terminal(terminal, quiet=True).enabled
    finally:
        os.close(master)
        os.close(slave)


def test_phase_lines_and_bars_go_to_the_stream_with_labels() -> None:
    stream = io.StringIO()
    progress = Progress(stream).scoped("fm-logistic").scoped("party0")
    progress.phase("encrypting")
    assert list(progress.iterate(range(4), "rows", unit="row")) == [0, 1, 2, 3]
    text = stream.getvalue()
    assert "] fm-logistic: party0: encrypting\n" in text and text.startswith("mpdp [0:0")
    assert "fm-logistic: party0: rows:   0%" in text and "0/4" in text  # redrawn at most every 0.25 s


def test_a_bar_closes_when_the_loop_stops_early() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    for i in progress.iterate(range(10), "rounds"):
        if i == 2:
            break
    progress.phase("after")
    text = stream.getvalue()
    assert "rounds:   0%" in text
    cleared = text.index("\rmpdp [")  # the bar was erased (a line of blanks) before the phase line
    assert text[:cleared].endswith(" " * 20) and text.rstrip().endswith("after")
