"""Renormalization constants (paper 002, 4.5.1) and the floor of Algorithm 4."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpdp.crypto.renormalization import RenormalizationParams, renormalize
from mpdp.errors import DomainError, ParameterError


def test_constants_cancel_and_values_are_held() -> None:
    a = np.array([[-700.0, -705.0, -690.0], [-1.0, -2.0, -3.0]])
    params = RenormalizationParams(parties=2)
    e, m = renormalize(a, params)
    assert np.array_equal(m, [-690.0, -1.0])
    assert np.all(e.max(axis=1) == 1.0)
    # the constants cancel: the ratios are those of the original densities
    r = e / e.sum(axis=1, keepdims=True)
    ref = np.exp(a - a.max(axis=1, keepdims=True))
    assert np.allclose(r, ref / ref.sum(axis=1, keepdims=True), rtol=1e-12)


def test_floor_bounds_every_product() -> None:
    params = RenormalizationParams(parties=3, min_log2=-30, floor_log2=-20)
    rng = np.random.default_rng(0)
    logs = [rng.normal(0, 30, size=(50, 4)) for _ in range(3)]
    es = [renormalize(a, params)[0] for a in logs]
    assert np.all(np.prod(es, axis=0) >= 2.0**-20 * (1 - 1e-12))
    assert math.isclose(params.floor, 2.0 ** (-20 / 3))


def test_bad_inputs() -> None:
    params = RenormalizationParams(parties=2)
    with pytest.raises(DomainError, match="-inf"):
        renormalize(np.array([[-np.inf, -np.inf]]), params)
    with pytest.raises(DomainError, match="NaN"):
        renormalize(np.array([[np.nan, 0.0]]), params)
    with pytest.raises(DomainError, match=r"\+inf"):  # found from the row maxima, whichever the row
        renormalize(np.array([[0.0, -1.0], [-2.0, np.inf]]), params)
    with pytest.raises(DomainError, match="NaN"):  # a NaN beside -inf rows is reported as the NaN
        renormalize(np.array([[-np.inf, -np.inf], [np.nan, 1.0]]), params)
    e, _ = renormalize(np.array([[-np.inf, 0.0]]), params)  # -inf beside a finite value: a zero factor
    assert np.array_equal(e, [[0.0, 1.0]])
    with pytest.raises(ParameterError, match="min_log2"):
        RenormalizationParams(parties=2, min_log2=1.0)
    with pytest.raises(ParameterError, match="floor_log2"):
        RenormalizationParams(parties=2, min_log2=-20, floor_log2=-40)
