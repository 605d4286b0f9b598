"""The ledger against edits and rollbacks (a keyed MAC and an anchor), and its per-run reserve/commit/cancel."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
from mpdp.dp.accounting.ledger_file import canonical
from mpdp.errors import BudgetExceededError, LedgerCorruptError, ParameterError
from mpdp.integrity import KEY_ENV, KEY_NAME, IntegrityKey

ROOT = Path(__file__).resolve().parents[3]
COST = PrivacyCost(epsilon=0.4)


def test_the_key_is_a_private_file_beside_the_ledger_and_never_in_it(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0).spend(COST, label="a")
    key = tmp_path / KEY_NAME
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    secret = IntegrityKey.load(key).secret
    for name in ("l.json", "l.json.anchor"):
        text = (tmp_path / name).read_bytes()
        assert secret.hex().encode() not in text and secret not in text
    key.chmod(0o644)
    with pytest.raises(LedgerCorruptError, match="chmod 600"):
        PrivacyLedger.open(path)


def test_an_edit_with_a_recomputed_checksum_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0).spend(COST, label="a")
    document = json.loads(path.read_text())
    document["entries"][0]["cost"]["epsilon"] = 0.01  # lower the recorded spend
    mac = document.pop("mac")
    # whoever edits can hash the body, or MAC it under a key of their own: neither verifies
    forged = IntegrityKey(tmp_path / "mine.key", b"\x01" * 32).mac("mpdp.privacy-ledger/v2", canonical(document))
    for tag in (hashlib.sha256(canonical(document)).hexdigest(), forged, mac):
        path.write_text(json.dumps({**document, "mac": tag}))
        with pytest.raises(LedgerCorruptError, match="fails its MAC"):
            PrivacyLedger.open(path)


def test_a_ledger_restored_from_an_old_copy_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    ledger = PrivacyLedger.create(path, epsilon=1.0)
    ledger.spend(COST, label="a")
    old = path.read_bytes()
    ledger.spend(COST, label="b")
    path.write_bytes(old)
    with pytest.raises(LedgerCorruptError, match="older copy"):
        PrivacyLedger.open(path)
    with pytest.raises(LedgerCorruptError, match="older copy"):
        ledger.spend(COST, label="c")  # an open handle re-reads: refuses too
    assert path.read_bytes() == old  # left untouched


@pytest.mark.parametrize("lost", ["anchor", "key", "ledger"])
def test_a_lost_anchor_key_or_ledger_is_not_a_fresh_start(tmp_path: Path, lost: str) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0).spend(COST, label="a")
    (tmp_path / {"anchor": "l.json.anchor", "key": KEY_NAME, "ledger": "l.json"}[lost]).unlink()
    with pytest.raises(LedgerCorruptError, match={"anchor": "no anchor", "key": "cannot be verified",
                                                  "ledger": "deleted"}[lost]):
        PrivacyLedger.open_or_create(path, epsilon=1.0)


def test_a_ledger_under_another_organisations_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0).spend(COST, label="a")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(path, other / "l.json")
    shutil.copy(tmp_path / "l.json.anchor", other / "l.json.anchor")
    with pytest.raises(LedgerCorruptError, match="cannot be verified"):  # no key there
        PrivacyLedger.open(other / "l.json")
    IntegrityKey.load_or_create(other / KEY_NAME)
    with pytest.raises(LedgerCorruptError, match="another organisation's key"):
        PrivacyLedger.open(other / "l.json")


def test_the_environment_names_one_key_for_every_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "org" / "org.key"))
    PrivacyLedger.create(tmp_path / "a" / "l.json", epsilon=1.0)
    PrivacyLedger.create(tmp_path / "b" / "l.json", epsilon=1.0)
    assert (tmp_path / "org" / "org.key").exists() and not (tmp_path / "a" / KEY_NAME).exists()


def test_an_unkeyed_format_1_file_is_refused_until_adopted(tmp_path: Path) -> None:
    body = {"format": "mpdp.privacy-ledger", "version": 1, "subject": "party:a", "method": "basic",
            "budget": {"epsilon": 1.0, "delta": 0.0},
            "entries": [{"seq": 0, "label": "a", "cost": COST.to_dict(), "recorded_at": 1.0}]}
    path = tmp_path / "l.json"
    path.write_text(json.dumps({**body, "sha256": hashlib.sha256(canonical(body)).hexdigest()}))
    with pytest.raises(LedgerCorruptError, match="adopt"):
        PrivacyLedger.open(path)
    adopted = PrivacyLedger.adopt(path)
    assert PrivacyLedger.open(path).spent.epsilon == pytest.approx(0.4) == adopted.spent.epsilon


def test_a_run_is_charged_once_whatever_the_retries(tmp_path: Path) -> None:
    ledger = PrivacyLedger.create(tmp_path / "l.json", epsilon=1.0)
    first = ledger.reserve(COST, label="fm/party0", run="r1")
    assert ledger.reserve(COST, label="fm/party0", run="r1") == first  # a retry charges nothing more
    assert ledger.spent.epsilon == pytest.approx(0.4) and first.state == "reserved"
    assert ledger.commit("r1").state == "spent" and ledger.commit("r1").state == "spent"
    assert ledger.spend(COST, label="fm/party0", run="r1").state == "spent"
    assert PrivacyLedger.open(tmp_path / "l.json").spent.epsilon == pytest.approx(0.4)
    with pytest.raises(ParameterError, match="stays spent"):
        ledger.cancel("r1")
    with pytest.raises(ParameterError, match="same configuration"):
        ledger.reserve(PrivacyCost(epsilon=0.1), label="fm/party0", run="r1")


def test_a_cancelled_reservation_frees_its_budget_and_a_refused_one_records_nothing(tmp_path: Path) -> None:
    ledger = PrivacyLedger.create(tmp_path / "l.json", epsilon=1.0)
    ledger.reserve(PrivacyCost(epsilon=0.7), label="x", run="r1")
    with pytest.raises(BudgetExceededError):  # reserved counts as spent
        ledger.reserve(PrivacyCost(epsilon=0.7), label="x", run="r2")
    ledger.cancel("r1")
    ledger.cancel("r1")  # nothing left to cancel: not an error
    assert ledger.spent.epsilon == 0.0 and ledger.charge_of("r1") is None
    ledger.reserve(PrivacyCost(epsilon=0.7), label="x", run="r2")
    reopened = PrivacyLedger.open(tmp_path / "l.json")
    assert [(e.run, e.state) for e in reopened.entries] == [("r1", "cancelled"), ("r2", "reserved")]


def test_a_process_killed_after_reserving_leaves_the_charge_counted(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    PrivacyLedger.create(path, epsilon=1.0)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    code = f"""
        import os
        from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
        PrivacyLedger.open({str(path)!r}).reserve(PrivacyCost(epsilon=0.4), label="x", run="r1")
        os._exit(9)  # dies after the reservation, before committing or cancelling it
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                            check=False, timeout=120)
    assert result.returncode == 9, result.stderr
    assert PrivacyLedger.open(path).spent.epsilon == pytest.approx(0.4)
