"""The same run costs the same in every engine: an estimator's ledger records what ``mpdp run`` spends.

``tests/deploy/test_launch.py`` compares the deployed parties' ledgers with the in-memory run, and the Flower tests
their nodes'; here each horizontal algorithm's scikit-learn estimator, fitted on the same records with its
defaults and the run's options, must record one entry of the run's ``epsilon_spent`` and ``delta_spent``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mpdp.cli import main
from mpdp.datasets import load_dataset
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.learning.registry import algorithms
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

DATA = "synthetic-mixed:n=200"
ERM = {name: (["--parties", "2", *extra], {"method": name, "parties": 2, **kwargs})
       for name, extra, kwargs in (
           *((m, ["--option", "T=3"], {"T": 3}) for m in ("local-gradp", "mpc-gradp")),
           *((m, [], {}) for m in ("pathak", "local-outp", "local-objp", "mpc-outp")))}
#: algorithm -> (the run's extra words, the estimator's parameters for the same run)
CASES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "ofpa": (["--parties", "2", "--option", "max_rounds=2"], {"method": "ofpa", "parties": 2, "max_rounds": 2}),
    "ofaa": (["--parties", "2", "--option", "max_rounds=3", "--option", "noise=fresh"],
             {"method": "ofaa", "parties": 2, "max_rounds": 3, "noise": "fresh"}),
    "pfds": (["--parties", "3", "--option", "h_max=3"], {"agents": 3, "h_max": 3}),
    **ERM,
}


def test_every_horizontal_estimator_is_compared() -> None:
    specs = algorithms()
    horizontal = {n for n, s in specs.items() if s.estimator is not None and s.partitioning == "horizontal"
                  and s.task == "classification"}
    assert horizontal == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_estimator_records_what_the_run_spends(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, parameters = CASES[name]
    assert main(["run", name, "--dataset", DATA, "--seed", "5", *argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    data = load_dataset(DATA, rng=RandomSource.seeded(5))
    ledger = PrivacyLedger(epsilon=10.0, delta=0.5)
    estimator = algorithms()[name].estimator.load()(ledger=ledger, random_state=0, **parameters)  # type: ignore[union-attr]
    estimator.fit(data.X, data.y)
    assert len(ledger.entries) == 1
    assert ledger.spent.epsilon == pytest.approx(record["epsilon_spent"], rel=1e-12)
    assert ledger.spent.delta == pytest.approx(record["delta_spent"], rel=1e-12, abs=1e-300)
