"""NP-Agt and DP-Pred: plain ERM, objective perturbation charged to the ledger, votes and committees."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets.synthetic import mixed_tabular
from mpdp.errors import ParameterError
from mpdp.learning import erm
from mpdp.learning.pfds.baselines import committee, dp_pred_model, np_agent_model, regression_prediction
from mpdp.learning.pfds.model import Schema, encoded_features, features
from mpdp.randomness import RandomSource
from tests.learning.pfds.fixtures import RecordingLedger

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _data(task: str = "classification"):
    data = mixed_tabular(400, numeric=3, categorical=2, categories=3, task=task, rng=RandomSource.seeded(1))
    return data, Schema(data.attributes, data.task)


def test_np_agent_is_the_plain_erm_solution() -> None:
    data, schema = _data()
    theta = np_agent_model(schema, data.values, data.y, erm.LogisticLoss(), 1e-3)
    X = features(schema, data.values)
    grad = erm.Objective(erm.LogisticLoss(), X, erm.to_pm1(data.y), 1e-3).gradient(theta)
    assert np.linalg.norm(grad) < 1e-6
    assert erm.misclassification(theta, X, data.y) < 0.35


@pytest.mark.parametrize("loss", [erm.LogisticLoss(), erm.SmoothHingeLoss(h=0.5)])
def test_dp_pred_charges_epsilon_and_is_noisy(loss: erm.Loss) -> None:
    data, schema = _data()
    ledger = RecordingLedger()
    a = dp_pred_model(schema, data.values, data.y, loss, epsilon=0.5, lam=0.05, rng=RandomSource.seeded(2),
                      ledger=ledger)
    b = dp_pred_model(schema, data.values, data.y, loss, epsilon=0.5, lam=0.05, rng=RandomSource.seeded(3),
                      ledger=None)
    assert [c.epsilon for c, _ in ledger.entries] == [0.5]  # type: ignore[attr-defined]
    assert a.shape == b.shape and not np.allclose(a, b)


def test_dp_pred_refuses_the_non_smooth_hinge() -> None:
    data, schema = _data()
    with pytest.raises(ParameterError, match="smooth"):
        dp_pred_model(schema, data.values, data.y, erm.HingeLoss(), epsilon=1.0, lam=0.05,
                      rng=RandomSource.seeded(4), ledger=None)


def test_dp_pred_regression_uses_the_functional_mechanism() -> None:
    data, schema = _data("regression")
    ledger = RecordingLedger()
    model = dp_pred_model(schema, data.values, data.y, erm.SquaredLoss(), epsilon=1.0, lam=0.05,
                          rng=RandomSource.seeded(5), ledger=ledger)
    assert sum(c.epsilon for c, _ in ledger.entries) == pytest.approx(1.0)  # type: ignore[attr-defined]
    assert regression_prediction(schema, model, data.values).shape == (data.n,)


def test_committee_votes_and_averages() -> None:
    data, schema = _data()
    d = features(schema, data.values).shape[1]
    plus, minus = np.zeros(d), np.zeros(d)
    plus[-1], minus[-1] = 1.0, -1.0  # intercept-only models: always 1, always 0
    rng = RandomSource.seeded(6)
    assert np.all(committee(schema, [plus, plus, minus], data.values, "classification", rng) == 1.0)
    assert np.all(committee(schema, [minus, minus, plus], data.values, "classification", rng) == 0.0)
    ties = committee(schema, [plus, minus], data.values, "classification", rng)
    assert 0.3 < ties.mean() < 0.7  # fair coin on every tie (5 sigma over 400 records)
    reg, reg_schema = _data("regression")
    width = encoded_features(reg_schema, reg.values).shape[1] + 1
    average = committee(reg_schema, [np.full(width, 0.1), np.full(width, 0.3)], reg.values, "regression", rng)
    np.testing.assert_allclose(average, regression_prediction(reg_schema, np.full(width, 0.2), reg.values))
