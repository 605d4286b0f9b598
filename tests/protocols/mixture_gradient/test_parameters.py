"""The secure step's precision settings refuse formats that cannot hold its values."""

from __future__ import annotations

import pytest

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import PrecisionError
from mpdp.protocols.mixture_gradient import GradientPrecision


def test_precision_settings_that_cannot_hold_the_values_are_refused() -> None:
    with pytest.raises(PrecisionError, match="release_bits"):
        GradientPrecision(release_bits=49)
    with pytest.raises(PrecisionError, match="floor_log2"):
        GradientPrecision(floor_log2=-45.0)
    with pytest.raises(PrecisionError, match="floor_log2"):
        GradientPrecision(fmt=FixedPointFormat(64, 24), release_bits=20, floor_log2=-20.0)
    with pytest.raises(PrecisionError, match="capacity"):
        GradientPrecision(fmt=FixedPointFormat(128, 52), floor_log2=-36.0)
