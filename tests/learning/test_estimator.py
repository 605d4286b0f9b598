"""scikit-learn compatibility of mpdp's estimators: the estimator checks, clone, Pipeline, search and budget.

The checks a DP estimator cannot pass are listed in :data:`EXPECTED_FAILURES` with the reason; every other
check of ``sklearn.utils.estimator_checks`` must pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from mpdp.dp.accounting import PrivacyLedger
from mpdp.errors import BudgetExceededError, DomainError, ParameterError
from mpdp.learning.distributed_erm import DistributedERMClassifier, DistributedERMRegressor
from mpdp.learning.functional_mechanism import FMLinearRegression, FMLogisticRegression, SolveSettings
from mpdp.learning.ofpa_ofaa import OfpaOfaaClassifier
from mpdp.learning.pfds import PFDSClassifier
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

#: Why a check fails for a DP classifier whose label domain {0, 1} is public (part of the sensitivity):
LABELS_01 = ("labels other than 0 and 1 are refused: the label domain {0, 1} is public and part of the "
             "sensitivity, so mpdp never re-encodes labels read off the private rows")
LABEL_CHECKS = {
    "check_estimators_dtypes": LABELS_01 + " (the check uses labels 1 and 2)",
    "check_classifier_data_not_an_array": LABELS_01 + " (labels 1 and 2)",
    "check_classifiers_classes": LABELS_01 + " (string labels)",
    "check_fit2d_1feature": LABELS_01 + " (labels 1 and 2)",
}
ONE_LABEL = ("trained on one class, a noisy model need not predict that class; refusing the fit instead would "
             "reveal that the private labels hold one class")
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "FMLogisticRegression": LABEL_CHECKS,
    "OfpaOfaaClassifier": LABEL_CHECKS,
    "DistributedERMClassifier": LABEL_CHECKS,
    "PFDSClassifier": LABEL_CHECKS,
}


def _expected(estimator: Any) -> dict[str, str]:
    expected = dict(EXPECTED_FAILURES.get(type(estimator).__name__, {}))
    if getattr(estimator, "method", None) == "mpc-outp":  # one noisy release of the averaged minimisers
        expected["check_classifiers_one_label"] = ONE_LABEL
    return expected


# clip=True: the checks feed data outside the public domain [-1, 1]; clipping is a fixed per-record map.
# The budgets are large enough for the checks' accuracy thresholds on their small data sets.
CHECKED = [
    FMLogisticRegression(1.0, clip=True, random_state=0),
    FMLinearRegression(1.0, clip=True, random_state=0),
    OfpaOfaaClassifier("ofpa", 1.0, clip=True, random_state=0),
    OfpaOfaaClassifier("ofaa", 1.0, clip=True, random_state=0),
    DistributedERMClassifier("mpc-gradp", 10.0, T=30, clip=True, random_state=0),
    DistributedERMClassifier("mpc-outp", 10.0, clip=True, random_state=0),
    DistributedERMRegressor("mpc-gradp", 10.0, T=30, clip=True, random_state=0),
    PFDSClassifier(5.0, agents=2, clip=True, random_state=0),
]


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected)
def test_sklearn_estimator_checks(estimator: Any, check: Callable[[Any], None]) -> None:
    check(estimator)


def _data(n: int = 400, d: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = RandomSource.seeded(seed)
    X = 2 * rng.random((n, d)) - 1
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * X @ np.linspace(-1, 1, d)))).astype(float)
    return X, y


def test_clone_shares_the_ledger_and_never_replays_a_stream() -> None:
    ledger = PrivacyLedger(epsilon=10.0)
    parent = RandomSource.seeded(3)
    model = FMLogisticRegression(1.0, rng=parent, ledger=ledger, settings=SolveSettings(trim_factor=0.5))
    a, b = clone(model), clone(model)
    assert a.ledger is ledger and b.ledger is ledger
    assert a.rng is not parent and b.rng is not parent
    assert a.rng.bytes(16) != b.rng.bytes(16)  # independent children, not copies of one stream
    assert a.get_params()["settings"] == model.settings and a.epsilon == 1.0
    # reproducible under a seeded parent: the same sequence of clones draws the same streams
    again = clone(FMLogisticRegression(1.0, rng=RandomSource.seeded(3)))
    assert again.rng.bytes(16) == clone(FMLogisticRegression(1.0, rng=RandomSource.seeded(3))).rng.bytes(16)


def test_random_state_repeats_a_fit_and_refuses_a_second_source() -> None:
    X, y = _data()
    one = FMLogisticRegression(1.0, random_state=5).fit(X, y).coef_
    np.testing.assert_array_equal(one, FMLogisticRegression(1.0, random_state=5).fit(X, y).coef_)
    assert not np.array_equal(one, FMLogisticRegression(1.0, random_state=6).fit(X, y).coef_)
    with pytest.raises(ParameterError, match="at most one"):
        FMLogisticRegression(1.0, random_state=5, rng=RandomSource.seeded(1)).fit(X, y)


def test_pipeline_and_cross_validation() -> None:
    X, y = _data(600)
    pipe = Pipeline([("scale", FunctionTransformer(lambda Z: Z / 2)),
                     ("fm", FMLogisticRegression(5.0, random_state=1))])
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.all((scores > 0.5) & (scores <= 1.0))
    reg = cross_val_score(FMLinearRegression(10.0, random_state=2), X, 0.5 * X[:, 0], cv=3)
    assert np.all(reg > 0.5)  # R^2, higher is better


def test_grid_search_spends_once_per_fit_on_a_shared_ledger() -> None:
    X, y = _data(600)
    ledger = PrivacyLedger(epsilon=100.0)
    grid = {"settings": [SolveSettings(trim_factor=t) for t in (0.1, 0.3, 1.0)], "fit_intercept": [True, False]}
    search = GridSearchCV(FMLogisticRegression(1.0, ledger=ledger), grid, cv=3, error_score="raise").fit(X, y)
    fits = 3 * 2 * 3 + 1  # candidates x folds, plus the refit on all rows
    assert sum(e.cost.count for e in ledger.entries) == fits
    assert ledger.spent.epsilon == pytest.approx(fits * 1.0)
    assert search.best_estimator_.ledger is ledger and search.best_score_ > 0.5


def test_an_exhausted_ledger_refuses_the_search() -> None:
    X, y = _data(300)
    ledger = PrivacyLedger(epsilon=4.0)  # four fits of eps = 1
    grid = {"fit_intercept": [True, False]}
    with pytest.raises(BudgetExceededError, match="budget"):
        GridSearchCV(FMLogisticRegression(1.0, ledger=ledger), grid, cv=3, error_score="raise").fit(X, y)
    assert sum(e.cost.count for e in ledger.entries) == 4  # the refused fit recorded nothing


def test_bad_labels_are_refused_in_sklearn_words() -> None:
    X, _ = _data(50)
    with pytest.raises(DomainError, match="Only binary classification"):
        FMLogisticRegression(1.0).fit(X, np.arange(50) % 3)
    with pytest.raises(DomainError, match="Unknown label type: continuous"):
        FMLogisticRegression(1.0).fit(X, X[:, 0] / 3)
    with pytest.raises(ParameterError, match="requires y"):
        FMLogisticRegression(1.0).fit(X, None)


FACTORIES: dict[str, Callable[[PrivacyLedger | None], Any]] = {
    "fm": lambda ledger: FMLogisticRegression(5.0, ledger=ledger),
    "ofaa": lambda ledger: OfpaOfaaClassifier("ofaa", 5.0, ledger=ledger),
    "mpc-outp": lambda ledger: DistributedERMClassifier("mpc-outp", 5.0, ledger=ledger),
    "pfds": lambda ledger: PFDSClassifier(5.0, agents=2, ledger=ledger),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_classifier_round_trips_clone_pipeline_and_search(name: str) -> None:
    X, y = _data(300)
    ledger = PrivacyLedger(epsilon=1000.0, delta=1e-6)  # mpc-outp also spends a delta below 1e-16
    model = FACTORIES[name](ledger)
    copy = clone(model)
    assert copy.get_params(deep=False).keys() == model.get_params(deep=False).keys() and copy.ledger is ledger
    pipe = Pipeline([("half", FunctionTransformer(lambda Z: Z / 2)), ("model", model)])
    assert cross_val_score(pipe, X, y, cv=2).shape == (2,)
    search = GridSearchCV(model, {"epsilon": [4.0, 5.0]}, cv=2, error_score="raise").fit(X, y)
    assert search.best_estimator_.predict(X).shape == (300,)
    assert search.best_estimator_.predict_proba(X).shape == (300, 2)
    # 2 cross-validation fits, 2 x 2 search fits and the refit at epsilon 4 or 5 (pure DP: basic composition)
    assert ledger.spent.epsilon == pytest.approx(2 * 5.0 + 2 * (4.0 + 5.0) + search.best_params_["epsilon"])


def test_dpvi_estimators_clone_and_keep_their_ledgers() -> None:
    from mpdp.learning.dpvi import DPVI, VerticalDPVI

    ledger = PrivacyLedger(epsilon=10.0, delta=1e-3)
    parties = {"bank": PrivacyLedger(epsilon=10.0, delta=1e-3)}
    model = VerticalDPVI(components=2, epochs=1, ledger=ledger, party_ledgers=parties, party_names=("bank",),
                         rng=RandomSource.seeded(1))
    copy = clone(model)
    assert copy.ledger is ledger and copy.party_ledgers is parties and copy.rng is not model.rng
    assert copy.set_params(components=3).components == 3 and model.components == 2
    assert clone(DPVI(epsilon=None, noise_multiplier=1.0)).get_params()["noise_multiplier"] == 1.0


def test_an_unfitted_estimator_refuses_to_predict() -> None:
    X, _ = _data(10)
    for model in (FMLogisticRegression(1.0), OfpaOfaaClassifier(), DistributedERMRegressor(), PFDSClassifier()):
        with pytest.raises(ParameterError, match="call fit"):
            model.predict(X)


def test_a_copy_for_another_process_never_duplicates_an_in_memory_budget(tmp_path: Any) -> None:
    import pickle

    from mpdp.errors import PrivacyError

    with pytest.raises(PrivacyError, match="file-backed ledger"):
        pickle.dumps(FMLogisticRegression(1.0, ledger=PrivacyLedger(epsilon=1.0)))
    on_disk = PrivacyLedger.open_or_create(tmp_path / "budget.json", epsilon=2.0)
    copy = pickle.loads(pickle.dumps(FMLogisticRegression(1.0, ledger=on_disk)))
    X, y = _data(100)
    copy.fit(X, y)
    assert PrivacyLedger.open(tmp_path / "budget.json").spent.epsilon == 1.0  # the copy spent on the shared file
