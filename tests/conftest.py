"""Shared fixtures. Hypothesis strategies live in tests/strategies.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from mpdp.randomness import RandomSource

# CI runs on 2 cores: keep example counts modest and deadlines off (timings are not what tests check).
settings.register_profile("mpdp", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mpdp")


@pytest.fixture
def rng() -> RandomSource:
    """A seeded source: tests are reproducible."""
    return RandomSource.seeded(20261121)
