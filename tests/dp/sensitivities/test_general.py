"""General sensitivities against brute force over random neighbouring datasets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.dp.sensitivities.general import (
    bounded_mean_sensitivity,
    bounded_sum_sensitivity,
    clipped_gradient_mean_sensitivity,
    clipped_gradient_sum_sensitivity,
    count_sensitivity,
    histogram_sensitivity,
    l1_from_l2,
)
from mpdp.errors import DomainError, ParameterError
from mpdp.randomness import RandomSource

values = st.lists(st.floats(min_value=-2, max_value=3), min_size=1, max_size=20)


@given(values, st.floats(min_value=-2, max_value=3), st.integers(min_value=0, max_value=19))
def test_sum_and_mean_bounds_hold(xs: list[float], new: float, i: int) -> None:
    i %= len(xs)
    removed = xs[:i] + xs[i + 1 :]
    replaced = [*xs[:i], new, *xs[i + 1 :]]
    assert abs(sum(xs) - sum(removed)) <= bounded_sum_sensitivity(lower=-2, upper=3) + 1e-12
    assert abs(sum(xs) - sum(replaced)) <= bounded_sum_sensitivity(lower=-2, upper=3, neighbouring="replace") + 1e-12
    n = len(xs)
    assert abs(np.mean(xs) - np.mean(replaced)) <= bounded_mean_sensitivity(lower=-2, upper=3, n=n) + 1e-12


def test_bounds_are_attained() -> None:
    assert bounded_sum_sensitivity(lower=-2, upper=3) == 3
    assert bounded_sum_sensitivity(lower=-2, upper=3, neighbouring="replace") == 5
    assert count_sensitivity() == 1 and count_sensitivity("replace") == 0
    assert histogram_sensitivity() == 1 and histogram_sensitivity(neighbouring="replace") == 2
    assert histogram_sensitivity(norm="l2", neighbouring="replace") == math.sqrt(2)


@given(st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=8))
def test_clipped_gradients(dim: int, batch: int) -> None:
    rng = RandomSource.seeded(dim * 100 + batch)
    grads = (rng.random((batch, dim)) - 0.5) * 10
    clip = 1.5
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    clipped = grads * np.minimum(1, clip / np.maximum(norms, 1e-300))
    other = (rng.random(dim) - 0.5) * 10
    other = other * min(1, clip / np.linalg.norm(other))
    swapped = clipped.copy()
    swapped[0] = other
    removed = clipped[1:].sum(0)
    assert np.linalg.norm(clipped.sum(0) - removed) <= clipped_gradient_sum_sensitivity(clip_norm=clip) + 1e-12
    assert np.linalg.norm(clipped.sum(0) - swapped.sum(0)) <= clipped_gradient_sum_sensitivity(
        clip_norm=clip, neighbouring="replace") + 1e-12
    assert np.linalg.norm(clipped.mean(0) - swapped.mean(0)) <= clipped_gradient_mean_sensitivity(
        clip_norm=clip, batch_size=batch) + 1e-12
    v = rng.random(dim) - 0.5
    assert np.abs(v).sum() <= l1_from_l2(float(np.linalg.norm(v)), dim) + 1e-12


def test_bad_inputs() -> None:
    with pytest.raises(ParameterError, match="neighbouring"):
        count_sensitivity("swap")
    with pytest.raises(DomainError, match="lower"):
        bounded_sum_sensitivity(lower=3, upper=-2)
    with pytest.raises(ParameterError, match="n"):
        bounded_mean_sensitivity(lower=0, upper=1, n=0)
    with pytest.raises(ParameterError, match="neighbouring"):
        clipped_gradient_mean_sensitivity(clip_norm=1.0, batch_size=4, neighbouring="add_remove")
    with pytest.raises(ParameterError, match="clip_norm"):
        clipped_gradient_sum_sensitivity(clip_norm=math.inf)
    with pytest.raises(ParameterError, match="norm"):
        histogram_sensitivity(norm="linf")
    with pytest.raises(ParameterError, match="dim"):
        l1_from_l2(1.0, 0)
