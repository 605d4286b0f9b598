"""Shared fixtures. Hypothesis strategies live in tests/strategies.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from mpdp.datasets.dataset import Dataset
from mpdp.randomness import RandomSource

# CI runs on 2 cores: keep example counts modest and deadlines off (timings are not what tests check).
settings.register_profile("mpdp", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mpdp")


@pytest.fixture
def rng() -> RandomSource:
    """A seeded source: tests are reproducible."""
    return RandomSource.seeded(20261121)


@pytest.fixture(scope="session")
def adult(request: pytest.FixtureRequest) -> Dataset:
    """The real Adult records (45,222), read-only; skips when no source can provide the files.

    The files are looked for in the default cache (``mpdp datasets fetch adult``), else fetched once into
    pytest's cache directory of this checkout.
    """
    from mpdp.datasets.adult import load_adult
    from mpdp.errors import DatasetUnavailableError

    try:
        data = load_adult(download=False)
    except DatasetUnavailableError:
        try:
            data = load_adult(cache_dir=request.config.cache.mkdir("mpdp-data"))
        except DatasetUnavailableError as exc:
            pytest.skip(f"Adult is not reachable here: {exc}")
    for array in (data.X, data.y, data.values):
        if array is not None:
            array.setflags(write=False)
    return data
