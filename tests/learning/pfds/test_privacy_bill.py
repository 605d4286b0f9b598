"""One privacy bill per agent in every engine: what ``mpdp run`` reports, what each deployed agent's own ledger
file records and what the estimator's ledger is charged come from the deployment's ``cost``.

Each case launches one process per agent (a few seconds on a 2-core host), on the tiny data of the seeded runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.learning.pfds import PFDSClassifier
from mpdp.learning.pfds.deployment import PfdsDeployment
from mpdp.learning.pfds.spec import Method
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.learning.spec.run import RunConfig
from tests.run_cases import CASES, DATA

pytestmark = [pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning"), pytest.mark.net]


def _config(method: Method) -> RunConfig:
    args = build_parser().parse_args(["run", method.value, *DATA, *CASES[method.value]])
    return build_config(get_algorithm(method.value), args)


@pytest.mark.parametrize("method", list(Method))
def test_memory_deployed_and_estimator_ledgers_agree(tmp_path: Path, method: Method) -> None:
    pytest.importorskip("grpc")
    from mpdp.deploy.launcher import launch

    spec = get_algorithm(method.value)
    memory = spec.run(_config(method))
    config = _config(method)
    plan = PfdsDeployment().plan(method.value, config)
    costs = {n: PfdsDeployment().cost(shared_parameters(plan), n) for n in plan.parties}
    bill = {n: (c.epsilon, c.delta, c.mechanism) for n, c in costs.items() if c is not None}
    # in memory: the report's per-agent spend is each agent's cost (nothing for an agent that releases nothing)
    assert memory.per_party_epsilon == {n: 0.0 if c is None else c.epsilon for n, c in costs.items()}
    assert memory.epsilon_spent == max(memory.per_party_epsilon.values())
    # deployed: each agent's own ledger file holds exactly its cost, charged once before it sent anything
    launch(method.value, config, spec.run, seed=5, timeout=60.0, connect_timeout=60.0, keep=tmp_path)
    entries = {name: PrivacyLedger.open(tmp_path / name / "ledger.json").entries for name in plan.parties}
    assert all(len(e) <= 1 for e in entries.values()), entries
    assert {name: (e.cost.epsilon, e.cost.delta, e.cost.mechanism) for name, es in entries.items() for e in es} == bill
    if method is not Method.PFDS:
        return
    # the estimator: one entry, a record's guarantee (the largest agent cost), the same mechanism
    ledger = PrivacyLedger(epsilon=10.0)
    train = config.train
    assert train.values is not None
    PFDSClassifier(config.epsilon, agents=config.parties, attributes=train.attributes, h_max=3, ledger=ledger,
                   random_state=0).fit(train.values, train.y)
    (entry,) = ledger.entries
    assert (entry.cost.epsilon, entry.cost.delta, entry.cost.mechanism) == max(bill.values())
    assert entry.cost.epsilon == memory.epsilon_spent
