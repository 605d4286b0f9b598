"""The model file: save -> load round trip, and the strict reader's refusals (version, checksum, truncation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.datasets.dataset import Attribute
from mpdp.datasets.encoding import make_dataset
from mpdp.errors import ModelChecksumError, ModelFileError, ModelVersionError
from mpdp.learning.release.format import ReleasedModel, parse_model, read_model, write_model
from mpdp.learning.release.kinds import linear_parameters
from mpdp.learning.release.schema import TableSchema

SCHEMA = TableSchema((Attribute("age", "numeric", bounds=(0.0, 100.0)),
                      Attribute("city", "categorical", categories=("Lyon", "Paris"))), "y", "classification",
                     label_classes=("no", "yes"))


def _model() -> ReleasedModel:
    return ReleasedModel(algorithm="fm-logistic", kind="linear", schema=SCHEMA,
                         parameters=linear_parameters(np.array([0.5, -1.0, 2.0]), 0.25, task="classification"),
                         epsilon_spent=1.0, delta_spent=0.0, per_party={"party0": 1.0}, run={"dataset": "toy"})


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = write_model(tmp_path, _model())
    back = read_model(tmp_path)
    assert path.name == "model.json" and back.parameters == _model().parameters
    assert back.schema == SCHEMA and back.per_party == {"party0": 1.0} and back.mpdp_version
    assert back.schema.label_text(np.array([1.0, 0.0])) == ["yes", "no"]
    document = json.loads(path.read_text())
    assert document["format"] == "mpdp.released-model" and document["version"] == 2


def test_schema_of_a_dataset_matches_its_encoding() -> None:
    values = np.array([[30.0, 0.0], [70.0, 1.0]])
    data = make_dataset("toy", SCHEMA.attributes, values, np.array([0.0, 1.0]), task="classification",
                        label_name="y")
    assert TableSchema.of(data, label_classes=("no", "yes")) == SCHEMA
    assert TableSchema.of(data).label_text(np.array([1.0])) == ["1"]
    np.testing.assert_array_equal(SCHEMA.encode(values), data.X)


def _tamper(path: Path, edit: str) -> bytes:
    document = json.loads(path.read_text())
    if edit == "version":
        document["version"] = 1
    elif edit == "format":
        document["format"] = "something-else"
    elif edit == "weight":
        document["body"]["parameters"]["weights"][0] = 9.0
    elif edit == "epsilon":
        document["body"]["privacy"]["epsilon_spent"] = 0.01
    return json.dumps(document).encode()


@pytest.mark.parametrize(("edit", "error"), [("version", ModelVersionError), ("format", ModelVersionError),
                                             ("weight", ModelChecksumError), ("epsilon", ModelChecksumError)])
def test_another_version_or_an_edited_body_is_refused(tmp_path: Path, edit: str, error: type[Exception]) -> None:
    path = write_model(tmp_path, _model())
    with pytest.raises(error):
        parse_model(_tamper(path, edit))


def test_truncated_damaged_or_odd_files_are_refused(tmp_path: Path) -> None:
    data = write_model(tmp_path, _model()).read_bytes()
    for bad in (data[: len(data) // 2], b"", b"\xff\xfe", b"[1, 2]", data.replace(b"0.25", b"NaN", 1),
                b'{"format": "mpdp.released-model", "format": "x"}'):
        with pytest.raises(ModelFileError):
            parse_model(bad)
    with pytest.raises(ModelFileError, match=r"model\.json"):
        read_model(tmp_path / "nowhere")


def test_a_consistent_but_invalid_body_is_refused(tmp_path: Path) -> None:
    # a body whose checksum was recomputed still has to fit its kind and schema
    import hashlib

    from mpdp.learning.release.format import _canonical

    document = json.loads(write_model(tmp_path, _model()).read_text())
    document["body"]["parameters"]["weights"] = [1.0]  # the schema encodes 3 features
    document["sha256"] = hashlib.sha256(_canonical(document["body"])).hexdigest()
    with pytest.raises(ModelFileError, match="weights"):
        parse_model(json.dumps(document).encode())


@pytest.fixture(scope="module")
def valid_file(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_model(tmp_path_factory.mktemp("model"), _model()).read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_reader_raises_only_model_file_errors(valid_file: bytes, data: st.DataObject) -> None:
    # a valid file with one byte changed, a slice removed or a JSON value replaced: a model or a ModelFileError
    raw = valid_file
    document = json.loads(raw)
    mutation = data.draw(st.sampled_from(["byte", "cut", "value"]))
    if mutation == "byte":
        at = data.draw(st.integers(0, len(raw) - 1))
        bad = raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1:]
    elif mutation == "cut":
        start = data.draw(st.integers(0, len(raw) - 1))
        bad = raw[:start] + raw[start + data.draw(st.integers(1, 40)):]
    else:
        import hashlib

        from mpdp.learning.release.format import _canonical

        body = document["body"]
        section = data.draw(st.sampled_from(["schema", "parameters", "privacy", "run"]))
        key = data.draw(st.sampled_from(sorted(body[section])))
        junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                         st.text(max_size=5), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                                  st.integers(),
                                                                                                  max_size=2))
        body[section][key] = data.draw(junk)
        document["sha256"] = hashlib.sha256(_canonical(body)).hexdigest()  # consistent: only validation can refuse
        bad = json.dumps(document).encode()
    try:
        parse_model(bad)
    except ModelFileError:
        pass


def test_an_edit_with_a_recomputed_checksum_is_refused_by_its_mac(tmp_path: Path) -> None:
    import hashlib
    import stat

    from mpdp.integrity import KEY_NAME
    from mpdp.learning.release.format import _canonical

    path = write_model(tmp_path / "model", _model())
    key = tmp_path / KEY_NAME  # beside the model directory, never in it: sharing the directory shares no key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and not list((tmp_path / "model").glob("*.key"))
    document = json.loads(path.read_text())
    document["body"]["privacy"]["epsilon_spent"] = 0.01
    document["sha256"] = hashlib.sha256(_canonical(document["body"])).hexdigest()
    path.write_text(json.dumps(document))
    parse_model(path.read_bytes())  # the checksum alone cannot tell
    with pytest.raises(ModelChecksumError, match="MAC"):
        read_model(tmp_path / "model")


def test_a_model_without_its_writers_key_cannot_be_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpdp.integrity import KEY_ENV, IntegrityKey

    write_model(tmp_path / "model", _model())
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    (elsewhere / "model").mkdir()
    (elsewhere / "model" / "model.json").write_bytes((tmp_path / "model" / "model.json").read_bytes())
    with pytest.raises(ModelChecksumError, match="no integrity key"):
        read_model(elsewhere / "model")
    IntegrityKey.load_or_create(tmp_path / "other.key")
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "other.key"))
    with pytest.raises(ModelChecksumError, match="another organisation's key"):
        read_model(elsewhere / "model")
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "mpdp-integrity.key"))  # the writer's key verifies it anywhere
    assert read_model(elsewhere / "model").parameters == _model().parameters
