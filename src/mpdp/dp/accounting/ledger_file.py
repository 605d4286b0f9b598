"""The privacy ledger's file: a keyed MAC against edits, an anchor against rollbacks, atomic writes.

A ledger at ``PATH`` is three files (plus ``PATH.lock``, the lock of :mod:`mpdp.dp.accounting.ledger`):

* ``PATH``: the canonical JSON body (format, version, subject, budget, method, ``generation``, entries, the
  ``key_id`` of the key that sealed it) and ``mac``, an HMAC-SHA256 of the body under the organisation's
  :class:`~mpdp.integrity.IntegrityKey` (:func:`mpdp.integrity.key_path`: by default
  ``mpdp-integrity.key`` beside the ledger, mode 0600). ``generation`` grows by one with every write.
* ``PATH.anchor``: the generation and body digest of the latest write, sealed under the same key. It is written
  after the ledger, so a crash between the two leaves the ledger one generation ahead, which is accepted (and
  the next write re-anchors). A ledger *behind* its anchor, or of the anchor's generation with another body, is
  an older copy put back: refused.
* the key file, never inside either of them.

What this detects: an edit (with or without a recomputed checksum) by anyone who cannot read the key; a ledger
file restored from an older copy while its anchor stays; a deleted anchor or key. What it cannot detect: the
ledger *and* its anchor restored together from the same old backup (they agree with each other), or an edit by
someone holding the key. Rollback protection against that needs state outside everything that can be restored
together: a monotonic counter the machine keeps (a TPM's NV counter), an append-only log held by another party
(e.g. each spend's digest sent to an auditor), or write-once media. Keep the anchor and key out of the backups
restored with the ledger, or anchor the generation externally, where that attack matters.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mpdp.errors import LedgerCorruptError, ParameterError
from mpdp.files import write_atomic
from mpdp.integrity import IntegrityKey

__all__ = ["FORMAT", "VERSION", "anchor_path", "anchored_generation", "canonical", "read_adoptable", "read_body",
           "sealed_bytes", "write_anchor", "write_body"]

FORMAT = "mpdp.privacy-ledger"
VERSION = 2
_ANCHOR_FORMAT = "mpdp.privacy-ledger-anchor"
_DOMAIN, _ANCHOR_DOMAIN = "mpdp.privacy-ledger/v2", "mpdp.privacy-ledger-anchor/v1"


def canonical(body: dict[str, Any]) -> bytes:
    """The body's canonical JSON bytes (sorted keys, no spaces, no NaN): what the MAC covers."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def anchor_path(path: Path) -> Path:
    return path.with_name(path.name + ".anchor")


def _parse(raw: bytes, what: str) -> dict[str, Any]:
    try:
        payload = json.loads(raw.decode("utf-8"))
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
        canonical(payload)  # refuses numbers out of range (1e999), which the writer never writes
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise LedgerCorruptError(f"{what} does not parse ({exc}); it was left untouched") from exc
    return payload


def _key(path: Path, key: IntegrityKey | Path) -> IntegrityKey:
    if isinstance(key, IntegrityKey):
        return key
    try:
        return IntegrityKey.load(key)
    except ParameterError as exc:
        raise LedgerCorruptError(f"ledger {path} cannot be verified: {exc}. The ledger was left untouched") from exc


def read_body(path: Path, key: IntegrityKey | Path, *, anchored: bool = True) -> dict[str, Any]:
    """The verified body of the ledger at ``path`` (without its MAC); LedgerCorruptError for anything else.

    ``anchored=False`` skips the anchor (for adopting a file deliberately as the current ledger).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise LedgerCorruptError(
            f"ledger {path} is missing; it is never recreated silently. Fix: restore it from backup, or "
            "create a new ledger deliberately with PrivacyLedger.create") from exc
    payload = _parse(raw, f"ledger {path}")
    tag = payload.pop("mac", None)
    if payload.get("format") != FORMAT:
        raise LedgerCorruptError(f"ledger {path} is not an mpdp privacy ledger; it was left untouched")
    if payload.get("version") != VERSION:
        raise LedgerCorruptError(
            f"ledger {path} has format version {payload.get('version')!r}, not {VERSION} (version 1 carried an "
            "unkeyed checksum, which cannot show it was not edited). Fix: if you trust its contents, seal it "
            "deliberately with PrivacyLedger.adopt(path); the file was left untouched")
    sealer = _key(path, key)
    if not sealer.verify(_DOMAIN, canonical(payload), tag):
        raise LedgerCorruptError(
            f"ledger {path} fails its MAC under the key {sealer.path} (id {sealer.key_id}): edited, damaged, or "
            f"sealed with another organisation's key (the file names key {str(payload.get('key_id'))[:16]!r}); it "
            "was left untouched")
    if anchored:
        _check_anchor(path, sealer, payload)
    return payload


def _check_anchor(path: Path, key: IntegrityKey, body: dict[str, Any]) -> None:
    anchor = anchor_path(path)
    try:
        raw = anchor.read_bytes()
    except FileNotFoundError as exc:
        raise LedgerCorruptError(
            f"ledger {path} has no anchor {anchor.name}: it was deleted, so a rolled-back ledger could not be "
            "told from the latest. Fix: restore the anchor, or, if this file is known to be the latest, adopt it "
            "deliberately with PrivacyLedger.adopt(path)") from exc
    record = _parse(raw, f"ledger anchor {anchor}")
    tag = record.pop("mac", None)
    if record.get("format") != _ANCHOR_FORMAT or not key.verify(_ANCHOR_DOMAIN, canonical(record), tag):
        raise LedgerCorruptError(f"ledger anchor {anchor} fails its MAC under {key.path}: edited or sealed with "
                                 "another key; the ledger was left untouched")
    generation, anchored = body.get("generation"), record.get("generation")
    if not isinstance(generation, int) or not isinstance(anchored, int) or isinstance(generation, bool):
        raise LedgerCorruptError(f"ledger {path}: no valid generation; it was left untouched")
    digest = hashlib.sha256(canonical(body)).hexdigest()
    if generation < anchored or (generation == anchored and record.get("digest") != digest) \
            or record.get("ledger") != path.name:
        raise LedgerCorruptError(
            f"ledger {path} is generation {generation} but its anchor records generation {anchored} "
            f"({'another body' if generation == anchored else 'a later one'}): an older copy was restored over "
            "the latest ledger, which would forget spent budget. Fix: restore the latest ledger; the file was "
            "left untouched")


def sealed_bytes(body: dict[str, Any], key: IntegrityKey) -> bytes:
    """The file's bytes for ``body``: the body with ``key_id`` and its ``mac`` under ``key``."""
    sealed = dict(body, key_id=key.key_id)
    payload = dict(sealed, mac=key.mac(_DOMAIN, canonical(sealed)))
    return json.dumps(payload, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")


def write_body(path: Path, key: IntegrityKey, body: dict[str, Any], *, anchor: bool = True) -> None:
    """Seal ``body`` and write it atomically, then its anchor; each write is durable before the next."""
    write_atomic(path, sealed_bytes(body, key))
    if anchor:
        write_anchor(path, key, dict(body, key_id=key.key_id))


def write_anchor(path: Path, key: IntegrityKey, sealed: dict[str, Any]) -> None:
    """Record ``sealed``'s generation and digest in the ledger's anchor file."""
    record = {"format": _ANCHOR_FORMAT, "ledger": path.name, "generation": sealed["generation"],
              "digest": hashlib.sha256(canonical(sealed)).hexdigest()}
    payload = dict(record, mac=key.mac(_ANCHOR_DOMAIN, canonical(record)))
    write_atomic(anchor_path(path), json.dumps(payload, sort_keys=True, indent=1).encode("utf-8"))


def anchored_generation(path: Path, key: IntegrityKey) -> int | None:
    """The generation the anchor of ``path`` records (None without an anchor; LedgerCorruptError if it does not
    verify)."""
    anchor = anchor_path(path)
    if not anchor.exists():
        return None
    record = _parse(anchor.read_bytes(), f"ledger anchor {anchor}")
    tag = record.pop("mac", None)
    generation = record.get("generation")
    if record.get("format") != _ANCHOR_FORMAT or not key.verify(_ANCHOR_DOMAIN, canonical(record), tag) \
            or isinstance(generation, bool) or not isinstance(generation, int):
        raise LedgerCorruptError(f"ledger anchor {anchor} fails its MAC under {key.path}: edited or sealed with "
                                 "another key")
    return generation


def read_adoptable(path: Path, key: IntegrityKey) -> dict[str, Any]:
    """The body of ``path`` for :meth:`~mpdp.dp.accounting.ledger.PrivacyLedger.adopt`: verified under ``key``
    without its anchor, or a format-1 file checked against its (unkeyed) sha256 and brought to this format."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LedgerCorruptError(f"ledger {path} cannot be read ({exc})") from exc
    payload = _parse(raw, f"ledger {path}")
    if payload.get("format") != FORMAT or payload.get("version") != 1:
        return read_body(path, key, anchored=False)
    checksum = payload.pop("sha256", None)
    if hashlib.sha256(canonical(payload)).hexdigest() != checksum:
        raise LedgerCorruptError(f"ledger {path} fails its checksum (edited or damaged); it was left untouched")
    return {**payload, "version": VERSION, "generation": 0}
