"""Train/test splits and (stratified) k-fold cross-validation, driven by an explicit ``rng``.

Stratification uses one interleaved order: rows are shuffled within each class and then sorted by their
relative position ``(rank + 1/2) / class_size``, so every prefix of the order holds each class in proportion
(within one row per class). A test set is a prefix; fold ``f`` takes the positions ``f, f + k, f + 2k, ...``.
For regression tasks the order is a plain random permutation. K-fold deals the classes (each shuffled, one
after another) round-robin to the folds.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["kfold", "kfold_indices", "stratified_order", "train_test_indices", "train_test_split"]

Index = npt.NDArray[np.int64]


def stratified_order(y: npt.NDArray[np.float64], *, rng: RandomSource | None = None) -> Index:
    """A random order of ``range(len(y))`` whose every prefix is stratified by the values of ``y``."""
    rng = resolve(rng)
    n = len(y)
    key = np.empty(n, dtype=np.float64)
    for value in np.unique(y):
        members = np.flatnonzero(y == value)
        shuffled = members[rng.permutation(members.size)]
        key[shuffled] = (np.arange(members.size) + 0.5) / members.size
    # Ties between classes at equal relative positions are broken at random, not by class order.
    tiebreak = rng.permutation(n)
    return np.lexsort((tiebreak, key)).astype(np.int64)


def _order(data: Dataset, stratify: bool, rng: RandomSource | None) -> Index:
    if stratify and data.task == "classification":
        return stratified_order(data.y, rng=rng)
    return resolve(rng).permutation(data.n)


def train_test_indices(
    data: Dataset, test_fraction: float = 0.2, *, stratify: bool = True, rng: RandomSource | None = None
) -> tuple[Index, Index]:
    """Sorted row indices ``(train, test)``; the test set has ``round(test_fraction * n)`` rows."""
    if not 0 < test_fraction < 1:
        raise ParameterError(explain("test_fraction", test_fraction, "a number in (0, 1)", "pass e.g. 0.2"))
    n_test = round(test_fraction * data.n)
    if not 1 <= n_test < data.n:
        raise ParameterError(explain("test rows", n_test, f"between 1 and {data.n - 1}",
                                     f"use a different test_fraction or more than {data.n} rows"))
    order = _order(data, stratify, rng)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def train_test_split(
    data: Dataset, test_fraction: float = 0.2, *, stratify: bool = True, rng: RandomSource | None = None
) -> tuple[Dataset, Dataset]:
    """``(train, test)`` datasets; see :func:`train_test_indices`."""
    train, test = train_test_indices(data, test_fraction, stratify=stratify, rng=rng)
    return data.rows(train), data.rows(test)


def kfold_indices(
    data: Dataset, k: int = 10, *, stratify: bool = True, rng: RandomSource | None = None
) -> list[tuple[Index, Index]]:
    """``k`` pairs of sorted ``(train, test)`` indices; the test sets partition the rows exactly once.

    Fold sizes differ by at most one; with ``stratify`` (classification only) so do each class's counts.
    """
    if not 2 <= k <= data.n:
        raise ParameterError(explain("k", k, f"2 <= k <= {data.n}", "pass e.g. k=10"))
    rng = resolve(rng)
    if stratify and data.task == "classification":
        # Classes one after another, each shuffled; dealing the concatenation round-robin keeps both every
        # class's per-fold count and the fold sizes within one of each other.
        order = np.concatenate([members[rng.permutation(members.size)]
                                for members in (np.flatnonzero(data.y == v) for v in np.unique(data.y))])
    else:
        order = rng.permutation(data.n)
    folds = [np.sort(order[f::k]) for f in range(k)]
    everything = np.arange(data.n)
    return [(np.setdiff1d(everything, test, assume_unique=True), test) for test in folds]


def kfold(
    data: Dataset, k: int = 10, *, stratify: bool = True, rng: RandomSource | None = None
) -> Iterator[tuple[Dataset, Dataset]]:
    """``(train, test)`` datasets for each of ``k`` folds; see :func:`kfold_indices`."""
    for train, test in kfold_indices(data, k, stratify=stratify, rng=rng):
        yield data.rows(train), data.rows(test)
