"""A privacy ledger per dataset or party: records every release, refuses overspending, survives crashes.

Usage::

    ledger = PrivacyLedger.open_or_create("adult.ledger.json", epsilon=1.0, delta=1e-5, method="rdp",
                                          subject="dataset:adult")
    noisy = GaussianMechanism.calibrated(epsilon=0.5, delta=1e-6, sensitivity=1.0).release(x, ledger=ledger)

Guarantees
----------
* **Refuses overspending.** :meth:`PrivacyLedger.spend` composes the recorded releases with the new one
  (method "basic", "zcdp", "rdp" or "pld", see :mod:`mpdp.dp.accounting.composition`) and raises
  :class:`~mpdp.errors.BudgetExceededError`, recording nothing, if the result would exceed the budget.
* **Record before release.** Mechanisms call :meth:`spend` *before* drawing noise, and :meth:`spend` returns
  only once the new entry is durable: the file is written to a temporary file in the same directory, flushed
  and fsync'ed, atomically renamed over the ledger (``os.replace``) and the directory fsync'ed. A crash before
  the rename leaves the previous ledger intact and no release has happened; a crash after it over-reports
  (the release may never happen), never under-reports.
* **Several processes.** Each spend holds an exclusive ``flock`` on ``<ledger>.lock`` and re-reads the file
  under it, so concurrent spenders on one file serialise instead of losing updates.
* **Corruption is loud.** The file carries a SHA-256 of its canonical JSON body; any parse, schema or
  checksum failure raises :class:`~mpdp.errors.LedgerCorruptError`. A ledger is never silently reset.

Consecutive spends with the same label and the same per-release cost are merged into one entry with a
``count`` (an iterative algorithm's T steps stay one line). A relative slack of 1e-12 on the budget absorbs
floating-point rounding when a budget is split into equal parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.dp.accounting.composition import METHODS, Spent, compose
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.calibration import check_delta, check_epsilon
from mpdp.errors import BudgetExceededError, LedgerCorruptError, ParameterError, explain
from mpdp.files import write_atomic

__all__ = ["LedgerEntry", "PrivacyLedger"]

_FORMAT = "mpdp.privacy-ledger"
_VERSION = 1
_SLACK = 1e-12


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release (or ``cost.count`` identical consecutive ones)."""

    seq: int
    label: str
    cost: PrivacyCost
    recorded_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "label": self.label, "cost": self.cost.to_dict(), "recorded_at": self.recorded_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        return cls(seq=int(data["seq"]), label=str(data["label"]), cost=PrivacyCost.from_dict(data["cost"]),
                   recorded_at=float(data["recorded_at"]))


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


class PrivacyLedger:
    """The privacy spent on one dataset (or towards one party), against a fixed budget.

    Parameters
    ----------
    epsilon, delta : float
        The budget. ``delta`` may be 0 only with ``method="basic"``.
    method : {"basic", "zcdp", "rdp", "pld"}
        How recorded releases compose; the spent ε is evaluated at the budget's δ (basic: Σε and Σδ).
    subject : str
        What the budget protects, e.g. ``"dataset:adult"`` or ``"party:bank"``.
    path : str or Path, optional
        Where to persist. ``None`` keeps the ledger in memory (simulations). Use :meth:`create`,
        :meth:`open` or :meth:`open_or_create` for files.
    """

    def __init__(self, *, epsilon: float, delta: float = 0.0, method: str = "basic", subject: str = "dataset",
                 path: str | Path | None = None, _entries: tuple[LedgerEntry, ...] = ()) -> None:
        self._epsilon = check_epsilon(epsilon)
        self._delta = check_delta(delta)
        if method not in METHODS:
            raise ParameterError(explain("method", method, f"one of {METHODS}", "pass method='basic' or 'rdp'"))
        if method != "basic" and self._delta == 0:
            raise ParameterError(explain("delta", delta, f"a budget delta > 0 for method={method!r}",
                                         "pass e.g. delta=1e-5, or use method='basic' for pure DP"))
        if not isinstance(subject, str) or not subject:
            raise ParameterError(explain("subject", subject, "a non-empty str", "pass e.g. subject='party:alice'"))
        self._method = method
        self._subject = subject
        self._path = None if path is None else Path(path)
        self._entries = tuple(_entries)

    # -- construction from files ----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, *, epsilon: float, delta: float = 0.0, method: str = "basic",
               subject: str = "dataset") -> PrivacyLedger:
        """A new, empty ledger persisted at ``path``; refuses to overwrite an existing file."""
        ledger = cls(epsilon=epsilon, delta=delta, method=method, subject=subject, path=path)
        target = Path(path)
        with ledger._locked():
            if target.exists():
                raise ParameterError(explain("path", str(path), "a path with no ledger yet",
                                             "use PrivacyLedger.open(path) to continue an existing ledger"))
            ledger._write(ledger._entries)
        return ledger

    @classmethod
    def open(cls, path: str | Path) -> PrivacyLedger:
        """The ledger persisted at ``path``; LedgerCorruptError if it does not verify."""
        body = _read(Path(path))
        try:
            budget = body["budget"]
            return cls(epsilon=budget["epsilon"], delta=budget["delta"], method=body["method"],
                       subject=body["subject"], path=path, _entries=_entries_of(body, Path(path)))
        except (ParameterError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerCorruptError(f"ledger {path}: invalid header ({exc}); the file was left untouched") from exc

    @classmethod
    def open_or_create(cls, path: str | Path, *, epsilon: float, delta: float = 0.0, method: str = "basic",
                       subject: str = "dataset") -> PrivacyLedger:
        """Open ``path`` if it exists (its budget must match), else create it."""
        if not Path(path).exists():
            return cls.create(path, epsilon=epsilon, delta=delta, method=method, subject=subject)
        ledger = cls.open(path)
        wanted = (check_epsilon(epsilon), check_delta(delta), method, subject)
        found = (ledger.budget_epsilon, ledger.budget_delta, ledger.method, ledger.subject)
        if wanted != found:
            raise ParameterError(explain("budget", wanted, f"the budget recorded in {path}: {found}",
                                         "open it with PrivacyLedger.open(path), or use another path"))
        return ledger

    # -- state ---------------------------------------------------------------------------------------------
    @property
    def budget_epsilon(self) -> float:
        return self._epsilon

    @property
    def budget_delta(self) -> float:
        return self._delta

    @property
    def method(self) -> str:
        return self._method

    @property
    def subject(self) -> str:
        return self._subject

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return self._entries

    def _spent_with(self, costs: list[PrivacyCost]) -> Spent:
        return compose(costs, delta=None if self._method == "basic" else self._delta, method=self._method)

    @property
    def spent(self) -> Spent:
        """(ε, δ) spent so far under the ledger's composition method."""
        return self._spent_with([e.cost for e in self._entries])

    @property
    def remaining_epsilon(self) -> float:
        return max(self._epsilon - self.spent.epsilon, 0.0)

    def _fits(self, spent: Spent) -> bool:
        return spent.epsilon <= self._epsilon * (1 + _SLACK) and spent.delta <= self._delta * (1 + _SLACK)

    def can_afford(self, cost: PrivacyCost) -> bool:
        """Whether :meth:`spend` would accept ``cost`` now."""
        return self._fits(self._spent_with([*(e.cost for e in self._entries), cost]))

    def spent_by_label(self) -> dict[str, Spent]:
        """Per label, what its releases alone cost (same method): a breakdown for reports."""
        labels: dict[str, list[PrivacyCost]] = {}
        for entry in self._entries:
            labels.setdefault(entry.label, []).append(entry.cost)
        return {label: self._spent_with(costs) for label, costs in labels.items()}

    # -- spending ------------------------------------------------------------------------------------------
    def spend(self, cost: PrivacyCost, *, label: str) -> LedgerEntry:
        """Record ``cost`` durably, or raise BudgetExceededError and record nothing."""
        if not isinstance(cost, PrivacyCost):
            raise ParameterError(explain("cost", cost, "a PrivacyCost", "pass mechanism.cost"))
        if not isinstance(label, str) or not label:
            raise ParameterError(explain("label", label, "a non-empty str", "name the release"))
        with self._locked():
            entries = _entries_of(_read(self._path), self._path) if self._path is not None else self._entries
            spent = self._spent_with([*(e.cost for e in entries), cost])
            if not self._fits(spent):
                before = self._spent_with([e.cost for e in entries]).epsilon
                raise BudgetExceededError(
                    explain(f"release {label!r}", f"cost ε={cost.epsilon:.6g}, δ={cost.delta:.3g}",
                            f"a total within the budget ε={self._epsilon:g}, δ={self._delta:g} of {self._subject} "
                            f"(spent so far under {self._method}: ε={before:.6g};"
                            f" with it: ε={spent.epsilon:.6g}, δ={spent.delta:.3g})",
                            "release less (larger noise, fewer steps) or stop: this budget is spent")
                )
            new_entries = _merge(entries, cost, label)
            if self._path is not None:
                self._write(new_entries)
            self._entries = new_entries
            return new_entries[-1]

    # -- persistence ---------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._path is None:
            yield
            return
        lock_path = self._path.with_name(self._path.name + ".lock")
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _write(self, entries: tuple[LedgerEntry, ...]) -> None:
        path = self._path
        if path is None:  # pragma: no cover - callers check
            return
        body = {
            "format": _FORMAT,
            "version": _VERSION,
            "subject": self._subject,
            "budget": {"epsilon": self._epsilon, "delta": self._delta},
            "method": self._method,
            "entries": [e.to_dict() for e in entries],
        }
        payload = dict(body, sha256=hashlib.sha256(_canonical(body)).hexdigest())
        data = json.dumps(payload, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")
        write_atomic(path, data)

    def __repr__(self) -> str:
        spent = self.spent
        where = f", path={str(self._path)!r}" if self._path else ""
        return (f"PrivacyLedger(subject={self._subject!r}, budget=({self._epsilon:g}, {self._delta:g}), "
                f"method={self._method!r}, spent=({spent.epsilon:.4g}, {spent.delta:.3g}), "
                f"entries={len(self._entries)}{where})")


def _merge(entries: tuple[LedgerEntry, ...], cost: PrivacyCost, label: str) -> tuple[LedgerEntry, ...]:
    now = time.time()
    if entries:
        last = entries[-1]
        if last.label == label and dataclasses.replace(last.cost, count=cost.count) == cost:
            merged = dataclasses.replace(last.cost, count=last.cost.count + cost.count)
            return (*entries[:-1], LedgerEntry(last.seq, label, merged, now))
    seq = entries[-1].seq + 1 if entries else 0
    return (*entries, LedgerEntry(seq, label, cost, now))


def _read(path: Path | None) -> dict[str, Any]:
    if path is None:  # pragma: no cover - callers check
        raise ParameterError("internal: no path")
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise LedgerCorruptError(
            f"ledger {path} is missing; it is never recreated silently. Fix: restore it from backup, or "
            "create a new ledger deliberately with PrivacyLedger.create"
        ) from exc
    try:
        payload = json.loads(raw.decode("utf-8"))
        checksum = payload.pop("sha256")
        if payload.get("format") != _FORMAT or payload.get("version") != _VERSION:
            raise ValueError("unknown format or version")
        canonical = _canonical(payload)  # refuses numbers out of range (1e999), which the writer never writes
    except (UnicodeDecodeError, ValueError, AttributeError, KeyError, TypeError, RecursionError) as exc:
        raise LedgerCorruptError(f"ledger {path} does not parse ({exc}); it was left untouched") from exc
    if hashlib.sha256(canonical).hexdigest() != checksum:
        raise LedgerCorruptError(f"ledger {path} fails its checksum (edited or damaged); it was left untouched")
    if not isinstance(payload, dict):  # pragma: no cover - json object guaranteed by the format check
        raise LedgerCorruptError(f"ledger {path} is not an object")
    return payload


def _entries_of(body: dict[str, Any], path: Path | None) -> tuple[LedgerEntry, ...]:
    try:
        entries = tuple(LedgerEntry.from_dict(e) for e in body["entries"])
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError, ParameterError) as exc:
        raise LedgerCorruptError(f"ledger {path}: invalid entry ({exc}); it was left untouched") from exc
    if [e.seq for e in entries] != list(range(len(entries))) or any(math.isnan(e.recorded_at) for e in entries):
        raise LedgerCorruptError(f"ledger {path}: entries out of sequence; it was left untouched")
    return entries
