"""A privacy ledger per dataset or party: records every release, refuses overspending, survives crashes, and
shows an edit or a rollback.

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
* **Reserve, then commit or cancel, once per run.** A deployed party does not know, when it is charged, whether
  its run will get as far as releasing anything: :meth:`reserve` records the cost under the run's id (it counts
  as spent from that moment, so a crash leaves it charged), :meth:`commit` marks it spent for good once data
  left the party, :meth:`cancel` releases it when the run ended before that. Every charge carrying a ``run`` id
  is recorded once: reserving or spending again for the same run returns the recorded entry (a restarted party,
  a retried launch), and a spent charge cannot be cancelled.
* **Several processes.** Each change holds an exclusive ``flock`` on ``<ledger>.lock`` and re-reads the file
  under it, so concurrent spenders on one file serialise instead of losing updates.
* **Corruption, edits and rollbacks are loud.** The file is sealed with an HMAC-SHA256 under the organisation's
  integrity key (:mod:`mpdp.integrity`: a 0600 key file beside the ledger, never inside it) and every write is
  recorded in an anchor file; a file that does not parse, fails its MAC, or is older than its anchor raises
  :class:`~mpdp.errors.LedgerCorruptError` and is left untouched. A ledger is never silently reset. What the
  anchor cannot catch (the ledger and its anchor restored together from an old backup) and what would catch it
  is in :mod:`mpdp.dp.accounting.ledger_file`.

Consecutive spends without a run id with the same label and the same per-release cost are merged into one entry
with a ``count`` (an iterative algorithm's T steps stay one line). A relative slack of 1e-12 on the budget
absorbs floating-point rounding when a budget is split into equal parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.dp.accounting import ledger_file
from mpdp.dp.accounting.composition import METHODS, Spent, compose
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.calibration import check_delta, check_epsilon
from mpdp.errors import BudgetExceededError, LedgerCorruptError, ParameterError, explain
from mpdp.integrity import IntegrityKey, key_path

__all__ = ["STATES", "LedgerEntry", "PrivacyLedger"]

_SLACK = 1e-12
#: an entry's state: spent for good, reserved by a run that may still cancel it (counted as spent), cancelled
STATES = ("spent", "reserved", "cancelled")


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release (or ``cost.count`` identical consecutive ones); ``run`` is the id of the run it was
    charged for, ``state`` one of :data:`STATES` (only spent and reserved entries count)."""

    seq: int
    label: str
    cost: PrivacyCost
    recorded_at: float
    run: str | None = None
    state: str = "spent"

    @property
    def counts(self) -> bool:
        return self.state != "cancelled"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "label": self.label, "cost": self.cost.to_dict(), "recorded_at": self.recorded_at,
                "run": self.run, "state": self.state}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        run, state = data.get("run"), data.get("state", "spent")
        if (run is not None and not isinstance(run, str)) or state not in STATES:
            raise ValueError(f"entry run {run!r} / state {state!r}")
        return cls(seq=int(data["seq"]), label=str(data["label"]), cost=PrivacyCost.from_dict(data["cost"]),
                   recorded_at=float(data["recorded_at"]), run=run, state=state)


def _check_run(run: Any) -> str:
    if not isinstance(run, str) or not run or len(run) > 256:
        raise ParameterError(explain("run", run, "a non-empty str of at most 256 characters",
                                     "pass the run's id, the same at every party"))
    return run


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
        :meth:`open` or :meth:`open_or_create` for files; their ``key`` is the integrity key file
        (default :func:`mpdp.integrity.key_path` beside the ledger, created with the ledger).
    """

    def __init__(self, *, epsilon: float, delta: float = 0.0, method: str = "basic", subject: str = "dataset",
                 path: str | Path | None = None, _entries: tuple[LedgerEntry, ...] = (),
                 _key: IntegrityKey | None = None, _generation: int = 0) -> None:
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
        self._key = _key
        self._generation = _generation

    # -- construction from files ----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, *, epsilon: float, delta: float = 0.0, method: str = "basic",
               subject: str = "dataset", key: str | Path | None = None) -> PrivacyLedger:
        """A new, empty ledger persisted at ``path``; refuses to overwrite an existing file, or to start again a
        ledger whose anchor shows it had recorded spends (it was deleted)."""
        target = Path(path)
        ledger = cls(epsilon=epsilon, delta=delta, method=method, subject=subject, path=path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParameterError(explain("path", str(path), "a path in a folder mpdp can create and write",
                                         f"check the folder ({exc})")) from exc
        sealer = ledger._key = IntegrityKey.load_or_create(key_path(target.parent, key))
        with ledger._locked():
            if target.exists():
                raise ParameterError(explain("path", str(path), "a path with no ledger yet",
                                             "use PrivacyLedger.open(path) to continue an existing ledger"))
            _refuse_deleted(target, sealer)
            # the anchor first: a crash before the ledger is written leaves an anchor of generation 0, which
            # records no spend, so creating the ledger again is safe
            sealed = dict(ledger._body(()), key_id=sealer.key_id)
            ledger_file.write_anchor(target, sealer, sealed)
            ledger_file.write_body(target, sealer, ledger._body(()), anchor=False)
        return ledger

    @classmethod
    def open(cls, path: str | Path, *, key: str | Path | None = None) -> PrivacyLedger:
        """The ledger persisted at ``path``; LedgerCorruptError if it does not verify (edited, rolled back, its
        key or anchor missing)."""
        target = Path(path)
        sealer_path = key_path(target.parent, key)
        body = ledger_file.read_body(target, sealer_path)
        return cls._from_body(target, body, IntegrityKey.load(sealer_path))

    @classmethod
    def _from_body(cls, path: Path, body: dict[str, Any], key: IntegrityKey) -> PrivacyLedger:
        try:
            budget = body["budget"]
            return cls(epsilon=budget["epsilon"], delta=budget["delta"], method=body["method"],
                       subject=body["subject"], path=path, _entries=_entries_of(body, path), _key=key,
                       _generation=_generation_of(body, path))
        except (ParameterError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerCorruptError(f"ledger {path}: invalid header ({exc}); the file was left untouched") from exc

    @classmethod
    def open_or_create(cls, path: str | Path, *, epsilon: float, delta: float = 0.0, method: str = "basic",
                       subject: str = "dataset", key: str | Path | None = None) -> PrivacyLedger:
        """Open ``path`` if it exists (its budget must match), else create it."""
        if not Path(path).exists():
            return cls.create(path, epsilon=epsilon, delta=delta, method=method, subject=subject, key=key)
        ledger = cls.open(path, key=key)
        wanted = (check_epsilon(epsilon), check_delta(delta), method, subject)
        found = (ledger.budget_epsilon, ledger.budget_delta, ledger.method, ledger.subject)
        if wanted != found:
            raise ParameterError(explain("budget", wanted, f"the budget recorded in {path}: {found}",
                                         "open it with PrivacyLedger.open(path), or use another path"))
        return ledger

    @classmethod
    def adopt(cls, path: str | Path, *, key: str | Path | None = None) -> PrivacyLedger:
        """Accept the file at ``path`` deliberately as the current ledger and anchor it there.

        For an operator who knows the file is the latest, e.g. after restoring a whole machine, or after the
        anchor was lost. It must still verify under the key (a format-1 file, sealed only by an unkeyed
        checksum, is sealed with the key here: trust on first use). Never called by mpdp itself.
        """
        target = Path(path)
        sealer = IntegrityKey.load_or_create(key_path(target.parent, key))
        with _lock(target):
            body = ledger_file.read_adoptable(target, sealer)
            ledger = cls._from_body(target, body, sealer)
            ledger._generation += 1
            ledger_file.write_body(target, sealer, ledger._body(ledger._entries))
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
        """(ε, δ) spent so far under the ledger's composition method (reserved charges included)."""
        return self._spent_with([e.cost for e in self._entries if e.counts])

    @property
    def remaining_epsilon(self) -> float:
        return max(self._epsilon - self.spent.epsilon, 0.0)

    def _fits(self, spent: Spent) -> bool:
        return spent.epsilon <= self._epsilon * (1 + _SLACK) and spent.delta <= self._delta * (1 + _SLACK)

    def can_afford(self, cost: PrivacyCost) -> bool:
        """Whether :meth:`spend` would accept ``cost`` now."""
        return self._fits(self._spent_with([*(e.cost for e in self._entries if e.counts), cost]))

    def spent_by_label(self) -> dict[str, Spent]:
        """Per label, what its releases alone cost (same method): a breakdown for reports."""
        labels: dict[str, list[PrivacyCost]] = {}
        for entry in self._entries:
            if entry.counts:
                labels.setdefault(entry.label, []).append(entry.cost)
        return {label: self._spent_with(costs) for label, costs in labels.items()}

    def charge_of(self, run: str) -> LedgerEntry | None:
        """The entry charged for ``run`` (spent or reserved), or None."""
        return _active(self._entries, run)

    # -- spending ------------------------------------------------------------------------------------------
    def spend(self, cost: PrivacyCost, *, label: str, run: str | None = None) -> LedgerEntry:
        """Record ``cost`` durably, or raise BudgetExceededError and record nothing.

        With ``run``: the run's charge, recorded once; a later spend for the same run returns the recorded entry
        (committing it if it was reserved) and charges nothing more.
        """
        return self._charge(cost, label, None if run is None else _check_run(run), "spent")

    def reserve(self, cost: PrivacyCost, *, label: str, run: str) -> LedgerEntry:
        """Reserve ``cost`` for ``run``: durable and counted as spent from now on, until :meth:`cancel`.

        BudgetExceededError (recording nothing) if it does not fit; the recorded entry if ``run`` is charged
        already (a second reservation charges nothing)."""
        return self._charge(cost, label, _check_run(run), "reserved")

    def commit(self, run: str) -> LedgerEntry:
        """Mark ``run``'s reservation spent for good (it stays counted); a spent one is returned unchanged."""
        run = _check_run(run)

        def change(entries: tuple[LedgerEntry, ...]) -> tuple[LedgerEntry, ...]:
            active = _active(entries, run)
            if active is None:
                raise ParameterError(explain("run", run, "a run this ledger holds a charge for",
                                             "reserve the run's cost before committing it"))
            return entries if active.state == "spent" else _with_state(entries, active, "spent")

        entry = _active(self._update(change), run)
        if entry is None:  # pragma: no cover - change() guarantees it
            raise LedgerCorruptError(f"ledger {self._path}: the charge of run {run!r} vanished")
        return entry

    def cancel(self, run: str) -> None:
        """Release ``run``'s reservation (it no longer counts). ParameterError if the charge is spent already:
        what was spent stays spent. Nothing to cancel is not an error."""
        run = _check_run(run)

        def change(entries: tuple[LedgerEntry, ...]) -> tuple[LedgerEntry, ...]:
            active = _active(entries, run)
            if active is None:
                return entries
            if active.state == "spent":
                raise ParameterError(explain(f"cancel of run {run!r}", "a spent charge", "a reserved one",
                                             "a spent charge stays spent: data left the party"))
            return _with_state(entries, active, "cancelled")

        self._update(change)

    def _charge(self, cost: PrivacyCost, label: str, run: str | None, state: str) -> LedgerEntry:
        if not isinstance(cost, PrivacyCost):
            raise ParameterError(explain("cost", cost, "a PrivacyCost", "pass mechanism.cost"))
        if not isinstance(label, str) or not label:
            raise ParameterError(explain("label", label, "a non-empty str", "name the release"))

        def change(entries: tuple[LedgerEntry, ...]) -> tuple[LedgerEntry, ...]:
            active = None if run is None else _active(entries, run)
            if active is not None:
                if active.cost != cost:
                    raise ParameterError(explain(f"charge of run {run!r}", f"cost ε={cost.epsilon:.6g}",
                                                 f"the cost recorded for it, ε={active.cost.epsilon:.6g}",
                                                 "give every retry of a run the same configuration"))
                if state == "spent" and active.state == "reserved":
                    return _with_state(entries, active, "spent")
                return entries
            spent = self._spent_with([*(e.cost for e in entries if e.counts), cost])
            if not self._fits(spent):
                before = self._spent_with([e.cost for e in entries if e.counts]).epsilon
                raise BudgetExceededError(
                    explain(f"release {label!r}", f"cost ε={cost.epsilon:.6g}, δ={cost.delta:.3g}",
                            f"a total within the budget ε={self._epsilon:g}, δ={self._delta:g} of {self._subject} "
                            f"(spent so far under {self._method}: ε={before:.6g};"
                            f" with it: ε={spent.epsilon:.6g}, δ={spent.delta:.3g})",
                            "release less (larger noise, fewer steps) or stop: this budget is spent")
                )
            return _append(entries, cost, label, run, state)

        entries = self._update(change)
        found = entries[-1] if run is None else _active(entries, run)
        if found is None:  # pragma: no cover - change() guarantees it
            raise LedgerCorruptError(f"ledger {self._path}: the charge of run {run!r} vanished")
        return found

    def _update(self, change: Callable[[tuple[LedgerEntry, ...]], tuple[LedgerEntry, ...]]
                ) -> tuple[LedgerEntry, ...]:
        """Apply ``change`` to the current entries (re-read under the lock) and make the result durable."""
        with self._locked():
            generation = self._generation
            if self._path is not None:
                key: IntegrityKey | Path = self._key if self._key is not None else key_path(self._path.parent)
                body = ledger_file.read_body(self._path, key)
                entries, generation = _entries_of(body, self._path), _generation_of(body, self._path)
                if isinstance(key, Path):  # a ledger built on a path directly: the key that verified it
                    self._key = IntegrityKey.load(key)
            else:
                entries = self._entries
            new_entries = change(entries)
            if new_entries is not entries and self._path is not None and self._key is not None:
                generation += 1
                ledger_file.write_body(self._path, self._key, self._body(new_entries, generation))
            self._entries, self._generation = new_entries, generation
            return new_entries

    # -- persistence ---------------------------------------------------------------------------------------
    def _body(self, entries: tuple[LedgerEntry, ...], generation: int | None = None) -> dict[str, Any]:
        return {"format": ledger_file.FORMAT, "version": ledger_file.VERSION, "subject": self._subject,
                "budget": {"epsilon": self._epsilon, "delta": self._delta}, "method": self._method,
                "generation": self._generation if generation is None else generation,
                "entries": [e.to_dict() for e in entries]}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._path is None:
            yield
            return
        with _lock(self._path):
            yield

    def __repr__(self) -> str:
        spent = self.spent
        where = f", path={str(self._path)!r}" if self._path else ""
        return (f"PrivacyLedger(subject={self._subject!r}, budget=({self._epsilon:g}, {self._delta:g}), "
                f"method={self._method!r}, spent=({spent.epsilon:.4g}, {spent.delta:.3g}), "
                f"entries={len(self._entries)}{where})")


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _refuse_deleted(path: Path, key: IntegrityKey) -> None:
    generation = ledger_file.anchored_generation(path, key)
    if generation:
        raise LedgerCorruptError(
            f"ledger {path} is missing, but its anchor records {generation} writes: it was deleted, and starting "
            "it again would forget the budget it recorded. Fix: restore it from backup (or, deliberately, move "
            f"{ledger_file.anchor_path(path).name} away to start a new budget)")


def _active(entries: tuple[LedgerEntry, ...], run: str) -> LedgerEntry | None:
    for entry in reversed(entries):
        if entry.run == run and entry.counts:
            return entry
    return None


def _with_state(entries: tuple[LedgerEntry, ...], entry: LedgerEntry, state: str) -> tuple[LedgerEntry, ...]:
    changed = dataclasses.replace(entry, state=state, recorded_at=time.time())
    return tuple(changed if e.seq == entry.seq else e for e in entries)


def _append(entries: tuple[LedgerEntry, ...], cost: PrivacyCost, label: str, run: str | None,
            state: str) -> tuple[LedgerEntry, ...]:
    now = time.time()
    if entries and run is None:
        last = entries[-1]
        if last.run is None and last.state == "spent" and last.label == label \
                and dataclasses.replace(last.cost, count=cost.count) == cost:
            merged = dataclasses.replace(last.cost, count=last.cost.count + cost.count)
            return (*entries[:-1], LedgerEntry(last.seq, label, merged, now))
    seq = entries[-1].seq + 1 if entries else 0
    return (*entries, LedgerEntry(seq, label, cost, now, run, state))


def _generation_of(body: dict[str, Any], path: Path | None) -> int:
    generation = body.get("generation")
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise LedgerCorruptError(f"ledger {path}: invalid generation {generation!r}; it was left untouched")
    return generation


def _entries_of(body: dict[str, Any], path: Path | None) -> tuple[LedgerEntry, ...]:
    try:
        entries = tuple(LedgerEntry.from_dict(e) for e in body["entries"])
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError, ParameterError) as exc:
        raise LedgerCorruptError(f"ledger {path}: invalid entry ({exc}); it was left untouched") from exc
    if [e.seq for e in entries] != list(range(len(entries))) or any(math.isnan(e.recorded_at) for e in entries):
        raise LedgerCorruptError(f"ledger {path}: entries out of sequence; it was left untouched")
    return entries
