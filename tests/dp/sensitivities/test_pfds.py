"""The tree sensitivities bound (and are attained by) the worst neighbouring pair, checked by brute force."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.dp.sensitivities.pfds import (
    class_histogram_sensitivity,
    level_count_sensitivity,
    max_operator_sensitivity,
)
from mpdp.errors import ParameterError
from mpdp.learning.pfds.tree import max_operator
from mpdp.randomness import RandomSource

CANDIDATES = np.array([1.5, 3.5, 5.5])


def _utility(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return max_operator(x, y, CANDIDATES, 3)


def _neighbours(x, y, kind):
    """Every dataset at distance one under ``kind`` (new records range over a grid of values and labels)."""
    grid = [(v, c) for v in (0.0, 2.0, 4.0, 6.0) for c in range(3)]
    if kind == "add_remove":
        for i in range(x.size):
            yield np.delete(x, i), np.delete(y, i)
        for v, c in grid:
            yield np.append(x, v), np.append(y, c)
    else:
        for i in range(x.size):
            for v, c in grid:
                x2, y2 = x.copy(), y.copy()
                x2[i], y2[i] = v, c
                yield x2, y2


@pytest.mark.parametrize("kind", ["add_remove", "replace"])
def test_max_operator_sensitivity_is_tight(kind: str) -> None:
    rng = RandomSource.seeded(11)
    worst = 0.0
    for _ in range(30):
        n = int(rng.integers(1, 8, 1)[0])
        x = rng.integers(0, 7, n).astype(float)
        y = rng.below(3, n).astype(np.int64)
        base = _utility(x, y)
        for x2, y2 in _neighbours(x, y, kind):
            worst = max(worst, float(np.abs(_utility(x2, y2) - base).max()))
    assert worst == max_operator_sensitivity(kind) == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["add_remove", "replace"])
def test_histogram_sensitivities_are_tight(kind: str) -> None:
    rng = RandomSource.seeded(12)
    worst = 0.0
    for _ in range(30):
        n = int(rng.integers(1, 8, 1)[0])
        x = rng.integers(0, 7, n).astype(float)
        y = rng.below(3, n).astype(np.int64)
        cell = lambda x, y: np.bincount(np.digitize(x, CANDIDATES) * 3 + y, minlength=12)  # noqa: E731
        base = cell(x, y)
        for x2, y2 in _neighbours(x, y, kind):
            worst = max(worst, float(np.abs(cell(x2, y2) - base).sum()))
    assert worst == class_histogram_sensitivity(kind) == level_count_sensitivity(kind)  # type: ignore[arg-type]


def test_unknown_neighbouring_is_refused() -> None:
    with pytest.raises(ParameterError, match="neighbouring"):
        max_operator_sensitivity("swap")  # type: ignore[arg-type]
