"""Reading a CSV in a model's schema: missing columns, unseen categories, non-numbers refused; bounds clipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets.dataset import Attribute
from mpdp.errors import SchemaMismatchError
from mpdp.learning.release.schema import TableSchema, read_table

SCHEMA = TableSchema((Attribute("age", "numeric", bounds=(0.0, 100.0)),
                      Attribute("city", "categorical", categories=("Lyon", "Paris"))), "y", "classification")


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "new.csv"
    path.write_text(text)
    return path


def test_columns_are_found_by_name_and_extra_ones_ignored(tmp_path: Path) -> None:
    read = read_table(SCHEMA, _csv(tmp_path, "id,city,age,y\n1,Paris,30,1\n2,Lyon,70,0\n"))
    np.testing.assert_array_equal(read.values, [[30.0, 1.0], [70.0, 0.0]])
    assert read.clipped == {}


def test_out_of_bounds_values_are_clipped_and_counted_or_refused(tmp_path: Path) -> None:
    path = _csv(tmp_path, "age,city\n130,Paris\n-5,Lyon\n50,Lyon\n")
    read = read_table(SCHEMA, path)
    np.testing.assert_array_equal(read.values[:, 0], [100.0, 0.0, 50.0])
    assert read.clipped == {"age": 2}
    with pytest.raises(SchemaMismatchError, match=r"line 2: '130', line 3: '-5'"):
        read_table(SCHEMA, path, out_of_bounds="error")


@pytest.mark.parametrize(("text", "match"), [
    ("age\n30\n", r"missing \['city'\]"),
    ("age,city\n30,Nice\n", "unseen categories at line 2: 'Nice'"),
    ("age,city\nabc,Lyon\n", "non-numbers at line 2: 'abc'"),
    ("age,city\n,Lyon\n", "missing values at line 2"),
    ("age,city\n30\n", "fields"),
])
def test_a_table_that_differs_from_the_schema_is_refused(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(SchemaMismatchError, match=match):
        read_table(SCHEMA, _csv(tmp_path, text))
