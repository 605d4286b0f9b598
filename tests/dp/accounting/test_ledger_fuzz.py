"""Fuzzing the ledger file reader: every file either opens as the ledger it encodes or raises
LedgerCorruptError; no other exception, hang or unbounded allocation (hypothesis, fixed budget).

Damaged files are read as an operator adopting them would (:meth:`PrivacyLedger.adopt`: the MAC checked, the
anchor not), and "signed" bodies are sealed with the test's own key, so the checks behind the MAC are reached."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.dp.accounting import PrivacyCost
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.dp.accounting.ledger_file import sealed_bytes
from mpdp.errors import LedgerCorruptError
from mpdp.integrity import IntegrityKey

FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


_KEYS = tempfile.TemporaryDirectory()
KEY = Path(_KEYS.name) / "test.key"


@functools.lru_cache(maxsize=1)
def _valid_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "valid.json"
        ledger = PrivacyLedger.create(path, epsilon=2.0, delta=1e-6, key=KEY)
        ledger.spend(PrivacyCost(epsilon=0.5, delta=0.0), label="a")
        ledger.reserve(PrivacyCost(epsilon=0.25, delta=1e-7), label="b", run="r1")
        return path.read_bytes()


def _open(path: Path) -> PrivacyLedger | None:
    try:
        PrivacyLedger.adopt(path, key=KEY)
        return PrivacyLedger.open(path, key=KEY)
    except LedgerCorruptError:
        return None


def _body() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(_valid_bytes())
    body.pop("mac")
    return body


def _signed(body: dict[str, Any]) -> bytes:
    return sealed_bytes(body, IntegrityKey.load(KEY))


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_are_refused_with_a_typed_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "l.json"
    path.write_bytes(data)
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path, key=KEY)


@FUZZ
@given(st.data())
def test_damaged_ledgers_open_or_raise_a_typed_error(tmp_path: Path, data: st.DataObject) -> None:
    raw = bytearray(_valid_bytes())
    kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
    i = data.draw(st.integers(0, len(raw) - 1))
    if kind == "flip":
        raw[i] ^= data.draw(st.integers(1, 255))
    elif kind == "cut":
        del raw[i:]
    else:
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=20))
    path = tmp_path / "damaged.json"
    path.write_bytes(bytes(raw))
    _open(path)


@FUZZ
@given(st.data())
def test_signed_but_malformed_bodies_open_or_raise_a_typed_error(tmp_path: Path, data: st.DataObject) -> None:
    body = _body()
    # replace one field anywhere in the body (header, budget, an entry, a cost) by an arbitrary JSON value
    target: Any = body
    keys = []
    while isinstance(target, dict | list) and target and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(target)) if isinstance(target, dict)
                        else st.integers(0, len(target) - 1))
        keys.append(key)
        target = target[key]
    if not keys:
        keys = [data.draw(st.sampled_from(sorted(body)))]
    parent: Any = body
    for key in keys[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        parent.pop(keys[-1])
    else:
        parent[keys[-1]] = data.draw(json_values)
    path = tmp_path / "signed.json"
    path.write_bytes(_signed(body))
    _open(path)


def test_regression_deeply_nested_json_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path, key=KEY)


def test_regression_out_of_range_float_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "inf.json"
    path.write_bytes(b'{"format": "mpdp.privacy-ledger", "version": 2, "x": 1e999, "mac": "0"}')
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path, key=KEY)


@pytest.mark.parametrize("body_change", [
    lambda b: b.pop("budget"),
    lambda b: b.__setitem__("budget", [1, 2]),
    lambda b: b.__setitem__("entries", {"x": 1}),
    lambda b: b["entries"][0].__setitem__("seq", 1e300),
    lambda b: b["entries"][1].__setitem__("state", "maybe"),
    lambda b: b.__setitem__("generation", -1),
])
def test_regression_signed_bodies_with_bad_structure(tmp_path: Path, body_change: Any) -> None:
    body = _body()
    body_change(body)
    path = tmp_path / "bad.json"
    path.write_bytes(_signed(body))
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.adopt(path, key=KEY)
