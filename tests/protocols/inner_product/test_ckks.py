"""CKKS cross products over a number of records that is not a multiple of the slot count (regression: the
unpadded last chunk made ``acc + term`` add CKKS vectors of different sizes)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.randomness import RandomSource

pytest.importorskip("tenseal")


@pytest.mark.parametrize("rows", [4097, 5000])
def test_rows_beyond_one_chunk(rows: int) -> None:
    from mpdp.protocols.inner_product import CkksBackend, CrossProductSpec, simulate_cross_product
    from mpdp.protocols.inner_product.ckks_parameters import ckks_error_bound

    rng = RandomSource.seeded(rows)
    X, Y = 2 * rng.random((rows, 2)) - 1, 2 * rng.random((rows, 1)) - 1
    spec = CrossProductSpec(left="a", right="b", rows=rows, left_cols=2, right_cols=1, backend=CkksBackend())
    run = simulate_cross_product(X, Y, spec, rng=rng)
    total = run.results["a"].share + run.results["b"].share
    assert np.abs(total - X.T @ Y).max() <= ckks_error_bound(rows, 1.0)
