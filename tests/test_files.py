"""Tests for :mod:`mpdp.files`: atomic, durable replacement that never leaves torn or stray files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mpdp.files import write_atomic


def test_creates_parents_and_writes_private_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "ledger.json"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["ledger.json"]


def test_failed_rename_keeps_old_contents_and_removes_temporary(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "ledger.json"
    write_atomic(target, b"old")

    def crash(src: object, dst: object) -> None:
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]
