"""An agent's training step (Algorithm 1, line 3): the paper's fit and mpdp's cross-validated one."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import ParameterError, ShapeMismatchError
from mpdp.learning import erm
from mpdp.learning.pfds.fit import cv_fit, prior_weights
from mpdp.learning.pfds.model import PFDSParams
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.learning.pfds.test_model import PARAMS, _agents, _total

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

BETA = np.array([1.5, -1.0, 0.5, 0.0, 1.0, -0.5, 0.2])


def _linear_task(n: int, rng: RandomSource, flip: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Rows in the unit ball (6 features + intercept) labelled by a fixed linear rule, ``flip`` flipped."""
    X = erm.add_intercept((2.0 * rng.random((n, 6)) - 1.0) / np.sqrt(6))
    y = np.where(X @ BETA >= 0, 1.0, -1.0)
    return X, np.where(rng.random(n) < flip, -y, y)


def _fit(X, y, XS, yS, seed: int, **kw):  # type: ignore[no-untyped-def]
    args = {"weights": (0.0, 0.1, 0.3, 1.0), "lams": (1e-4, 1e-3, 1e-2), "folds": 3, "prior_correction": True}
    return cv_fit(erm.LogisticLoss(), X, y, XS, yS, **{**args, **kw}, rng=RandomSource.seeded(seed))


def test_pure_noise_shared_data_gets_weight_zero() -> None:
    """Shared records with labels independent of the features only hurt: CV must refuse them every time."""
    for seed in range(5):
        rng = RandomSource.seeded(100 + seed)
        X, y = _linear_task(300, rng)
        XS = erm.add_intercept((2.0 * rng.random((2000, 6)) - 1.0) / np.sqrt(6))
        yS = np.where(rng.random(2000) < 0.5, 1.0, -1.0)
        choice = _fit(X, y, XS, yS, seed)
        assert choice.shared_weight == 0.0, choice.cv_error
        assert set(choice.cv_error) == {(w, lam) for w in (0.0, 0.1, 0.3, 1.0) for lam in (1e-4, 1e-3, 1e-2)}


def test_useful_shared_data_is_used() -> None:
    """Positive control: clean shared records from the agent's own distribution are taken on most seeds."""
    taken = 0
    for seed in range(5):
        rng = RandomSource.seeded(200 + seed)
        X, y = _linear_task(40, rng, flip=0.0)
        XS, yS = _linear_task(2000, rng, flip=0.0)
        taken += _fit(X, y, XS, yS, seed).shared_weight > 0
    assert taken >= 4


def test_prior_correction_matches_the_own_class_balance() -> None:
    yS = np.array([1.0] * 30 + [-1.0] * 70)
    y_own = np.array([1.0] * 1 + [-1.0] * 3)
    w = prior_weights(yS, y_own)
    assert w.sum() == pytest.approx(1.0) and w[yS > 0].sum() == pytest.approx(0.25)
    np.testing.assert_allclose(prior_weights(np.ones(4), y_own), 0.25)  # one class only: left uniform


def test_regression_uses_squared_error() -> None:
    rng = RandomSource.seeded(3)
    X = erm.add_intercept((2.0 * rng.random((60, 3)) - 1.0) / np.sqrt(3))
    y = X @ np.array([0.5, -0.5, 0.2, 0.1])
    choice = cv_fit(erm.SquaredLoss(), X, y, X[:0], y[:0], weights=(0.0, 0.5), lams=(1e-3,), folds=3,
                    prior_correction=True, rng=rng)
    assert choice.shared_weight == 0.0 and set(choice.cv_error) == {(0.0, 1e-3)}  # nothing shared: w = 0 only
    assert np.mean((X @ choice.theta - y) ** 2) < 1e-3


@pytest.mark.parametrize("variant", ["mpdp", "paper"])
def test_fitting_spends_nothing_and_the_ledger_total_stays_epsilon(variant: str) -> None:
    _, _, agents, ledgers = _agents(PFDSParams(**{**PARAMS.__dict__, "variant": variant}), epsilon=0.7)
    run_protocol(agents, rng=RandomSource.seeded(8))
    before = {n: list(led.entries) for n, led in ledgers.items()}
    for name, agent in agents.items():
        theta = agent.fit(erm.LogisticLoss(), rng=RandomSource.seeded(9))
        assert np.all(np.isfinite(theta))
        assert ledgers[name].entries == before[name]
    for name in ("a0", "a1", "a2"):
        assert _total(ledgers[name]) == pytest.approx(0.7, rel=1e-12)
    choice = agents["a3"].fit_choice(erm.LogisticLoss(), rng=RandomSource.seeded(10))
    if variant == "mpdp":
        assert choice.shared_weight in PARAMS.shared_weights and choice.lam in PARAMS.lams
    else:
        assert np.isnan(choice.shared_weight) and choice.lam == PARAMS.lam


def test_bad_options_are_refused() -> None:
    for kw, match in (({"variant": "best"}, "variant"), ({"shared_weights": ()}, "shared_weights"),
                      ({"shared_weights": (0.0, -0.1)}, "shared_weights"), ({"lams": (0.0,)}, "lams"),
                      ({"lams": [1e-3]}, "lams"), ({"cv_folds": 1}, "cv_folds"), ({"max_shared": 0}, "max_shared"),
                      ({"prior_correction": "yes"}, "prior_correction")):
        with pytest.raises(ParameterError, match=match):
            PFDSParams(**kw)  # type: ignore[arg-type]
    _, _, agents, _ = _agents(PARAMS)
    with pytest.raises(ParameterError, match="variant"):
        agents["a0"].fit(erm.LogisticLoss(), variant="best")  # type: ignore[arg-type]
    X, y = _linear_task(10, RandomSource.seeded(1))
    with pytest.raises(ShapeMismatchError, match="own/shared"):
        _fit(X, y, X[:, :3], y, 1)
    with pytest.raises(ParameterError, match="cv_folds"):
        _fit(X, y, X, y, 1, folds=11)


def test_a_one_record_agent_falls_back_to_the_paper_fit() -> None:
    _, _, agents, _ = _agents(PARAMS)
    run_protocol(agents, rng=RandomSource.seeded(14))
    agent = agents["a3"]
    agent.values, agent.labels = agent.values[:1], agent.labels[:1]
    mpdp = agent.fit(erm.LogisticLoss(), rng=RandomSource.seeded(15))
    np.testing.assert_allclose(mpdp, agent.fit(erm.LogisticLoss(), variant="paper"), atol=1e-6)
