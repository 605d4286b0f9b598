"""The ledger refuses overspending, persists atomically, survives crashes and never resets a corrupt file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mpdp.dp import LaplaceMechanism
from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
from mpdp.errors import BudgetExceededError, LedgerCorruptError, ParameterError

ROOT = Path(__file__).resolve().parents[3]
PURE = PrivacyCost(epsilon=0.25, rho=0.25**2 / 2, mechanism="laplace", noise_multiplier=4.0)


def test_in_memory_ledger_refuses_overspend_and_records_nothing() -> None:
    ledger = PrivacyLedger(epsilon=1.0, subject="party:alice")
    for _ in range(4):
        ledger.spend(PURE, label="counts")
    assert ledger.spent.epsilon == pytest.approx(1.0)
    assert len(ledger.entries) == 1 and ledger.entries[0].cost.count == 4  # merged
    with pytest.raises(BudgetExceededError, match="party:alice"):
        ledger.spend(PURE, label="counts")
    assert ledger.entries[0].cost.count == 4
    assert not ledger.can_afford(PURE)
    assert ledger.remaining_epsilon == pytest.approx(0.0)


def test_budget_split_in_equal_parts_is_spendable() -> None:
    ledger = PrivacyLedger(epsilon=1.0)
    third = PrivacyCost(epsilon=1 / 3)
    for label in ("a", "b", "c"):
        ledger.spend(third, label=label)
    assert [e.label for e in ledger.entries] == ["a", "b", "c"]
    assert set(ledger.spent_by_label()) == {"a", "b", "c"}


def test_rdp_ledger_composes_gaussian_steps() -> None:
    ledger = PrivacyLedger(epsilon=3.0, delta=1e-5, method="rdp")
    step = PrivacyCost(epsilon=float("inf"), mechanism="gaussian", noise_multiplier=10.0)
    taken = 0
    with pytest.raises(BudgetExceededError):
        while True:
            ledger.spend(step, label="step")
            taken += 1
    assert 20 < taken < 200  # basic composition would have refused the first step (epsilon inf)
    assert ledger.spent.epsilon <= 3.0
    with pytest.raises(ParameterError, match="delta"):
        PrivacyLedger(epsilon=1.0, method="rdp")


def test_mechanism_charges_before_releasing(tmp_path: Path) -> None:
    ledger = PrivacyLedger.create(tmp_path / "l.json", epsilon=1.5)
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    mech.release(np.zeros(3), ledger=ledger, label="q1")
    with pytest.raises(BudgetExceededError):
        mech.release(np.zeros(3), ledger=ledger, label="q2")
    assert [e.label for e in PrivacyLedger.open(tmp_path / "l.json").entries] == ["q1"]


def test_persistence_round_trip_and_budget_checks(tmp_path: Path) -> None:
    path = tmp_path / "adult.json"
    ledger = PrivacyLedger.open_or_create(path, epsilon=2.0, delta=1e-6, method="zcdp", subject="dataset:adult")
    ledger.spend(PURE, label="a")
    ledger.spend(PrivacyCost(epsilon=0.1, delta=1e-8), label="b")
    again = PrivacyLedger.open_or_create(path, epsilon=2.0, delta=1e-6, method="zcdp", subject="dataset:adult")
    assert again.entries == ledger.entries
    assert again.spent == ledger.spent
    with pytest.raises(ParameterError, match="budget"):
        PrivacyLedger.open_or_create(path, epsilon=3.0, delta=1e-6, method="zcdp", subject="dataset:adult")
    with pytest.raises(ParameterError, match="open"):
        PrivacyLedger.create(path, epsilon=2.0)
    assert "dataset:adult" in repr(again)


def test_two_handles_on_one_file_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    first = PrivacyLedger.create(path, epsilon=0.5)
    second = PrivacyLedger.open(path)
    first.spend(PURE, label="x")
    second.spend(PURE, label="y")  # re-reads under the lock: sees x
    with pytest.raises(BudgetExceededError):
        first.spend(PURE, label="z")
    assert [e.label for e in PrivacyLedger.open(path).entries] == ["x", "y"]


@pytest.mark.parametrize("damage", ["garbage", "edit", "truncate", "entries"])
def test_corrupt_file_is_refused_and_left_alone(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "l.json"
    ledger = PrivacyLedger.create(path, epsilon=1.0)
    ledger.spend(PURE, label="a")
    text = path.read_text()
    if damage == "garbage":
        path.write_bytes(b"\x00\xff not json")
    elif damage == "edit":  # someone lowers the recorded spend
        path.write_text(text.replace('"count": 1', '"count": 0'))
    elif damage == "truncate":
        path.write_text(text[: len(text) // 2])
    else:
        body = json.loads(text)
        body["entries"] = "nope"
        path.write_text(json.dumps(body))
    before = path.read_bytes()
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path)
    with pytest.raises(LedgerCorruptError):
        ledger.spend(PURE, label="b")  # an open handle re-reads: refuses too
    assert path.read_bytes() == before  # never reset


def test_missing_file_is_an_error_not_a_fresh_budget(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    ledger = PrivacyLedger.create(path, epsilon=1.0)
    path.unlink()
    with pytest.raises(LedgerCorruptError, match="missing"):
        ledger.spend(PURE, label="a")


def test_failed_commit_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.json"
    ledger = PrivacyLedger.create(path, epsilon=1.0)
    ledger.spend(PURE, label="a")

    def crash(*_args: object) -> None:
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        ledger.spend(PURE, label="b")
    monkeypatch.undo()
    assert [e.label for e in ledger.entries] == ["a"]
    assert [e.label for e in PrivacyLedger.open(path).entries] == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.json", "l.json.anchor", "l.json.lock",
                                                          "mpdp-integrity.key"]  # temp file removed


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          check=False, timeout=120)


def test_process_killed_between_record_and_release_over_reports(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0)
    result = _run(f"""
        import os
        from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
        ledger = PrivacyLedger.open({str(path)!r})
        ledger.spend(PrivacyCost(epsilon=0.4), label="recorded")
        os._exit(17)  # dies after the record, before any release
    """)
    assert result.returncode == 17, result.stderr
    assert PrivacyLedger.open(path).spent.epsilon == pytest.approx(0.4)


def test_process_killed_mid_write_leaves_the_previous_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    ledger = PrivacyLedger.create(path, epsilon=1.0)
    ledger.spend(PrivacyCost(epsilon=0.1), label="before")
    result = _run(f"""
        import os
        from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
        os.replace = lambda *a: os._exit(9)  # the temp file is written and fsync'ed, then the process dies
        PrivacyLedger.open({str(path)!r}).spend(PrivacyCost(epsilon=0.2), label="lost")
    """)
    assert result.returncode == 9, result.stderr
    reopened = PrivacyLedger.open(path)  # a stale temp file is ignored
    assert [e.label for e in reopened.entries] == ["before"]
    reopened.spend(PrivacyCost(epsilon=0.2), label="after")
    assert reopened.spent.epsilon == pytest.approx(0.3)


def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0)
    code = f"""
        from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
        from mpdp.errors import BudgetExceededError
        ledger = PrivacyLedger.open({str(path)!r})
        ok = 0
        for i in range(12):
            try:
                ledger.spend(PrivacyCost(epsilon=0.05), label=f"p{{__import__('os').getpid()}}-{{i}}")
                ok += 1
            except BudgetExceededError:
                pass
        print(ok)
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    granted = sum(int(p.communicate(timeout=120)[0]) for p in procs)
    final = PrivacyLedger.open(path)
    assert granted == 20 == sum(e.cost.count for e in final.entries)
    assert final.spent.epsilon == pytest.approx(1.0)
