from __future__ import annotations

import pytest

from mpdp.progress import progress_bar


def test_disabled_bar_is_silent_and_transparent(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(progress_bar(range(3), desc="work")) == [0, 1, 2]
    assert capsys.readouterr() == ("", "")


def test_enabled_bar_writes_to_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(progress_bar(range(3), desc="work", enabled=True)) == [0, 1, 2]
    captured = capsys.readouterr()
    assert captured.out == "" and "work" in captured.err
