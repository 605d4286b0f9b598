from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets.party_files import joined_rows, parse_data_spec, read_party_table, write_table
from mpdp.errors import DatasetError, DatasetUnavailableError, ParameterError


def test_the_id_column_is_kept_apart_from_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("x;id;z\n1;A7; 2\n3;b8;4\n")
    table = read_party_table("alice", path, id_column="id")
    assert (table.columns, table.ids, table.cells, table.n) == (("x", "z"), ["A7", "b8"], [["1", "2"], ["3", "4"]], 2)


def test_joined_rows_put_aligned_rows_side_by_side(tmp_path: Path) -> None:
    a = write_table(tmp_path / "a.csv", ["id", "x"], [["p", 1], ["q", 2], ["r", 3]])
    b = write_table(tmp_path / "b.csv", ["y", "id"], [[30, "r"], [10, "p"]])
    ta, tb = read_party_table("a", a, id_column="id"), read_party_table("b", b, id_column="id")
    header, rows = joined_rows([ta, tb], {"a": np.array([2, 0]), "b": np.array([0, 1])})
    assert header == ["x", "y"] and rows == [["3", "30"], ["1", "10"]]
    with pytest.raises(DatasetError, match="the same number"):
        joined_rows([ta, tb], {"a": np.array([2]), "b": np.array([0, 1])})
    with pytest.raises(DatasetError, match="held by one party only"):
        joined_rows([ta, ta], {"a": np.array([0])})


def test_unusable_files_and_specs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="existing file"):  # the one reader's wording
        read_party_table("a", tmp_path / "none.csv", id_column="id")
    bad = tmp_path / "bad.csv"
    bad.write_text("key,x\n1,2\n")
    with pytest.raises(DatasetError, match="name the identifier column"):
        read_party_table("a", bad, id_column="id")
    bad.write_text("id,x\n1,2\n3\n")
    with pytest.raises(DatasetError, match=r"bad\.csv:3"):
        read_party_table("a", bad, id_column="id")
    assert parse_data_spec("alice=~/a.csv")[0] == "alice"
    with pytest.raises(ParameterError, match="PARTY=FILE"):
        parse_data_spec("a.csv")
