from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.datasets import kfold, kfold_indices, mixed_tabular, train_test_indices, train_test_split
from mpdp.datasets.dataset import Dataset
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource


def labelled(n: int, positives: int) -> Dataset:
    y = np.zeros(n)
    y[:positives] = 1.0
    return Dataset("toy", np.zeros((n, 1)), y, ("x",), "classification")


@given(st.integers(4, 300), st.integers(0, 2**32), st.floats(0.05, 0.6))
def test_stratified_split_partitions_rows_and_keeps_class_shares(n: int, seed: int, frac: float) -> None:
    data = labelled(n, n // 4 + 1)
    try:
        train, test = train_test_indices(data, frac, rng=RandomSource.seeded(seed))
    except ParameterError:
        assert round(frac * n) < 1 or round(frac * n) >= n
        return
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(n))
    assert test.size == round(frac * n)
    # Each class is represented in the test set in proportion, within one row.
    for cls in (0.0, 1.0):
        expected = test.size * (data.y == cls).mean()
        assert abs((data.y[test] == cls).sum() - expected) <= 1.0 + 1e-9


@given(st.integers(2, 12), st.integers(20, 120), st.integers(0, 2**32))
def test_stratified_kfold_folds_partition_rows(k: int, n: int, seed: int) -> None:
    data = labelled(n, n // 3)
    folds = kfold_indices(data, k, rng=RandomSource.seeded(seed))
    tests = np.concatenate([t for _, t in folds])
    assert sorted(tests.tolist()) == list(range(n))
    sizes = [t.size for _, t in folds]
    assert max(sizes) - min(sizes) <= 1
    for cls in (0.0, 1.0):
        counts = [(data.y[t] == cls).sum() for _, t in folds]
        assert max(counts) - min(counts) <= 1
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0 and train.size + test.size == n


def test_regression_split_and_datasets() -> None:
    data = mixed_tabular(50, task="regression", rng=RandomSource.seeded(1))
    train, test = train_test_split(data, 0.2, rng=RandomSource.seeded(2))
    assert (train.n, test.n) == (40, 10)
    assert sum(te.n for _, te in kfold(data, 5, rng=RandomSource.seeded(3))) == 50
    with pytest.raises(ParameterError, match="2 <= k <= 50"):
        kfold_indices(data, 51)
    with pytest.raises(ParameterError, match=r"\(0, 1\)"):
        train_test_indices(data, 1.0)


def test_splits_are_reproducible_and_random() -> None:
    data = labelled(100, 30)
    a = train_test_indices(data, rng=RandomSource.seeded(7))[1]
    b = train_test_indices(data, rng=RandomSource.seeded(7))[1]
    c = train_test_indices(data, rng=RandomSource.seeded(8))[1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
