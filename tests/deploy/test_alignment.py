"""Deployed parties align their own unaligned files privately (ECDH PSI over gRPC) before they train.

One launch (a few seconds on a loaded 2-core host): each data party gets only its own file, keyed by an id
column, shuffled and holding records the other party lacks; the run equals the in-memory run on aligned data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("grpc")

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.datasets.holdings import PartyData, write_party_data
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.launcher import launch
from mpdp.errors import ConfigMismatchError
from mpdp.learning.registry import get_algorithm
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.net

ARGV = ["fm-logistic", "--dataset", "synthetic-mixed:n=200", "--seed", "5"]


def _config() -> Any:
    return build_config(get_algorithm("fm-logistic"), build_parser().parse_args(["run", *ARGV]))


def _unaligned(data: PartyData, extra: int, tag: str, rng: RandomSource) -> PartyData:
    """``data`` keyed by ids ``rec<i>``, plus ``extra`` records only this party holds, in a private order."""
    copies = rng.permutation(data.n)[:extra]
    X = np.vstack([data.X, data.X[copies]])
    y = None if data.y is None else np.concatenate([data.y, data.y[copies]])
    ids = [f"rec{i}" for i in range(data.n)] + [f"{tag}{i}" for i in range(extra)]
    order = rng.permutation(len(ids))
    return PartyData(data.party, X[order], data.features, None if y is None else y[order],
                     ids=tuple(ids[i] for i in order.tolist()))


def test_parties_align_their_own_files_then_train_as_in_memory(tmp_path: Path) -> None:
    config = _config()
    plan = deployment_for("fm-logistic").plan("fm-logistic", config)
    holders = [n for n, d in plan.data.items() if d is not None]
    spec = {"parties": holders, "min_intersection": 10}
    rng = RandomSource.seeded(11)
    overrides: dict[str, dict[str, Any]] = {n: {"alignment": spec} for n in plan.parties}
    for k, name in enumerate(holders):
        own = plan.data[name]
        assert own is not None
        path = tmp_path / name / "own.csv"  # each party's folder holds its file only
        path.parent.mkdir()
        write_party_data(path, _unaligned(own, 15 + 5 * k, f"only{name}-", rng), id_column="id")
        overrides[name].update(data=str(path), id_column="id")
    memory = get_algorithm("fm-logistic").run(_config())
    result = launch("fm-logistic", _config(), seed=5, timeout=60.0, connect_timeout=60.0,
                    overrides=overrides)
    launched = result.report
    # the records' agreed order differs from the training set's: sums agree up to float rounding
    assert launched.metric.name == memory.metric.name
    assert launched.metric.value == pytest.approx(memory.metric.value, rel=1e-9, abs=1e-12)
    assert launched.epsilon_spent == memory.epsilon_spent
    assert launched.communication == memory.communication  # the algorithm's traffic, alignment apart
    n = plan.data[holders[0]].n  # type: ignore[union-attr]
    for name in holders:
        report = result.parties[name]
        assert report["aligned_rows"] == n
        assert report["rows_per_party"] == {h: n + 15 + 5 * j for j, h in enumerate(holders)}
        assert report["alignment"]["bytes_sent"] > 0
        assert report["communication"]["bytes_sent"] > 0
    assert "aligned_rows" not in result.parties["server"]  # the server takes no part in the alignment


def test_a_party_without_the_agreed_alignment_is_named() -> None:
    """The alignment is part of the compared shared section: a party whose file differs is named."""
    spec = {"parties": ["party0", "party1"]}
    overrides: dict[str, dict[str, Any]] = {"server": {"alignment": spec}}  # the data parties' files lack it
    with pytest.raises(ConfigMismatchError, match=r"server.*on \['alignment'\]|on \['alignment'\].*server"):
        launch("fm-logistic", _config(), seed=5, timeout=20.0, connect_timeout=60.0, overrides=overrides)
