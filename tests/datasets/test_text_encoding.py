"""Every CSV reader refuses a byte that is not UTF-8 with a DatasetError naming the file, line and fix, and a
header without rows says so (issue 42: raw UnicodeDecodeError; "write the column names" for a header-only file).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.cli import main
from mpdp.datasets.csvfile import load_csv
from mpdp.datasets.dataset import Attribute
from mpdp.datasets.holdings import read_party_data
from mpdp.datasets.party_files import read_party_table
from mpdp.errors import DatasetError, MpdpError
from mpdp.learning.release.format import ReleasedModel, write_model
from mpdp.learning.release.kinds import linear_parameters
from mpdp.learning.release.schema import TableSchema, read_table

SCHEMA = TableSchema((Attribute("age", "numeric", bounds=(0.0, 100.0)),
                      Attribute("city", "categorical", categories=("Lyon", "Paris"))), "y", "classification",
                     label_classes=("no", "yes"))
PARTY_SCHEMA = {"features": ["age"], "attributes": []}

GOOD = {
    "csvfile": "age,city,y\n30,Lyon,yes\n40,Paris,no\n",
    "party_files": "id,age\n1,30\n2,40\n",
    "deploy": "x:age\n30\n40\n",
    "schema": "age,city\n30,Lyon\n40,Paris\n",
}
READERS: dict[str, Callable[[Path], Any]] = {
    "csvfile": lambda p: load_csv(p, label="y"),
    "party_files": lambda p: read_party_table("alice", p, id_column="id"),
    "deploy": lambda p: read_party_data(p, "alice", PARTY_SCHEMA),
    "schema": lambda p: read_table(SCHEMA, p),
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reader=st.sampled_from(sorted(READERS)), where=st.floats(0, 1), byte=st.sampled_from([0xE9, 0xFF, 0x80, 0xC3]))
def test_a_byte_that_is_not_utf8_names_file_line_and_fix(tmp_path: Path, reader: str, where: float, byte: int) -> None:
    text = GOOD[reader].encode()
    lines = text.split(b"\n")
    line = min(int(where * 3), 2)  # the header or a data row
    lines[line] = lines[line][:1] + bytes([byte]) + (b"\x28" if byte == 0xC3 else b"") + lines[line][1:]
    path = tmp_path / f"{reader}.csv"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(DatasetError, match=rf"{path.name}, line {line + 1}, column 2.*UTF-8.*iconv"):
        READERS[reader](path)


@pytest.mark.parametrize("reader", ["csvfile", "party_files", "schema"])
def test_a_header_without_rows_says_the_file_has_no_data_rows(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "header.csv"
    path.write_text(GOOD[reader].splitlines()[0] + "\n")
    with pytest.raises(MpdpError, match="no data rows") as info:
        READERS[reader](path)
    assert "write the column names" not in str(info.value)


def test_predict_refuses_a_latin1_table_with_a_typed_message(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    model = ReleasedModel(algorithm="fm-logistic", kind="linear", schema=SCHEMA,
                          parameters=linear_parameters(np.array([0.5, -1.0, 2.0]), 0.25, task="classification"),
                          epsilon_spent=1.0, delta_spent=0.0, per_party={"party0": 1.0}, run={"dataset": "toy"})
    write_model(tmp_path / "model", model)
    table = tmp_path / "new.csv"
    table.write_bytes("age,city\n30,Lyon\n40,Orl\xe9ans\n".encode("latin-1"))
    code = main(["predict", "--model", str(tmp_path / "model"), "--dataset", str(table), "--out",
                 str(tmp_path / "out.csv")])
    err = capsys.readouterr().err
    assert code != 0 and "line 3" in err and "UTF-8" in err and "Traceback" not in err
