from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets import load_csv, load_dataset
from mpdp.datasets.csvfile import parse_bounds_spec
from mpdp.errors import (
    DatasetError,
    DatasetUnavailableError,
    DatasetWarning,
    DomainError,
    ParameterError,
    PrivacyLeakWarning,
)

# TABLE's third row has a missing score: dropped, with a DatasetWarning asserted once below (and in
# test_csv_guessing.py); the other tests here are about something else.
pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.DatasetWarning")

TABLE = """age,city,score,member,income
34,Paris,0.5,yes,>50K
51,Lyon,1.5,no,<=50K
29,Paris,?,yes,<=50K
62,Nice,2.5,no,>50K
45,Lyon,3.0,yes,<=50K
"""


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(TABLE)
    return path


def test_types_are_inferred_and_domains_declared(table: Path) -> None:
    with pytest.warns(DatasetWarning, match=r"dropped 1 of 5 rows .*lines 4; columns score"):
        data = load_csv(table, label="income", bounds={"age": (18, 100), "score": (0, 5)},
                        categories={"city": ["Lyon", "Nice", "Paris"], "member": ["no", "yes"],
                                    "income": ["<=50K", ">50K"]})
    assert data.n == 4 and data.dropped_rows == 1  # the row with '?' is dropped, and counted
    assert [a.kind for a in data.attributes] == ["numeric", "categorical", "numeric", "categorical"]
    assert [a.integer for a in data.attributes] == [True, False, False, False]  # ages are written whole
    assert data.feature_names == ("age", "city=Lyon", "city=Nice", "city=Paris", "score", "member=no", "member=yes")
    np.testing.assert_array_equal(data.y, [1, 0, 1, 0])  # '>50K' sorts after '<=50K'
    np.testing.assert_allclose(data.X[:, 0], 2 * (np.array([34, 51, 62, 45]) - 18) / 82 - 1)
    assert data.task == "classification" and data.name == "people"


def test_inferred_domains_warn_and_say_how_to_declare(table: Path) -> None:
    with pytest.warns(PrivacyLeakWarning, match=r"age bounds \[34, 62\].*--bounds"):
        data = load_csv(table, label="income")
    assert data.attributes[0].bounds == (34.0, 62.0)


def test_declared_types_and_positive_class(table: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        data = load_csv(table, label="member", categorical=["age"], positive="no", columns=["age", "city"])
        assert data.attribute_names == ("age", "city") and data.attributes[0].kind == "categorical"
        np.testing.assert_array_equal(data.y, [0, 1, 0, 1, 0])
        reg = load_csv(table, label="score")
        assert reg.task == "regression" and reg.n == 4
        np.testing.assert_allclose(reg.y, [-1, -0.2, 0.6, 1])  # 0.5, 1.5, 2.5, 3.0 on [0.5, 3]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"label": "salary"}, ParameterError, "salary.*CSV header"),
        ({"label": "income", "numeric": ["city"]}, DomainError, r"declare it categorical \(--categorical city"),
        ({"label": "income", "bounds": {"age": (40, 100)}}, DomainError, "declared bounds"),
        ({"label": "income", "categories": {"city": ["Paris"]}}, DomainError, "declare every category"),
        ({"label": "city"}, DomainError, "exactly two classes.*--positive"),
        ({"label": "income", "missing": "error"}, DatasetError, "missing"),
        ({"label": "income", "categorical": ["age"], "numeric": ["age"]}, ParameterError, "either numeric"),
    ],
)
def test_bad_input_is_explained(table: Path, kwargs: dict, error: type[Exception], message: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(error, match=message):
            load_csv(table, **kwargs)


def test_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="existing file"):
        load_csv(tmp_path / "none.csv", label="y")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,y\n1,2,0\n1,2\n")
    with pytest.raises(DatasetError, match=r"ragged.csv:3.*2 fields"):
        load_csv(ragged, label="y")
    dup = tmp_path / "dup.csv"
    dup.write_text("a,a,y\n1,2,0\n3,4,1\n")
    with pytest.raises(DatasetError, match="unique"):
        load_csv(dup, label="y")
    semi = tmp_path / "semi.csv"
    semi.write_text("a;b;y\n1;x;0\n2;z;1\n3;x;1\n")
    with pytest.warns(PrivacyLeakWarning):
        assert load_csv(semi, label="y").d == 3


def test_bounds_spec_and_catalog_route(table: Path) -> None:
    assert parse_bounds_spec("age=18:100, score=0:5") == {"age": (18.0, 100.0), "score": (0.0, 5.0)}
    with pytest.raises(ParameterError, match="name=low:high"):
        parse_bounds_spec("age=old")
    with pytest.warns(PrivacyLeakWarning):
        data = load_dataset(str(table), label="income", categorical=["member"])
    assert data.n == 4
    with pytest.raises(ParameterError, match="--label"):
        load_dataset(str(table))


def test_categories_spec() -> None:
    from mpdp.datasets.csvfile import parse_categories_spec

    assert parse_categories_spec("city=Lyon|Nice, member=no|yes") == {"city": ("Lyon", "Nice"),
                                                                       "member": ("no", "yes")}
    with pytest.raises(ParameterError, match=r"name=a\|b\|c"):
        parse_categories_spec("city=")


def test_the_label_keeps_its_class_names(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("x,y\n1,no\n2,yes\n3,no\n")
    with pytest.warns(PrivacyLeakWarning, match=r"y \(label\) classes no\|yes"):  # read off the rows
        data = load_csv(table, label="y", bounds={"x": (0, 4)})
    assert data.label_classes == ("no", "yes") and data.y.tolist() == [0.0, 1.0, 0.0]
    assert data.rows([1, 2]).label_classes == ("no", "yes")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # declared: public, no warning
        declared = load_csv(table, label="y", bounds={"x": (0, 4)}, categories={"y": ("yes", "no")})
        assert declared.label_classes == ("yes", "no") and declared.y.tolist() == [1.0, 0.0, 1.0]
        three = tmp_path / "three.csv"
        three.write_text("x,y\n1,a\n2,b\n3,c\n")
        assert load_csv(three, label="y", bounds={"x": (0, 4)}, positive="b").label_classes == ("not b", "b")
    with pytest.raises(DomainError, match="declared classes"):
        load_csv(three, label="y", bounds={"x": (0, 4)}, categories={"y": ("a", "b")})
    with pytest.raises(ParameterError, match="two distinct class names"):
        load_csv(table, label="y", bounds={"x": (0, 4)}, categories={"y": ("no", "yes", "maybe")})
