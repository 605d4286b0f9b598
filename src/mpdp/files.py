"""Crash-safe file writes shared by the privacy ledger and the dataset cache.

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

__all__ = ["write_atomic"]


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
