"""Party configuration files are checked against one schema before anything runs: every problem is one typed
line naming the party, the key and the fix, never a traceback (``mpdp party --config``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.cli import main
from mpdp.deploy.config import check_algorithm_options, check_party_config, load_party_config
from mpdp.errors import DomainError, MpdpError, ParameterError
from mpdp.protocols.catalog import PROTOCOLS, PartySetup, build_role, load_input

PARTIES = {"alice": "127.0.0.1:50051", "bob": "127.0.0.1:50052", "carol": "127.0.0.1:50053"}
SUM: dict[str, Any] = {"protocol": "secure-sum", "parties": PARTIES, "certs": "certs",
                       "inputs": {"alice": {"synthetic": {"seed": 1, "shape": [3]}}}}
AGGREGATION: dict[str, Any] = {**SUM, "protocol": "aggregation",
                               "params": {"server": "alice", "aggregators": ["alice", "bob"], "clients": {"carol": 1},
                                          "dim": 3}}
ALGORITHM: dict[str, Any] = {"algorithm": "fm-logistic", "parties": PARTIES, "certs": ".", "shared": "shared.json",
                             "data": "data.csv", "ledger": {"path": "ledger.json", "epsilon": 1.0}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


def _party(tmp_path: Path, config: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(config))
    assert main(["party", "--config", str(path), "--name", "alice"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(("change", "key", "kind"), [
    ({"timeout": "abc"}, "timeout", "ParameterError"),
    ({"timeout": [1]}, "timeout", "ParameterError"),
    ({"timeout": -1}, "timeout", "DomainError"),
    ({"timeout": 0}, "timeout", "DomainError"),
    ({"timeout": True}, "timeout", "ParameterError"),
    ({"connect_timeout": "abc"}, "connect_timeout", "ParameterError"),
    ({"seed": "abc"}, "seed", "ParameterError"),
    ({"seed": 1.5}, "seed", "ParameterError"),
    ({"seed": -1}, "seed", "DomainError"),
    ({"timout": 3}, "timout", "ParameterError"),
    ({"parties": {"alice": "127.0.0.1:0", "bob": "127.0.0.1:1"}}, "parties.alice", "DomainError"),
    ({"parties": {"alice": "127.0.0.1:1"}}, "parties", "ParameterError"),
    ({"parties": ["alice", "bob"]}, "parties", "ParameterError"),
    ({"protocol": "secure-summ"}, "protocol", "DomainError"),
    ({"inputs": {"alice": {"synthetic": {"seed": "abc", "shape": [3]}}}}, "inputs.alice.synthetic.seed",
     "ParameterError"),
    ({"inputs": {"dave": "dave.npy"}}, "inputs", "ParameterError"),
    ({"params": {"dim": 3}}, "params.dim", "ParameterError"),
    ({"certs": 3}, "certs", "ParameterError"),
])
def test_a_bad_protocol_configuration_is_one_typed_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       change: dict[str, Any], key: str, kind: str) -> None:
    err = _party(tmp_path, {**SUM, **change}, capsys)
    assert err.startswith(f"mpdp: error: {kind}: alice's configuration") and f'"{key}"' in err and "Fix:" in err


@pytest.mark.parametrize(("params", "key"), [
    ({"dim": "abc"}, "params.dim"), ({"dim": 0}, "params.dim"), ({"dim": 2.0}, "params.dim"),
    ({"clients": {"carol": True}}, "params.clients.carol"), ({"clients": {"dave": 1}}, "params.clients"),
    ({"bound": "x"}, "params.bound"), ({"max_dropouts": -1}, "params.max_dropouts"), ({"weigthed": 1}, "weigthed"),
    ({"aggregators": "alice"}, "params.aggregators"), ({"phase_timeout": "soon"}, "params.phase_timeout"),
])
def test_a_bad_protocol_parameter_names_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               params: dict[str, Any], key: str) -> None:
    err = _party(tmp_path, {**AGGREGATION, "params": {**AGGREGATION["params"], **params}}, capsys)
    assert "alice's configuration" in err and key in err and "Fix:" in err


def test_unreadable_files_are_typed_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for data in (b"\xff\xfe{", b"{", b"[1, 2]", b'{"protocol": "secure-sum", "parties": NaN}', b""):
        path = tmp_path / "cfg.json"
        path.write_bytes(data)
        assert main(["party", "--config", str(path), "--name", "alice"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mpdp: error: ParameterError") and "Traceback" not in err
    assert main(["party", "--config", str(tmp_path / "missing.json")]) == 2
    assert "readable" in capsys.readouterr().err


def test_a_valid_configuration_fills_in_its_defaults(tmp_path: Path) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(AGGREGATION))
    config = load_party_config(path, "bob")
    assert config.name == "bob" and config.base == tmp_path and config.kind == "protocol"
    assert config.values["timeout"] == 120.0 and config.values["params"]["bound"] == 1.0
    with pytest.raises(ParameterError, match="pass --name"):
        load_party_config(path)
    with pytest.raises(ParameterError, match="party name"):
        load_party_config(path, "dave")


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_junk_in_any_field_is_refused_by_the_schema_with_a_typed_error(tmp_path: Path, protocol: str,
                                                                      data: st.DataObject) -> None:
    # one field (a top-level key or a parameter) replaced by arbitrary JSON: a checked configuration or a
    # ParameterError, never another exception; a role built from a checked configuration builds, or refuses typed
    config = json.loads(json.dumps({**SUM, "protocol": protocol, "params": dict(AGGREGATION["params"])
                                    if protocol == "aggregation" else {}}))
    target = config["params"] if data.draw(st.booleans()) else config
    key = data.draw(st.sampled_from(sorted(PROTOCOLS[protocol].params.fields) if target is config["params"] and
                                    PROTOCOLS[protocol].params.fields else [*sorted(config), "extra"]))
    target[key] = data.draw(json_values)
    try:
        checked = check_party_config(config, "alice", base=tmp_path)
    except ParameterError as exc:
        assert "alice's configuration" in str(exc) and "Fix:" in str(exc)
        return
    try:
        values = checked.values
        data_in = load_input(values["inputs"].get("carol"), "carol", base=tmp_path)
        build_role(values["protocol"], PartySetup("carol", tuple(values["parties"]), values["params"], data_in))
    except MpdpError:
        pass


def test_an_algorithm_configuration_and_its_shared_section_are_checked(tmp_path: Path) -> None:
    for change, key in (({"ledger": {"path": "l.json", "epsilon": "abc"}}, "ledger"),
                        ({"ledger": {"path": "l.json", "epsilon": 0}}, "ledger"),
                        ({"data": 3}, "data"), ({"run": "a b"}, "run"), ({"algorithm": "nope"}, "algorithm"),
                        ({"protocol": "secure-sum"}, "algorithm"), ({"alignment": {"parties": ["alice"]}},
                                                                    "alignment")):
        with pytest.raises(ParameterError, match=f"alice's configuration.*{key}"):
            check_party_config({**ALGORITHM, **change}, "alice", base=tmp_path)
    assert check_party_config(ALGORITHM, "alice", base=tmp_path).kind == "algorithm"
    for shared in (3, {"holdings": 3}, {"holdings": {"alice": {"features": ["x"]}}},
                   {"holdings": {"alice": None}, "rng_path": "algorithm"},
                   {"holdings": {"alice": {"features": ["x"], "label": True, "values": False, "rows": 3}}}):
        with pytest.raises(ParameterError, match="shared section"):
            check_algorithm_options("fm-logistic", shared, "alice's configuration")


def test_a_bad_synthetic_input_is_a_typed_error() -> None:
    for spec in ({"synthetic": {"seed": 1, "shape": [10**9]}}, {"synthetic": {"seed": 1, "shape": [2], "low": 5,
                                                                               "high": 1}},
                 {"synthetic": {"seed": 1, "shape": [2], "low": 0.5, "high": 2}}, {"synthetic": 3}, 3, {"x": 1}):
        with pytest.raises(ParameterError):
            load_input(spec, "alice")
    with pytest.raises(DomainError, match="at most"):
        load_input({"synthetic": {"seed": 1, "shape": [10**5, 10**5]}}, "alice")
