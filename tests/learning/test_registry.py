"""Registry extensions used by the CLI: curves for --plot, row partitions for horizontal parties."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets import mixed_tabular
from mpdp.errors import ParameterError
from mpdp.learning.spec.run import Curve, Metric, RunConfig, RunReport
from mpdp.randomness import RandomSource


def test_curves_are_validated_and_serialised() -> None:
    with pytest.raises(ParameterError, match="as many x as y"):
        Curve("acc", (1.0, 2.0), (0.5,))
    report = RunReport("a", "d", 2, 1.0, 0.0, 1.0, 0.0, None, Metric("accuracy", 0.8), None, 0.1,
                       {"bytes": 0, "messages": 0, "rounds": 0}, curves=[Curve("acc", (1, 2), (0.5, 0.6))])
    record = report.as_json()
    assert record["curves"] == [{"name": "acc", "x": [1.0, 2.0], "y": [0.5, 0.6], "x_label": "iteration",
                                 "y_label": "value"}]


def test_party_data_defaults_to_an_equal_split_and_honours_a_given_one() -> None:
    data = mixed_tabular(30, rng=RandomSource.seeded(1))
    config = RunConfig(train=data, test=data, parties=4, epsilon=1.0, delta=0.0, rng=RandomSource.seeded(2))
    parts = config.party_data()
    assert sorted(p.n for p in parts) == [7, 7, 8, 8]
    assert sorted(np.concatenate([p.values[:, 0] for p in parts])) == sorted(data.values[:, 0])  # type: ignore[index]
    given = (np.arange(10), np.arange(10, 30))
    config = RunConfig(train=data, test=data, parties=2, epsilon=1.0, delta=0.0, rng=RandomSource.seeded(2),
                       row_partition=given)
    assert [p.n for p in config.party_data()] == [10, 20]
    broken = RunConfig(train=data, test=data, parties=3, epsilon=1.0, delta=0.0, rng=RandomSource.seeded(2),
                       row_partition=given)
    with pytest.raises(ParameterError, match="3 parties"):
        broken.party_data()
