"""Named protocols build the same roles from a configuration on every party."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import ParameterError
from mpdp.protocols.catalog import PROTOCOLS, PartySetup, build_role, load_input
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def test_aggregation_from_a_configuration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    params = {"server": "s", "aggregators": ["s", "a"], "clients": {"c1": 3, "c2": 1}, "dim": 2, "bound": 1.0,
              "weighted": True, "weight_bound": 10.0}
    data = {"c1": np.array([[0.5, -0.5, 2.0], [0.25, 0.0, 1.0], [1.0, 1.0, 3.0]]), "c2": np.array([-1.0, 0.5, 4.0])}
    np.save(tmp_path / "c1.npy", data["c1"])
    parties = ("s", "a", "c1", "c2")
    inputs = {"c1": str(tmp_path / "c1.npy"), "c2": None}
    roles = {p: build_role("aggregation", PartySetup(p, parties, params, load_input(inputs.get(p), p)
                                                     if p != "c2" else data["c2"])) for p in parties}
    result = run_protocol(roles, rng=RandomSource.seeded(2)).results["s"]
    rows = np.vstack([data["c1"], data["c2"]])
    assert result.weight_total == pytest.approx(10.0, abs=1e-5)
    assert np.allclose(result.total, (rows[:, :2] * rows[:, 2:]).sum(0), atol=1e-5)


def test_unknown_protocols_and_missing_parameters_are_named() -> None:
    with pytest.raises(ParameterError, match="one of"):
        build_role("nope", PartySetup("a", ("a", "b")))
    with pytest.raises(ParameterError, match=r"params\.server"):
        build_role("aggregation", PartySetup("a", ("a", "b"), {}))
    with pytest.raises(ParameterError, match="synthetic input"):
        load_input({"synthetic": {"shape": [2]}}, "a")
    assert "secure-sum" in PROTOCOLS
