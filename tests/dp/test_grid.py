"""Grid release: outputs on the grid, exact snapping, sensitivity inflation, continuous-limit shape."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mpdp.dp.grid import (
    default_grid_bits,
    gaussian_on_grid,
    grid_l1_sensitivity,
    grid_l2_sensitivity,
    laplace_on_grid,
    snap_to_grid,
)
from mpdp.errors import DomainError, ParameterError
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA


def test_default_grid_bits_gives_2_to_40_steps_per_scale() -> None:
    for scale in (1e-3, 0.7, 1.0, 3.0, 1e6):
        k = default_grid_bits(scale)
        assert 2**39 <= scale * 2.0**k < 2**41
    with pytest.raises(ParameterError, match="scale"):
        default_grid_bits(0.0)


def test_noise_lies_on_the_grid() -> None:
    rng = RandomSource.seeded("grid")
    lap = laplace_on_grid(1.5, 1000, grid_bits=20, rng=rng)
    assert np.array_equal(np.ldexp(lap, 20), np.rint(np.ldexp(lap, 20)))
    gau = gaussian_on_grid(0.3, 1000, grid_bits=30, rng=rng)
    assert np.array_equal(np.ldexp(gau, 30), np.rint(np.ldexp(gau, 30)))


def test_laplace_on_grid_has_the_laplace_shape() -> None:
    x = laplace_on_grid(2.0, 50_000, grid_bits=default_grid_bits(2.0), rng=RandomSource.seeded("lg"))
    assert stats.kstest(x, stats.laplace(scale=2.0).cdf).pvalue > ALPHA


def test_gaussian_on_grid_has_the_gaussian_shape() -> None:
    x = gaussian_on_grid(0.5, 50_000, grid_bits=default_grid_bits(0.5), rng=RandomSource.seeded("gg"))
    assert stats.kstest(x, stats.norm(scale=0.5).cdf).pvalue > ALPHA


def test_snap_is_exact_and_refuses_what_it_cannot_hold() -> None:
    assert snap_to_grid([0.5, -1.25, 3.0], 2).tolist() == [2, -5, 12]
    assert snap_to_grid(0.1, 10).tolist() == round(0.1 * 1024)
    with pytest.raises(DomainError, match="finite"):
        snap_to_grid([1.0, math.nan], 10)
    with pytest.raises(DomainError, match="coarser grid"):
        snap_to_grid([2.0**30], 40)
    with pytest.raises(ParameterError, match="grid_bits"):
        snap_to_grid([1.0], 5000)


def test_grid_sensitivities_bound_the_snapped_difference() -> None:
    rng = RandomSource.seeded("sens")
    k, dim = 6, 5
    for _ in range(200):
        a = rng.random(dim) * 10
        direction = rng.random(dim) - 0.5
        b = a + direction / np.abs(direction).sum() * 0.9  # L1 distance 0.9
        diff = snap_to_grid(a, k) - snap_to_grid(b, k)
        assert np.abs(diff).sum() <= grid_l1_sensitivity(0.9, k, dim)
        c = a + direction / np.linalg.norm(direction) * 0.9  # L2 distance 0.9
        assert np.linalg.norm(snap_to_grid(a, k) - snap_to_grid(c, k)) <= grid_l2_sensitivity(0.9, k, dim)
    assert grid_l1_sensitivity(1, 3, 2) == 8 + 2
    assert grid_l2_sensitivity(1.0, 3, 4) > 8 + 2 - 1e-12
