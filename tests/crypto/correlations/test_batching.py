"""A batch draws and deals exactly what spec-by-spec calls do."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.correlations import deal, draw
from mpdp.randomness import RandomSource

from .mixed_specs import MIXED as _MIXED


@pytest.mark.parametrize("prg", [True, False])
def test_a_batch_draws_and_deals_exactly_what_spec_by_spec_calls_do(prg: bool) -> None:
    from mpdp.crypto.correlations import CorrelationBatch
    from mpdp.crypto.prg import AesCtrPrg

    def source(label: str) -> object:
        return AesCtrPrg(label.encode() * 16) if prg else RandomSource.seeded(label)

    specs = _MIXED * 2
    work = CorrelationBatch(specs)
    streams = [source(f"s{i}") for i in range(3)]
    parts = [work.draw(s, index=i) for i, s in enumerate(streams)]
    masks = work.masks(source("own"))
    words = np.concatenate([work.corrections(parts, masks, lo, hi) for lo, hi in ((0, 5), (5, 6), (6, len(specs)))])
    assert words.shape == (work.reply_offsets[-1],) and words.dtype == np.uint64
    ref_streams, own = [source(f"s{i}") for i in range(3)], source("own")
    for i, spec in enumerate(specs):
        fix = deal(spec, ref_streams, own=own)
        for name, shape, lo, hi in work.correction_layout[i]:
            assert np.array_equal(words[lo:hi].reshape(shape), fix[name]), (spec, name)
    mirrors = [source(f"s{i}") for i in range(3)]
    for i, spec in enumerate(specs):
        for j, m in enumerate(mirrors):
            want = draw(spec, m, index=j)
            assert want.keys() == parts[j][i].keys()
            assert all(np.array_equal(want[k], parts[j][i][k]) and want[k].dtype == parts[j][i][k].dtype
                       for k in want), (spec, j)
