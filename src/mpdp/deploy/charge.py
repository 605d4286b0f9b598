"""What a deployed party's own ledger is charged for one run, and when.

A party holding data keeps a :class:`~mpdp.dp.accounting.ledger.PrivacyLedger` of what is released about it.
For one run it is charged the run's :class:`~mpdp.dp.accounting.cost.PrivacyCost` towards it, in three steps
tied to what has happened on the wire:

1. before connecting, :meth:`RunCharge.check` refuses a run the budget cannot cover
   (:class:`~mpdp.errors.BudgetExceededError`): nothing is recorded and no message of the protocol is sent;
2. after the handshake (every peer authenticated, every configuration digest equal) and before the first
   message of the protocol, :func:`charge_run` *reserves* the cost under the run's id: from that moment it
   counts as spent, so a crash leaves it charged;
3. when the run ends, :meth:`RunCharge.settle` *commits* the reservation if any protocol message left the party
   (what it released may be out) and *cancels* it otherwise (the run ended before anything about the data could
   leave: a peer that never came up, a foreign certificate, a configuration mismatch charge nothing).

The ledger keys the charge by the run's id, so the same run is never charged twice, and parties that stop at
the same point of a run leave their ledgers agreeing. A run id the ledger holds a charge for (spent, or reserved
by an attempt that crashed) is refused before anything is sent: executing it again would release again, so a
rerun takes a new id (``mpdp launch`` writes a fresh one for every launch; a configuration without ``"run"``
gets one from the handshake, new for every execution) and is charged again. An id whose charge was cancelled
(the run ended before any message left) may be used again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.accounting.ledger import LedgerEntry, PrivacyLedger
from mpdp.errors import BudgetExceededError, ParameterError, explain

__all__ = ["RunCharge", "charge_run"]


@dataclass
class RunCharge:
    """One run's charge on one party's ledger (nothing to charge when either is None)."""

    ledger: PrivacyLedger | None
    cost: PrivacyCost | None
    label: str
    run: str | None = None
    entry: LedgerEntry | None = None

    def check(self, run: str | None = None) -> None:
        """Refuse, before anything is sent, a run the ledger cannot cover, or one whose id it has charged already
        (an execution that may release again is a new run: it needs a new id, and is charged again)."""
        if self.ledger is None or self.cost is None:
            return
        held = None if run is None else self.ledger.charge_of(run)
        if held is not None:
            raise ParameterError(explain(
                f"run {run!r} of {self.label}", f"a run this ledger has charged already ({held.state})",
                "a run id not used before", "give the rerun a new \"run\" id (mpdp launch gives every launch one): "
                "a second execution releases again and is charged again"))
        if not self.ledger.can_afford(self.cost):
            spent = self.ledger.spent
            raise BudgetExceededError(explain(
                f"run {self.label!r}", f"cost ε={self.cost.epsilon:.6g}, δ={self.cost.delta:.3g}",
                f"a total within the budget ε={self.ledger.budget_epsilon:g}, δ={self.ledger.budget_delta:g} "
                f"of {self.ledger.subject} (spent so far: ε={spent.epsilon:.6g}, δ={spent.delta:.3g})",
                "release less or stop: this budget is spent; nothing was sent"))

    def settle(self, *, data_sent: bool) -> None:
        """Commit the reservation if protocol messages left the party, else cancel it (idempotent)."""
        if self.ledger is None or self.run is None or self.entry is None:
            return
        if data_sent:
            self.entry = self.ledger.commit(self.run)
        elif self.entry.state == "reserved":
            self.ledger.cancel(self.run)
            self.entry = None

    def report(self) -> dict[str, Any] | None:
        """What the ledger holds after the run (the launcher's per-party figure)."""
        if self.ledger is None:
            return None
        spent = self.ledger.spent
        return {"epsilon": float(spent.epsilon), "delta": float(spent.delta), "path": str(self.ledger.path),
                "run": self.run}


def charge_run(ledger: PrivacyLedger | None, cost: PrivacyCost | None, *, label: str, run: str) -> RunCharge:
    """The one call that charges a deployed party for a run: reserves ``cost`` on ``ledger`` under ``run``.

    Call it after the handshake and before the first protocol message; settle the result when the run ends.
    BudgetExceededError (nothing recorded) if the budget cannot cover it; a run charged already is not charged
    again.
    """
    charge = RunCharge(ledger, cost, label, run)
    if ledger is not None and cost is not None:
        charge.entry = ledger.reserve(cost, label=label, run=run)
    return charge
