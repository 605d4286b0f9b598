from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.datasets import Attribute, Dataset, encode, make_dataset
from mpdp.datasets.encoding import scale_to_pm1
from mpdp.errors import DomainError, ParameterError

ATTRS = (
    Attribute("age", "numeric", bounds=(0.0, 100.0)),
    Attribute("colour", "categorical", categories=("red", "green", "blue")),
    Attribute("hours", "numeric", bounds=(1.0, 99.0)),
)


def test_encode_numeric_and_one_hot() -> None:
    values = np.array([[0.0, 2.0, 1.0], [100.0, 0.0, 50.0], [50.0, 1.0, 99.0]])
    X, names, cols = encode(ATTRS, values)
    assert names == ("age", "colour=red", "colour=green", "colour=blue", "hours")
    assert cols == ((0,), (1, 2, 3), (4,))
    np.testing.assert_allclose(X[:, 0], [-1.0, 1.0, 0.0])
    np.testing.assert_array_equal(X[:, 1:4], [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_allclose(X[:, 4], [-1.0, 0.0, 1.0])


def test_out_of_bounds_is_an_error_unless_clipping_is_asked() -> None:
    values = np.array([[120.0, 0.0, 1.0]])
    with pytest.raises(DomainError, match=r"age.*within the declared bounds \[0, 100\].*clip"):
        encode(ATTRS, values)
    data = make_dataset("t", ATTRS, values, np.array([1.0]), task="classification", out_of_bounds="clip")
    assert data.X[0, 0] == 1.0 and data.values is not None and data.values[0, 0] == 100.0


def test_bad_category_codes_and_nan_are_refused() -> None:
    with pytest.raises(DomainError, match=r"integer codes 0\.\.2"):
        encode(ATTRS, np.array([[1.0, 3.0, 1.0]]))
    with pytest.raises(DomainError, match="non-finite"):
        scale_to_pm1([np.nan], (0, 1))
    with pytest.raises(ParameterError, match="low < high"):
        scale_to_pm1([0.5], (1, 0))


@given(st.lists(st.tuples(st.floats(0, 100), st.integers(0, 2), st.floats(1, 99)), min_size=1, max_size=30))
def test_rows_respect_the_schema_norm_bound(rows: list[tuple[float, int, float]]) -> None:
    data = make_dataset("t", ATTRS, np.array(rows, dtype=float), np.zeros(len(rows)), task="classification")
    assert data.row_norm_bound == pytest.approx(np.sqrt(3))  # 2 numeric + 1 categorical, not sqrt(d = 5)
    assert np.all(np.abs(data.X) <= 1.0)
    assert np.linalg.norm(data.unit_ball(), axis=1).max() <= 1.0 + 1e-12


def test_norm_bound_without_attributes_is_sqrt_d_and_rejects_non_one_hot_blocks() -> None:
    plain = Dataset("p", np.zeros((2, 4)), np.zeros(2), ("a", "b", "c", "d"), "classification")
    assert plain.row_norm_bound == 2.0
    attrs = (Attribute("c", "categorical", categories=("x", "y")),)
    broken = Dataset("b", np.array([[1.0, 1.0]]), np.zeros(1), ("c=x", "c=y"), "classification", attributes=attrs,
                     values=np.zeros((1, 1)), encoded_columns=((0, 1),))
    with pytest.raises(DomainError, match="one 1 per row"):
        _ = broken.row_norm_bound


def test_synthetic_values_are_put_in_their_attribute_domain() -> None:
    """A twin keeps each column's type: whole numbers for an integer attribute, codes for categories."""
    age = Attribute("age", "numeric", bounds=(17.0, 90.0), integer=True)
    np.testing.assert_array_equal(age.in_domain([50.70693479, 16.2, 90.6, 33.5]), [51, 17, 90, 34])
    hours = Attribute("hours", "numeric", bounds=(1.0, 99.0))
    np.testing.assert_array_equal(hours.in_domain([50.70693479, 0.2, 120.0]), [50.70693479, 1.0, 99.0])
    colour = Attribute("colour", "categorical", categories=("red", "green", "blue"))
    np.testing.assert_array_equal(colour.in_domain([0.2, 2.7, -1.0]), [0, 2, 0])
    odd = Attribute("x", "numeric", bounds=(0.5, 3.5), integer=True)  # whole numbers inside the bounds only
    np.testing.assert_array_equal(odd.in_domain([0.1, 3.9]), [1, 3])
    with pytest.raises(ParameterError, match="integer flag of colour"):
        Attribute("colour", "categorical", categories=("a",), integer=True)
    with pytest.raises(ParameterError, match="a range holding a whole number"):
        Attribute("x", "numeric", bounds=(0.2, 0.8), integer=True)
