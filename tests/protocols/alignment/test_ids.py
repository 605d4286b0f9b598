from __future__ import annotations

import pytest

from mpdp.errors import DatasetError, DuplicateIdError, ParameterError
from mpdp.protocols.alignment import check_ids, normalise_id


def test_the_rule_strips_folds_case_and_unifies_unicode_forms() -> None:
    assert normalise_id("  Alice@Example.COM\t") == "alice@example.com"
    assert normalise_id("STRASSE") == normalise_id("straße")
    assert normalise_id("ｉｄ１") == "id1"  # full-width forms (NFKC)
    assert normalise_id(" Bob ", case_sensitive=True) == "Bob"
    assert normalise_id("007") != normalise_id("7")


def test_duplicates_after_normalisation_are_refused_with_their_count() -> None:
    with pytest.raises(DuplicateIdError, match=r"2 identifier\(s\) repeated, in 5 rows"):
        check_ids(["a", "A ", "b", "c", " B", "b"])
    assert check_ids(["a", "A"], case_sensitive=True) == [b"a", b"A"]


def test_empty_and_missing_ids_are_refused() -> None:
    with pytest.raises(DatasetError, match=r"2 empty identifier\(s\), first at rows \[1, 3\]"):
        check_ids(["a", " ", "b", ""])
    with pytest.raises(DatasetError, match="no rows"):
        check_ids([])
    with pytest.raises(ParameterError, match="int"):
        check_ids(["a", 3])  # type: ignore[list-item]
