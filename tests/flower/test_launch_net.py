"""MPC Grad P with real processes: a SuperLink and one SuperNode per party on 127.0.0.1 over HTTPS.

One launch (about a minute on a loaded 2-core host: Flower starts a ClientApp process per message and its
SuperNodes poll every 3 s) with a client killed mid-round within the dropout threshold: the round completes
over the survivors, with the noise of ``mpdp run``'s seeded aggregators, so the model is the in-process one's
recomputed over the survivors (within fixed-point rounding).
"""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from mpdp.errors import PartyUnavailableError
from mpdp.flower.launcher import launch, wait_for_port
from mpdp.learning.distributed_erm.problem import PartyGroup, equal_parts
from tests.flower.helpers import SEED, in_memory_iterates, prepared, small_config

pytestmark = pytest.mark.net


def test_real_supernodes_with_a_client_killed_mid_round(tmp_path: Path) -> None:
    config = small_config(parties=3, T=1)
    out = launch("mpc-gradp", config, seed=SEED, tls=True, max_dropouts=1, crash={"party1": 1}, round_timeout=20.0,
                 connect_timeout=90.0, timeout=300.0, workdir=tmp_path)
    assert out["engine"] == "flower" and out["algorithm"] == "mpc-gradp"
    assert out["rounds"][0]["survivors"] == 2 and out["rounds"][0]["dropped"] == ["party1"]
    # recompute the survivors' step from the in-process run's noise (theta_0 = 0, eta = 1)
    data = prepared(config)
    indices = equal_parts(config.train, 3, rng=config.rng.spawn("rows"))
    grads = [PartyGroup(0, data.X[i][None], data.y[i][None]).local_gradients(data.problem, np.zeros(6))[0]
             for i in indices]
    noise = -3 * in_memory_iterates(config)[0] - np.sum(grads, axis=0)
    expected = -(grads[0] + grads[2] + noise) / 2
    np.testing.assert_allclose(out["theta"], expected, atol=1e-6, rtol=0)
    assert out["bytes_per_client"] > 0 and "metric" in out


def test_an_unreachable_superlink_is_reported_not_waited_for() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PartyUnavailableError, match="not reachable"):
        wait_for_port("127.0.0.1", port, timeout=0.5)
