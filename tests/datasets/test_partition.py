"""Partitioners assign every column / row to exactly one party and refuse specs that would not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.datasets import (
    horizontal_by_anchors,
    horizontal_by_fractions,
    horizontal_equal,
    mixed_tabular,
    parse_partition_spec,
    vertical_by_groups,
    vertical_by_sizes,
)
from mpdp.datasets.dataset import Dataset
from mpdp.errors import DomainError, ParameterError
from mpdp.randomness import RandomSource


@pytest.fixture(scope="module")
def table() -> Dataset:
    return mixed_tabular(200, numeric=3, categorical=3, categories=4, rng=RandomSource.seeded("partition"))


def test_spec_parsing() -> None:
    assert parse_partition_spec(" age, sex ;income,hours") == (("age", "sex"), ("income", "hours"))
    for bad in ("", "a,b;", ";a"):
        with pytest.raises(ParameterError, match="--partition"):
            parse_partition_spec(bad)


def test_vertical_groups_keep_one_hot_blocks_together(table: Dataset) -> None:
    part = vertical_by_groups(table, "num0,cat0;num1,num2,cat1,cat2", label_party=1)
    assert part.parties == 2 and part.sizes == (1 + 4, 2 + 8)
    slices = part.slices(table)
    assert slices[0].y is None and slices[1].holds_label
    np.testing.assert_array_equal(slices[1].y, table.y)
    np.testing.assert_array_equal(np.hstack([s.X for s in slices])[:, np.argsort(sum(part.columns, ()))], table.X)
    assert slices[0].values is not None and slices[0].values.shape == (200, 2)
    assert [a.name for a in slices[1].attributes] == ["num1", "num2", "cat1", "cat2"]


def test_vertical_named_groups(table: Dataset) -> None:
    part = vertical_by_groups(table, ["numeric", "categorical"])
    assert part.names == (("num0", "num1", "num2"), ("cat0", "cat1", "cat2"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("num0,num1;num2,cat0,cat1", r"not assigned: \['cat2'\]"),
        ("num0,num1,num2,cat0;cat0,cat1,cat2", "exactly one party"),
        ("num0,num1,num2,cat0,cat1;cat2,salary", "salary"),
    ],
)
def test_vertical_specs_that_do_not_partition_are_refused(table: Dataset, spec: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        vertical_by_groups(table, spec)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=6))
def test_vertical_sizes_cover_every_column_once(sizes: list[int]) -> None:
    data = mixed_tabular(20, numeric=sum(sizes), categorical=0, rng=RandomSource.seeded(len(sizes)))
    part = vertical_by_sizes(data, sizes, label_party=len(sizes) - 1)
    assert sorted(sum(part.columns, ())) == list(range(data.d))
    assert tuple(len(n) for n in part.names) == tuple(sizes)


def test_vertical_even_split_and_bad_sizes(table: Dataset) -> None:
    assert [len(n) for n in vertical_by_sizes(table, parties=4).names] == [2, 2, 1, 1]
    with pytest.raises(ParameterError, match="at most 6"):
        vertical_by_sizes(table, parties=7)
    with pytest.raises(ParameterError, match="summing to 6"):
        vertical_by_sizes(table, [2, 2])
    with pytest.raises(ParameterError, match="label_party"):
        vertical_by_sizes(table, parties=2, label_party=2)


@given(st.integers(1, 40), st.integers(0, 2**32))
def test_horizontal_equal_covers_each_row_once(m: int, seed: int) -> None:
    data = mixed_tabular(40, numeric=1, categorical=1, rng=RandomSource.seeded(0))
    part = horizontal_equal(data, m, rng=RandomSource.seeded(seed))
    rows = np.concatenate(part.indices)
    assert sorted(rows.tolist()) == list(range(40))
    assert max(part.sizes) - min(part.sizes) <= 1
    assert np.all(part.assignment() >= 0)


def test_horizontal_one_record_each_and_too_many_parties(table: Dataset) -> None:
    part = horizontal_equal(table, table.n, rng=RandomSource.seeded(1))
    assert set(part.sizes) == {1}
    np.testing.assert_array_equal(part.party(3).X, table.X[part.indices[3]])
    with pytest.raises(ParameterError, match="at most one party per record"):
        horizontal_equal(table, table.n + 1)


def test_horizontal_fractions_with_test(table: Dataset) -> None:
    part = horizontal_by_fractions(table, (0.4, 0.3, 0.1), test=0.2, rng=RandomSource.seeded(2))
    assert part.sizes == (80, 60, 20) and part.test is not None and part.test.n == 40
    everything = np.concatenate([*part.indices, part.test_indices])
    assert sorted(everything.tolist()) == list(range(table.n))
    assert part.train.n == 160 and (part.assignment() == -1).sum() == 40
    with pytest.raises(ParameterError, match="sum to 1"):
        horizontal_by_fractions(table, (0.4, 0.3), test=0.2)
    with pytest.raises(ParameterError, match="at least one row"):
        horizontal_by_fractions(table.rows(np.arange(2)), (0.5, 0.25, 0.25))


@given(st.lists(st.integers(1, 9), min_size=1, max_size=5), st.integers(3, 60))
def test_horizontal_fraction_counts_are_exact(weights: list[int], n: int) -> None:
    data = mixed_tabular(max(n, len(weights) * 3), numeric=1, categorical=0, rng=RandomSource.seeded(n))
    fractions = [w / sum(weights) for w in weights]
    fractions[-1] = 1.0 - sum(fractions[:-1])
    try:
        part = horizontal_by_fractions(data, fractions, rng=RandomSource.seeded(3))
    except ParameterError:
        return  # a party would get no row: refused, as documented
    assert sum(part.sizes) == data.n
    assert all(abs(s - f * data.n) < 1 for s, f in zip(part.sizes, fractions, strict=True))


def test_anchor_assignment_follows_distance(table: Dataset) -> None:
    part = horizontal_by_anchors(table, "num0", 5, rng=RandomSource.seeded(4))
    assert sorted(np.concatenate(part.indices).tolist()) == list(range(table.n))
    # Each agent's records sit closer (on average) to its own anchor than the data overall does.
    assert table.values is not None
    x = table.values[:, 0]
    rng = RandomSource.seeded(4)
    anchors = 100.0 * rng.random(5)
    for k, idx in enumerate(part.indices):
        if idx.size >= 10:
            assert np.abs(x[idx] - anchors[k]).mean() < np.abs(x - anchors[k]).mean()
    with pytest.raises(DomainError, match="numeric attribute"):
        horizontal_by_anchors(table, "cat0", 3)
    with pytest.raises(ParameterError, match="numeric column"):
        horizontal_by_anchors(table, "nothing", 3)


def test_anchor_probabilities_are_inverse_distance() -> None:
    """Every record at x = 10: agent i's share should be (1/|10 - a_i|) / sum_j (1/|10 - a_j|).

    Counts are binomial; a 5-sigma band fails falsely with probability < 1e-6 per agent.
    """
    from mpdp.datasets import Attribute, make_dataset

    n = 4000
    data = make_dataset("flat", (Attribute("x", "numeric", bounds=(0.0, 100.0)),), np.full((n, 1), 10.0),
                        np.zeros(n), task="classification")
    part = horizontal_by_anchors(data, "x", 3, rng=RandomSource.seeded(5))
    anchors = 100.0 * RandomSource.seeded(5).random(3)
    p = 1.0 / np.abs(10.0 - anchors)
    p /= p.sum()
    for size, pk in zip(part.sizes, p, strict=True):
        assert abs(size - n * pk) <= 5 * np.sqrt(n * pk * (1 - pk)) + 1
