"""Crash-safe file writes shared by the privacy ledger and the dataset cache, and the one way text data files
are read (:func:`read_text_file`: a byte that is not UTF-8 is a typed error naming the file, line and fix).

A reader of ``path`` sees either the old contents or the new, never a torn write: the bytes go to a
temporary file in the same directory (so the rename cannot cross file systems), are flushed and
``fsync``'ed, and the temporary file is renamed over ``path`` with :func:`os.replace`, which POSIX
makes atomic. The directory is then ``fsync``'ed so the rename itself survives a power loss.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from mpdp.errors import DatasetError, explain

__all__ = ["read_text_file", "write_atomic"]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (file mode 0o600, like :func:`tempfile.mkstemp`).

    Creates missing parent directories. On any failure the temporary file is removed and the old
    contents of ``path``, if any, are untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_directory(path.parent)


def read_text_file(path: Path, what: str, *, encoding: str = "utf-8-sig") -> str:
    """The text of ``path`` (a CSV or other data file), decoded strictly as UTF-8 (a leading byte-order mark
    dropped). A byte that does not decode is a :class:`~mpdp.errors.DatasetError` naming the file, the line and
    column of the byte, and how to convert the file, never a raw ``UnicodeDecodeError``; an unreadable file is
    a :class:`~mpdp.errors.DatasetError` too."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(explain(what, str(path), "a readable file", f"check the path and permissions ({exc})"))\
            from exc
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(explain(
            f"{what} {path}, line {line}, column {column}", f"the byte 0x{data[exc.start]:02x}, not UTF-8",
            "a UTF-8 text file", "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 in.csv > out.csv`, or "
            "'Save as CSV UTF-8' in a spreadsheet)")) from exc


def _fsync_directory(directory: Path) -> None:
    """Persist a rename in ``directory`` (a no-op where directories cannot be opened, e.g. Windows)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
