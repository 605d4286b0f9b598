"""The CSV loader never guesses silently: a stray word in a numeric column, an identifier column, dropped rows.

Each case is one a new user meets: a numeric column with a typo, a table that starts with an ``id`` column, and a
table with a few blank cells. The loader refuses (with the file's line numbers and values and the fix) or acts and
says so (a :class:`~mpdp.errors.DatasetWarning`, and a count on the dataset).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets import load_csv
from mpdp.errors import DatasetError, DatasetWarning, DomainError, ParameterError, PrivacyLeakWarning
from mpdp.randomness import RandomSource

N = 200


def write(tmp_path: Path, lines: list[str], name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def table(*, typo_at: int | None = None, with_id: str | None = None, blank_at: tuple[int, ...] = ()) -> list[str]:
    """N rows of income (2-decimal floats), city, member, label y; options plant the three cases.

    ``typo_at`` / ``blank_at`` index data rows (0-based): data row k is line k + 2 of the file.
    """
    rng = RandomSource.seeded("csv-guessing")
    income = np.round(20_000 + 80_000 * rng.random(N), 2)
    city = np.array(["Paris", "Lyon", "Nice"])[rng.integers(0, 3, N)]
    member = np.array(["no", "yes"])[rng.integers(0, 2, N)]
    y = rng.integers(0, 2, N)
    header = ([with_id] if with_id else []) + ["income", "city", "member", "y"]
    lines = [",".join(header)]
    for k in range(N):
        cells = [f"{income[k]:.2f}", str(city[k]), str(member[k]), str(y[k])]
        if k == typo_at:
            cells[0] = "abc"
        if k in blank_at:
            cells[1] = ""
        if with_id == "id":
            cells.insert(0, str(1000 + k))
        elif with_id:
            cells.insert(0, f"user-{k:04d}")
        lines.append(",".join(cells))
    return lines


def quiet_load(path: Path, **kwargs: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load_csv(path, label="y", **kwargs)  # type: ignore[arg-type]


# -- 1. a numeric column with a few words in it ----------------------------------------------------------------
def test_a_stray_word_in_a_numeric_column_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, table(typo_at=57))
    with pytest.raises(DomainError, match=r"income.*line 59 'abc'.*1 of 200.*--categorical income") as info:
        quiet_load(path)
    assert "1 of 200" in str(info.value)  # how many cells, so the user knows it is a typo, not a category
    with pytest.raises(DomainError, match=r"line 59.*'abc'"):  # declared numeric: bad cells refused too
        quiet_load(path, numeric=["income"])


def test_declaring_the_column_categorical_is_the_way_out(tmp_path: Path) -> None:
    path = write(tmp_path, table(typo_at=57))
    data = quiet_load(path, categorical=["income"], columns=["income", "city"])
    assert data.attributes[0].kind == "categorical"  # type: ignore[attr-defined]


def test_a_mostly_text_column_with_a_number_stays_categorical(tmp_path: Path) -> None:
    lines = ["grade,y"] + [f"{g},{k % 2}" for k, g in enumerate(["A", "B", "C", "A", "7", "B"] * 5)]
    with pytest.warns(PrivacyLeakWarning):
        data = load_csv(write(tmp_path, lines), label="y")
    assert data.attributes[0].categories == ("7", "A", "B", "C")


# -- 2. identifier columns -------------------------------------------------------------------------------------
@pytest.mark.parametrize("column", ["id", "customer"])
def test_a_column_unique_per_row_is_an_identifier_not_a_feature(tmp_path: Path, column: str) -> None:
    path = write(tmp_path, table(with_id=column))
    with pytest.warns(DatasetWarning, match=rf"{column}.*unique.*identifier.*--id-column {column}"):
        data = quiet_load(path)
    assert data.attribute_names == ("income", "city", "member")  # type: ignore[attr-defined]
    ids = data.ids  # type: ignore[attr-defined]
    assert ids is not None and len(ids) == N and ids[0] == ("1000" if column == "id" else "user-0000")


def test_an_identifier_with_gaps_is_still_no_feature_and_drops_no_row(tmp_path: Path) -> None:
    lines = table(with_id="customer")
    lines[6] = "," + lines[6].split(",", 1)[1]  # file line 7 has no customer
    with pytest.warns(DatasetWarning, match="customer is unique per row"):
        data = quiet_load(write(tmp_path, lines))
    assert data.n == N and data.ids is None and "customer" not in data.attribute_names  # type: ignore[attr-defined]


def test_naming_the_identifier_column(tmp_path: Path) -> None:
    path = write(tmp_path, table(with_id="customer"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)  # named: no warning
        data = quiet_load(path, id_column="customer")
    assert "customer" not in data.attribute_names  # type: ignore[attr-defined]
    train = data.rows(np.arange(5, 10))  # type: ignore[attr-defined]
    assert list(train.ids) == [f"user-{k:04d}" for k in range(5, 10)]


def test_an_identifier_must_be_unique_and_present(tmp_path: Path) -> None:
    lines = table(with_id="customer")
    lines[10] = lines[10].replace("user-0009", "user-0003")  # file line 11 repeats line 5
    with pytest.raises(DatasetError, match=r"customer.*'user-0003'.*lines 5 and 11"):
        quiet_load(write(tmp_path, lines), id_column="customer")
    with pytest.raises(ParameterError, match=r"id_column.*label"):
        quiet_load(write(tmp_path, table(with_id="id")), id_column="y")


def test_a_declared_type_keeps_a_unique_column_as_a_feature(tmp_path: Path) -> None:
    path = write(tmp_path, table(with_id="id"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)
        data = quiet_load(path, numeric=["id"])
    assert data.attribute_names[0] == "id" and data.ids is None  # type: ignore[attr-defined]


def test_unique_measurements_are_not_identifiers(tmp_path: Path) -> None:
    """Income (2-decimal floats) is unique per row too, but a float is a measurement, not a key; so are distinct
    whole numbers under a plain name, unless they count the rows."""
    years = [f"{1900 + 3 * k}" for k in range(N)]  # distinct whole numbers, not a row counter
    lines = [f"{line},{year}" for line, year in zip(table(), ["year", *years], strict=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)
        data = quiet_load(write(tmp_path, lines))
    assert data.attribute_names == ("income", "city", "member", "year")  # type: ignore[attr-defined]
    counter = [f"{line},{k}" for k, line in enumerate(table())]
    counter[0] = counter[0].replace(",0", ",row")
    with pytest.warns(DatasetWarning, match="row is unique per row"):
        assert "row" not in quiet_load(write(tmp_path, counter)).attribute_names  # type: ignore[attr-defined]


# -- 3. rows with missing values -------------------------------------------------------------------------------
def test_dropped_rows_are_counted_and_named(tmp_path: Path) -> None:
    path = write(tmp_path, table(blank_at=(3, 40, 41)))
    with pytest.warns(DatasetWarning, match=r"dropped 3 of 200 rows.*lines 5, 42, 43.*city.*missing='error'"):
        data = quiet_load(path)
    assert data.n == 197 and data.dropped_rows == 3  # type: ignore[attr-defined]
    assert data.rows(np.arange(10)).dropped_rows == 3  # type: ignore[attr-defined]


def test_missing_error_refuses_with_the_lines(tmp_path: Path) -> None:
    path = write(tmp_path, table(blank_at=(3, 40, 41)))
    with pytest.raises(DatasetError, match=r"lines 5, 42, 43.*3 rows.*city.*missing='drop'"):
        quiet_load(path, missing="error")


def test_complete_tables_drop_nothing_and_say_nothing(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)
        data = quiet_load(write(tmp_path, table()))
    assert data.dropped_rows == 0  # type: ignore[attr-defined]


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    lines = table(typo_at=3)
    lines.insert(2, "")  # a blank line before data row 1: the typo moves from line 5 to line 6
    with pytest.raises(DomainError, match="line 6"):
        quiet_load(write(tmp_path, lines))
