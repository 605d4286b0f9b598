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


def test_an_integer_attribute_keeps_its_type_through_the_file_and_the_writer() -> None:
    from mpdp.errors import ModelFileError
    from mpdp.learning.release.schema import format_value

    age = Attribute("age", "numeric", bounds=(17.0, 90.0), integer=True)
    hours = Attribute("hours", "numeric", bounds=(1.0, 99.0))
    schema = TableSchema((age, hours, SCHEMA.attributes[1]), "y", "classification")
    written = schema.to_dict()
    assert written["attributes"][0]["integer"] is True and "integer" not in written["attributes"][1]
    assert TableSchema.from_dict(written) == schema  # and a file without the key reads as real-valued
    assert [format_value(age, v) for v in (50.70693479, 12.0, 95.5)] == ["51", "17", "90"]
    assert [format_value(hours, v) for v in (50.70693479, 120.0)] == ["50.70693479", "99"]
    assert format_value(SCHEMA.attributes[1], 1.2) == "Paris"
    written["attributes"][0]["integer"] = "yes"
    with pytest.raises(ModelFileError, match="integer: received 'yes'"):
        TableSchema.from_dict(written)
