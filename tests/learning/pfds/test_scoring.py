"""The agents' own evaluation roles: test errors only leave an agent, spend is tallied exactly, bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets.synthetic import mixed_tabular
from mpdp.dp.accounting import PrivacyLedger
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import BudgetExceededError, ParameterError, ShapeMismatchError
from mpdp.learning import erm
from mpdp.learning.pfds import baselines
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams
from mpdp.learning.pfds.schema import Schema, features
from mpdp.learning.pfds.scoring import (
    AgentEvaluation,
    DPPredSharer,
    LocalAgent,
    SpendTally,
    loss_for,
    theta_error,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

DATA = mixed_tabular(500, numeric=3, categorical=2, categories=3, rng=RandomSource.seeded(11))
SCHEMA = Schema(DATA.attributes, "classification")
TRAIN, TEST = slice(0, 400), slice(400, 500)


def _evaluation(fits: tuple[str, ...] = ()) -> AgentEvaluation:
    return AgentEvaluation(DATA.values[TEST], DATA.y[TEST], ("logistic", "svm"), fits)


def test_a_bad_evaluation_is_refused() -> None:
    with pytest.raises(ShapeMismatchError, match="test records"):
        AgentEvaluation(DATA.values[:0], DATA.y[:0], ("logistic",))
    with pytest.raises(ShapeMismatchError, match="test records"):
        AgentEvaluation(DATA.values[TEST], DATA.y[:3], ("logistic",))
    with pytest.raises(ParameterError, match="loss"):
        AgentEvaluation(DATA.values[TEST], DATA.y[TEST], ("hinge",))
    with pytest.raises(ParameterError, match="fits"):
        AgentEvaluation(DATA.values[TEST], DATA.y[TEST], ("logistic",), ("magic",))


def test_the_tally_sums_what_the_ledger_accepted_and_nothing_it_refused() -> None:
    ledger = PrivacyLedger(epsilon=1.0)
    tally = SpendTally(ledger)
    for _ in range(10):
        tally.spend(PrivacyCost(epsilon=0.1), label="step")
    assert tally.epsilon == 1.0  # exactly rounded: ten 0.1s sum to 0.9999999999999999 with +=
    with pytest.raises(BudgetExceededError):
        tally.spend(PrivacyCost(epsilon=0.1), label="one too many")
    assert tally.epsilon == 1.0 and ledger.spent.epsilon == pytest.approx(1.0)


def test_np_agent_returns_the_test_error_of_its_own_fit_only() -> None:
    values, labels = DATA.values[TRAIN], DATA.y[TRAIN]
    agent = LocalAgent("a", values, labels, SCHEMA, _evaluation(), lam=1e-3)
    run = run_protocol({"a": agent}, rng=RandomSource.seeded(1))
    assert set(run.results["a"]) == {"errors"} and run.messages == 0  # no model leaves the agent
    X_test = features(SCHEMA, DATA.values[TEST])
    for name in ("logistic", "svm"):
        theta = baselines.np_agent_model(SCHEMA, values, labels, loss_for(name), 1e-3)
        assert run.results["a"]["errors"][name] == theta_error(name, theta, X_test, DATA.y[TEST])
    # with CV over a grid holding only lam, the choice is lam: the same fit, the same error
    cv = LocalAgent("a", values, labels, SCHEMA, _evaluation(), lam=1e-3, cv=True, lams=(1e-3,))
    assert run_protocol({"a": cv}, rng=RandomSource.seeded(1)).results["a"]["errors"] == run.results["a"]["errors"]


def test_a_dp_pred_sharer_releases_its_model_and_charges_epsilon() -> None:
    ledger = PrivacyLedger(epsilon=0.5)
    sharer = DPPredSharer("a", DATA.values[TRAIN], DATA.y[TRAIN], SCHEMA, "logistic", epsilon=0.5, lam=0.05,
                          ledger=ledger)
    result = run_protocol({"a": sharer}, rng=RandomSource.seeded(2)).results["a"]
    assert result["spent"] == 0.5 and ledger.spent.epsilon == pytest.approx(0.5)
    assert result["model"].shape == (features(SCHEMA, DATA.values[:1]).shape[1],)
    with pytest.raises(BudgetExceededError):  # the budget is spent: a second release is refused
        run_protocol({"a": sharer}, rng=RandomSource.seeded(3))


def test_only_evaluated_pfds_agents_return_errors_and_none_returns_a_predictor() -> None:
    params = PFDSParams(h_max=3, t=4, p=2, max_leaves=16)
    names = ["a0", "a1", "a2"]
    agents = {n: PFDSAgent(n, DATA.values[k:400:3], DATA.y[k:400:3], SCHEMA, params, 1.0, names,
                           ledger=PrivacyLedger(epsilon=1.0),
                           evaluation=_evaluation(("paper", "mpdp")) if n == "a1" else None)
              for k, n in enumerate(names)}
    results = run_protocol(agents, rng=RandomSource.seeded(4)).results
    shared = {"synthetic", "received", "spent", "released", "tree"}
    assert set(results["a0"]) == set(results["a2"]) == shared
    assert set(results["a1"]) == shared | {"errors", "choices"}
    assert set(results["a1"]["errors"]) == {"paper/logistic", "mpdp/logistic", "paper/svm", "mpdp/svm"}
    assert all(0.0 <= e <= 1.0 for e in results["a1"]["errors"].values())
    assert all(results[n]["spent"] == pytest.approx(1.0, rel=1e-12) for n in names)
    # the paper fit's error is that of the agent's own fit on its own plus the shared records
    theta = agents["a1"].fit(erm.LogisticLoss(), variant="paper")
    X_test = features(SCHEMA, DATA.values[TEST])
    assert results["a1"]["errors"]["paper/logistic"] == theta_error("logistic", theta, X_test, DATA.y[TEST])
    assert np.isfinite(results["a1"]["choices"]["logistic"]).all()
