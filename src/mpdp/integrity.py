"""An organisation's integrity key: the secret that makes its privacy ledgers and released models tamper-evident.

A SHA-256 stored in a file detects damage but not an edit, since whoever edits the file can recompute it. mpdp
files that must resist an edit (a :class:`~mpdp.dp.accounting.ledger.PrivacyLedger`, a released model) carry an
HMAC-SHA256 under a secret that is *not* in the file: a key file of 32 random bytes, created on first use with
mode 0600 and never written into what it protects. Whoever can write the ledger but not read the key cannot
produce a file that verifies.

Where the key lives (:func:`key_path`): the path the caller gives; else the file named by the environment
variable ``MPDP_INTEGRITY_KEY``; else ``mpdp-integrity.key`` in the folder beside the protected file (for a
ledger, the ledger's folder; for a model directory, its parent folder, so that sharing the model directory
does not share the key). One key serves every file of one organisation; keep it out of backups that are
restored together with the files it protects, and out of anything sent to other organisations.

Security: the MAC stops forgery by anyone without the key; it does not stop a replay of an older file that
was genuinely written under the key (a rollback). What a ledger does about that is in
:mod:`mpdp.dp.accounting.ledger` (an anchor file and its limits). The key file is refused if its permissions
let the group or others read it (``chmod 600`` fixes it).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from mpdp.errors import ParameterError, explain

__all__ = ["KEY_ENV", "KEY_NAME", "IntegrityKey", "key_path"]

KEY_ENV = "MPDP_INTEGRITY_KEY"
KEY_NAME = "mpdp-integrity.key"
_HEADER = b"mpdp-integrity-key v1\n"


def key_path(beside: str | Path, explicit: str | Path | None = None) -> Path:
    """The key file to use for a file in folder ``beside``: ``explicit``, else ``$MPDP_INTEGRITY_KEY``, else
    ``beside/mpdp-integrity.key``."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    return Path(beside) / KEY_NAME


@dataclass(frozen=True)
class IntegrityKey:
    """A loaded integrity key (its secret is never printed)."""

    path: Path
    secret: bytes = field(repr=False)

    @property
    def key_id(self) -> str:
        """A public name of the key (16 hex digits): which key a file was sealed with, revealing nothing of it."""
        return hmac.new(self.secret, b"mpdp.integrity-key-id", hashlib.sha256).hexdigest()[:16]

    def mac(self, domain: str, data: bytes) -> str:
        """HMAC-SHA256 of ``data`` under the key, bound to ``domain`` (the kind of file), as hex."""
        return hmac.new(self.secret, domain.encode("utf-8") + b"\n" + data, hashlib.sha256).hexdigest()

    def verify(self, domain: str, data: bytes, tag: object) -> bool:
        """Whether ``tag`` is :meth:`mac` of ``data`` (constant-time comparison)."""
        return isinstance(tag, str) and hmac.compare_digest(self.mac(domain, data), tag)

    @classmethod
    def load(cls, path: str | Path) -> IntegrityKey:
        """The key stored at ``path``; ParameterError if it is missing, malformed or readable by others."""
        file = Path(path)
        try:
            info = file.stat()
            raw = file.read_bytes()
        except FileNotFoundError as exc:
            raise ParameterError(explain("integrity key", str(file), "the organisation's key file",
                                         f"restore it, or point {KEY_ENV} at it")) from exc
        except OSError as exc:
            raise ParameterError(explain("integrity key", f"{file} ({exc})", "a readable key file",
                                         "check its path and permissions")) from exc
        if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ParameterError(explain("integrity key", f"{file} with mode {stat.S_IMODE(info.st_mode):o}",
                                         "a file only its owner can read (mode 600)", f"chmod 600 {file}"))
        try:
            secret = bytes.fromhex(raw.removeprefix(_HEADER).decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            secret = b""
        if not raw.startswith(_HEADER) or len(secret) != 32:
            raise ParameterError(explain("integrity key", str(file), "a key file written by mpdp",
                                         "restore the organisation's key file"))
        return cls(file, secret)

    @classmethod
    def load_or_create(cls, path: str | Path) -> IntegrityKey:
        """The key at ``path``, created (32 random bytes, mode 0600) if there is none yet.

        Creation is atomic: the key is written to a private temporary file and linked into place, so two
        processes creating it at once end up with the same key and a reader never sees a partial file.
        """
        file = Path(path)
        if file.exists():
            return cls.load(file)
        tmp = file.with_name(f".{file.name}.{secrets.token_hex(8)}.tmp")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(_HEADER + secrets.token_bytes(32).hex().encode("ascii") + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
                os.link(tmp, file)
        except OSError as exc:
            raise ParameterError(explain("integrity key", str(file), "a key file mpdp can create",
                                         f"check the folder's permissions, or point {KEY_ENV} elsewhere ({exc})")) \
                from exc
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return cls.load(file)
