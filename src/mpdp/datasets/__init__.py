"""Datasets, loaders with checksums, synthetic generators and partitioners.

* :mod:`~mpdp.datasets.dataset`: :class:`Dataset` (encoded view X in [-1, 1] + y, attribute view) and
  :class:`Attribute`;
* :mod:`~mpdp.datasets.encoding`: the one encoding every loader uses (public bounds, one-hot categoricals);
* :mod:`~mpdp.datasets.adult`: UCI Adult with pinned checksums, a cache and bounded downloads;
* :mod:`~mpdp.datasets.csvfile`: the user's own CSV table;
* :mod:`~mpdp.datasets.synthetic`: generators for the papers' synthetic settings;
* :mod:`~mpdp.datasets.partition`: vertical and horizontal partitions between parties;
* :mod:`~mpdp.datasets.splits`: train/test splits and (stratified) k-fold;
* :mod:`~mpdp.datasets.catalog`: datasets by name (``adult``, ``synthetic-linear:s=0.5``, ``my.csv``).
"""

from mpdp.datasets.adult import ADULT_GROUPS, ADULT_SHA256, fetch_adult, load_adult
from mpdp.datasets.catalog import DATASETS, load_dataset
from mpdp.datasets.csvfile import load_csv
from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.datasets.encoding import encode, make_dataset
from mpdp.datasets.partition import (
    HorizontalPartition,
    VerticalPartition,
    VerticalSlice,
    horizontal_by_anchors,
    horizontal_by_fractions,
    horizontal_equal,
    parse_partition_spec,
    vertical_by_groups,
    vertical_by_sizes,
)
from mpdp.datasets.splits import kfold, kfold_indices, train_test_indices, train_test_split
from mpdp.datasets.synthetic import SyntheticTask, logistic_with_optimum, mixed_tabular, sparse_linear_regression

__all__ = [
    "ADULT_GROUPS",
    "ADULT_SHA256",
    "DATASETS",
    "Attribute",
    "Dataset",
    "HorizontalPartition",
    "SyntheticTask",
    "VerticalPartition",
    "VerticalSlice",
    "encode",
    "fetch_adult",
    "horizontal_by_anchors",
    "horizontal_by_fractions",
    "horizontal_equal",
    "kfold",
    "kfold_indices",
    "load_adult",
    "load_csv",
    "load_dataset",
    "logistic_with_optimum",
    "make_dataset",
    "mixed_tabular",
    "parse_partition_spec",
    "sparse_linear_regression",
    "train_test_indices",
    "train_test_split",
    "vertical_by_groups",
    "vertical_by_sizes",
]
