"""Fidelity metrics of Figure 3: size error and the Wasserstein distance over random partitions."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import ParameterError
from mpdp.learning.data_fidelity import histogram_distance, size_error
from mpdp.randomness import RandomSource
from tests.learning.pfds.fixtures import toy_data, toy_domain


def test_size_error() -> None:
    assert size_error(100, 130) == 30.0 and size_error(100, 70) == 30.0 and size_error(5, 5) == 0.0
    with pytest.raises(ParameterError):
        size_error(-1, 3)


def test_histogram_distance_orders_fidelity() -> None:
    rng = RandomSource.seeded(1)
    domain = toy_domain()
    original, _ = toy_data(2000, rng)
    assert histogram_distance(domain, original, original, rng=RandomSource.seeded(2)) == 0.0
    resample, _ = toy_data(2000, rng)  # same distribution
    shifted = original.copy()
    shifted[:, 0] = np.minimum(shifted[:, 0] * 0.3, 10.0)  # x0 squeezed towards 0
    shifted[:, 2] = 0.0  # one category only
    near = histogram_distance(domain, original, resample, rng=RandomSource.seeded(3))
    far = histogram_distance(domain, original, shifted, rng=RandomSource.seeded(3))
    assert 0.0 <= near < 0.05 < far <= 1.0
    assert histogram_distance(domain, original, original[:0], rng=rng) == 1.0
    with pytest.raises(ParameterError, match="repeats"):
        histogram_distance(domain, original, original, repeats=0)
