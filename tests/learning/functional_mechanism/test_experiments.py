"""Paper 000's registry entries: ``mpdp run fm-*`` reports and the encoding's row-L1 bounds."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets import mixed_tabular, train_test_split
from mpdp.errors import ParameterError
from mpdp.learning import registry
from mpdp.learning.functional_mechanism.objective import attribute_l1_bounds
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def test_registered() -> None:
    assert {"fm-linear", "fm-logistic"} <= set(registry.algorithms())
    assert {"000-table1", "000-table2", "000-table3"} <= set(registry.reproductions())
    assert registry.get_algorithm("fm-logistic").backends == ("shares", "ckks", "paillier")


def test_attribute_l1_bounds_count_one_per_attribute() -> None:
    data = mixed_tabular(200, numeric=2, categorical=3, categories=4, rng=RandomSource.seeded(1))
    cols = [list(range(0, data.d // 2)), list(range(data.d // 2, data.d))]
    bounds = attribute_l1_bounds(data, cols)
    assert np.all(np.abs(data.X[:, cols[0]]).sum(axis=1) <= bounds[0] + 1e-12)
    assert np.all(np.abs(data.X[:, cols[1]]).sum(axis=1) <= bounds[1] + 1e-12)
    assert sum(bounds) <= len(data.attributes) + 1 and sum(bounds) < data.d


@pytest.mark.parametrize("name", ["fm-logistic", "fm-linear"])
def test_run_report(name: str) -> None:
    task = "classification" if name == "fm-logistic" else "regression"
    data = mixed_tabular(600, task=task, rng=RandomSource.seeded(2))
    train, test = train_test_split(data, 0.2, stratify=False, rng=RandomSource.seeded(3))
    config = RunConfig(train=train, test=test, parties=1, epsilon=5.0, delta=0.0,
                                rng=RandomSource.seeded(4), options={"trim": 0.3})
    report = registry.get_algorithm(name).run(config)
    record = report.as_json()
    assert record["epsilon_spent"] == 5.0 and record["delta_spent"] == 0.0
    assert set(record["per_party_epsilon"]) == {"party0"} and record["per_party_epsilon"]["party0"] == 5.0
    assert np.isfinite(record["metric"]["value"]) and record["non_private"] is not None
    assert record["phases"]["solve"] >= 0
    with pytest.raises(ParameterError, match="options"):
        registry.get_algorithm(name).run(RunConfig(train=train, test=test, parties=1, epsilon=1.0,
                                                            delta=0.0, rng=RandomSource.seeded(4),
                                                            options={"bogus": 1}))


def test_table2_quick_reproduction_runs_every_k() -> None:
    table = registry.get_reproduction("000-table2").run(
        registry.ReproOptions(rng=RandomSource.seeded(5), repetitions=1, quick=True))
    fm_rows = [r for r in table.rows if r.setting["method"] == "fm"]
    assert {(r.setting["s"], r.setting["parties"]) for r in fm_rows} == {
        (s, k) for s in (0.1, 0.5, 1.0) for k in (2, 4, 8)}
    assert all(np.isfinite(r.ours_mean) and r.paper is not None for r in table.rows)
    assert any("Delta_f" in note for note in table.notes)
