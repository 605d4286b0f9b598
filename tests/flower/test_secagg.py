"""The hub-relayed aggregation without Flower: sealed boxes, the relay endpoint, the dropout threshold."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.sealed_box import keypair, open_sealed, seal
from mpdp.errors import PartyUnavailableError, ProtocolAbortError, TamperedCiphertextError
from mpdp.flower.relay import RelayEndpoint
from mpdp.flower.secagg import SERVER, aggregator_step, client_step, server_combine, survivors_message
from mpdp.protocols.aggregation import AggregateResult, AggregationSpec
from mpdp.randomness import RandomSource


def _spec(max_dropouts: int = 1) -> AggregationSpec:
    return AggregationSpec(server=SERVER, aggregators=("agg0", "agg1"), clients={f"c{j}": 1 for j in range(4)}, dim=3,
                           bound=1.0, max_dropouts=max_dropouts, fmt=FixedPointFormat(64, 24))


def test_the_survivors_sum_through_the_relay() -> None:
    rng = RandomSource.seeded(3)
    spec = _spec()
    keys = {a: keypair(rng.spawn(a)) for a in spec.aggregators}
    x = {c: rng.random((3,)) * 2 - 1 for c in spec.clients}
    boxes = {c: client_step(spec, c, x[c], {a: k[1] for a, k in keys.items()}, run="r", step=1, rng=rng.spawn(c))
             for c in spec.clients if c != "c2"}
    told = survivors_message(spec, list(boxes), rng=rng)
    replies = {}
    for a in spec.aggregators:
        _, _, endpoint = aggregator_step(spec, a, keys[a][0], {c: b[a] for c, b in boxes.items()}, told, run="r",
                                         step=1, rng=rng)
        replies[a] = endpoint.outbox[SERVER]
    result, _ = server_combine(spec, replies, told, rng=rng)
    assert isinstance(result, AggregateResult) and result.count == 3
    expected = sum(v for c, v in x.items() if c != "c2")
    np.testing.assert_allclose(result.total, expected, atol=spec.error_bound, rtol=0)


def test_more_dropouts_than_tolerated_abort_before_any_sum() -> None:
    with pytest.raises(ProtocolAbortError, match="2 of 4 clients dropped out"):
        survivors_message(_spec(max_dropouts=1), ["c0", "c3"], rng=RandomSource.seeded(0))


def test_a_box_for_another_round_or_aggregator_is_refused() -> None:
    rng = RandomSource.seeded(4)
    private, public = keypair(rng)
    box = seal(public, b"share", b"run|1|c0|agg0", rng=rng)
    assert open_sealed(private, box, b"run|1|c0|agg0") == b"share"
    with pytest.raises(TamperedCiphertextError):
        open_sealed(private, box, b"run|2|c0|agg0")
    with pytest.raises(TamperedCiphertextError):
        open_sealed(keypair(rng)[0], box, b"run|1|c0|agg0")


def test_a_party_missing_from_the_batch_is_unavailable_at_once() -> None:
    with pytest.raises(PartyUnavailableError, match="dropped out"):
        RelayEndpoint("agg0", {}).recv("c1", timeout=100.0)
