"""Paper 001: secure weighted averaging, noise scales and accounting, convergence, bad input, registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpdp.datasets.dataset import Dataset
from mpdp.dp.sensitivities.ofpa_ofaa import ofaa_budget
from mpdp.errors import BudgetExceededError, DatasetError, DomainError, ParameterError, ShapeMismatchError
from mpdp.learning import registry
from mpdp.learning.erm import LogisticLoss, Objective, misclassification, solve, to_pm1
from mpdp.learning.ofpa_ofaa.experiments import first_attributes
from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, fit, prepare_parties, prepare_rows
from mpdp.learning.ofpa_ofaa.parties import (
    DataOwner,
    OwnerRows,
    fixed_quadratic_mask,
    newton_logistic,
    ofaa_ridge,
)
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource


def _data(n: int, d: int, seed: int, *, separable: bool = True, name: str = "synthetic") -> Dataset:
    """Rows uniform in [-1, 1]^d; label from a fixed hyperplane (with a margin gap when separable)."""
    rng = RandomSource.seeded(seed)
    X = rng.random((4 * n, d)) * 2.0 - 1.0
    w = np.linspace(1.0, -0.5, d)
    score = X @ w + 0.1
    if separable:
        X = X[np.abs(score) > 0.3][:n]
        score = X @ w + 0.1
    else:
        X = X[:n]
        score = score[:n] + (rng.random(n) - 0.5)
    y = (score > 0).astype(np.float64)
    return Dataset(name=name, X=X, y=y, feature_names=tuple(f"f{j}" for j in range(d)), task="classification")


def _split(data: Dataset, sizes: tuple[int, ...]) -> list[Dataset]:
    cuts = np.cumsum([0, *sizes])
    return [data.rows(np.arange(cuts[k], cuts[k + 1])) for k in range(len(sizes))]


def test_one_round_is_the_record_weighted_average_of_the_owners_minimisers() -> None:
    data = _data(800, 4, 1)
    parties = _split(data, (400, 300, 100))
    result = fit(parties, OfpaOfaaSettings(method="none", epsilon=math.inf, max_rounds=1), rng=RandomSource.seeded(1))
    prepared = prepare_parties(parties)
    local = [newton_logistic(r.X, r.y, OfpaOfaaSettings().lam, None, np.zeros(prepared.dim)) for r in prepared.rows]
    plain = sum(p.n * theta for p, theta in zip(parties, local, strict=True)) / data.n
    # the secure aggregation's fixed-point error: <= 3 clients * 2^-21 on each weighted sum / the total weight
    assert np.max(np.abs(result.theta - plain)) <= 3 * 2.0**-21 * 1024 / data.n + 1e-9
    assert result.communication["messages"] > 0 and result.communication["bytes"] > 0


def test_eps_inf_reproduces_plain_logistic_regression() -> None:
    data = _data(900, 4, 2)
    parties, test = _split(data, (400, 300, 100)), data.rows(np.arange(800, 900))
    result = fit(parties, OfpaOfaaSettings(method="none", epsilon=math.inf, lam=1e-3), rng=RandomSource.seeded(3))
    assert result.converged and result.rounds == 2 and result.changes[-1] == 0.0
    # one party: the loop's model is the plain regularised logistic regression (erm.solve, L-BFGS)
    single = fit(parties[:1], OfpaOfaaSettings(method="none", epsilon=math.inf, lam=1e-3), rng=RandomSource.seeded(4))
    X0 = prepare_rows(parties[0].X, parties[0].row_norm_bound)
    plain = solve(Objective(LogisticLoss(), X0, to_pm1(parties[0].y), lam=1e-3)).theta
    assert np.max(np.abs(single.theta - plain)) < 1e-4
    # three parties on separable data: the averaged model classifies like pooled logistic regression
    Xt = prepare_rows(test.X, parties[0].row_norm_bound)
    Xall = prepare_rows(data.rows(np.arange(800)).X, parties[0].row_norm_bound)
    pooled = newton_logistic(Xall, to_pm1(data.y[:800]), 1e-3, None, np.zeros(Xall.shape[1]))
    assert result.misclassification(Xt, test.y) <= 0.02
    assert misclassification(pooled, Xt, to_pm1(test.y)) <= 0.02


def test_newton_matches_lbfgs() -> None:
    data = _data(300, 3, 5, separable=False)
    X = prepare_rows(data.X, data.row_norm_bound)
    b = np.array([0.01, -0.02, 0.03, 0.0])
    w = newton_logistic(X, to_pm1(data.y), 1e-2, b, np.ones(4))
    ref = solve(Objective(LogisticLoss(), X, to_pm1(data.y), lam=1e-2, linear=b)).theta
    assert np.max(np.abs(w - ref)) < 1e-6


@pytest.mark.parametrize("method", ["ofpa", "output"])
def test_noise_scale_is_the_calibrated_one(method: str) -> None:
    # mean |Laplace(b)| = b; with 4000 draws the sample mean's sd is b/sqrt(4000) ~ 0.016 b, so a 10% band
    # fails with probability < 1e-9 (and the seed is fixed).
    rows = OwnerRows(np.full((10, 4), 0.25), np.ones(10), fixed_quadratic_mask(4, (), 3))
    owner = DataOwner("p", rows, method, 1e-2, 2.5, RandomSource.seeded(6))
    draws = []
    for k in range(400):
        owner.draw_noise(f"r{k}")
        assert owner._noise is not None
        draws.append(owner._noise)
    flat = np.concatenate(draws)
    assert abs(float(np.mean(np.abs(flat))) - 2.5) < 0.25
    assert abs(float(np.mean(flat))) < 0.25


def test_ofaa_release_noise_per_degree_and_none_on_fixed_coefficients() -> None:
    # one-hot block (1, 2), intercept 3: coefficients (1, 2) and (3, 3) are fixed by the domain
    X = np.array([[0.5, 0.5, 0.0, 0.5], [-0.5, 0.0, 0.5, 0.5]])
    fixed = fixed_quadratic_mask(4, ((1, 2),), 3)
    rows = OwnerRows(X, np.array([1.0, -1.0]), fixed)
    budget = ofaa_budget(0.5, 1.5, 0.5, 4, int(np.count_nonzero(~fixed)))
    owner = DataOwner("p", rows, "ofaa", 1e-2, budget.scale_quadratic, RandomSource.seeded(7), budget)
    iu = np.triu_indices(4)
    outer = X.T @ X / 8.0
    exact = np.where(iu[0] == iu[1], outer[iu], 2.0 * outer[iu])
    lin_dev, quad_dev = [], []
    for k in range(200):
        lin, coef = owner.ofaa_coefficients(RandomSource.seeded(8).spawn(str(k)))
        lin_dev.append(lin + 0.5 * X.T @ rows.y)
        quad_dev.append(coef - exact)
    # each degree's noise has its own scale: mean |Laplace(b)| = b; 800 and 1,600 draws put the sample mean's
    # sd at 3.5% and 2.5% of b, so a 12% band fails with probability < 1e-3 (and the seeds are fixed)
    assert abs(float(np.mean(np.abs(lin_dev))) - budget.scale_linear) < 0.12 * budget.scale_linear
    dev = np.array(quad_dev)
    assert np.all(dev[:, fixed] == 0.0)  # released exactly
    assert abs(float(np.mean(np.abs(dev[:, ~fixed]))) - budget.scale_quadratic) < 0.12 * budget.scale_quadratic
    assert budget.scale_linear != pytest.approx(budget.scale_quadratic)


def test_ofaa_ridge_follows_the_noise() -> None:
    assert ofaa_ridge(2.0, 16) == pytest.approx(0.5 * 2.0 * 4.0)
    assert ofaa_ridge(4.0, 16) == pytest.approx(2 * ofaa_ridge(2.0, 16))  # linear in the scale: scale invariant


def test_accounting_once_and_fresh() -> None:
    parties = _split(_data(600, 3, 7, separable=False), (300, 200, 100))
    once = fit(parties, OfpaOfaaSettings(method="ofpa", epsilon=1.0, max_rounds=5), rng=RandomSource.seeded(8))
    assert once.epsilon_spent == {"party0": 1.0, "party1": 1.0, "party2": 1.0}
    assert once.rounds == 2 and once.converged
    fresh = fit(parties, OfpaOfaaSettings(method="ofaa", epsilon=1.0, max_rounds=4, noise="fresh", eta=1e-12),
                rng=RandomSource.seeded(9))
    assert fresh.epsilon_per_release == pytest.approx(0.25)
    assert fresh.rounds == 4
    assert all(v == pytest.approx(0.25 * fresh.rounds) for v in fresh.epsilon_spent.values())
    assert all(v <= 1.0 + 1e-12 for v in fresh.epsilon_spent.values())
    # the fresh-noise scale is max_rounds times the once scale (OFAA's scales are linear in 1/eps)
    once_ofaa = fit(parties, OfpaOfaaSettings(method="ofaa", epsilon=1.0), rng=RandomSource.seeded(9))
    assert fresh.scales["party0"] == pytest.approx(4 * once_ofaa.scales["party0"])
    assert fresh.scales_linear["party0"] == pytest.approx(4 * once_ofaa.scales_linear["party0"])


def test_privacy_costs_accuracy_but_ofpa_learns() -> None:
    data = _data(3000, 4, 10, separable=False)
    parties, test = _split(data, (1200, 900, 300)), data.rows(np.arange(2400, 3000))
    Xt = prepare_rows(test.X, parties[0].row_norm_bound)
    base = fit(parties, OfpaOfaaSettings(method="none", epsilon=math.inf), rng=RandomSource.seeded(11))
    ofpa = fit(parties, OfpaOfaaSettings(method="ofpa", epsilon=3.2), rng=RandomSource.seeded(11))
    assert ofpa.misclassification(Xt, test.y) <= base.misclassification(Xt, test.y) + 0.1


def test_bad_input() -> None:
    data = _data(300, 3, 12)
    parties = _split(data, (150, 150))
    with pytest.raises(ParameterError):
        OfpaOfaaSettings(epsilon=0.0)
    with pytest.raises(ParameterError):
        OfpaOfaaSettings(epsilon=-1.0)
    with pytest.raises(ParameterError):
        OfpaOfaaSettings(method="ofpa", epsilon=math.inf)
    with pytest.raises(ParameterError):
        OfpaOfaaSettings(noise="sometimes")
    other = _data(150, 4, 13)
    with pytest.raises(ShapeMismatchError):
        fit([parties[0], other], OfpaOfaaSettings())
    with pytest.raises(DatasetError):
        fit([parties[0], data.rows(np.arange(0))], OfpaOfaaSettings())
    with pytest.raises(DomainError):
        prepare_rows(np.array([[3.0, 0.0]]), 1.0)
    with pytest.warns(UserWarning, match="projected"):
        rows = prepare_rows(np.array([[3.0, 0.0]]), 1.0, normalise=True)
    assert np.linalg.norm(rows[0]) <= 1.0 + 1e-12


def test_ledger_refuses_to_overspend(monkeypatch: pytest.MonkeyPatch) -> None:
    from mpdp.learning.ofpa_ofaa import model as ofpa_ofaa

    parties = _split(_data(200, 2, 14), (100, 100))
    real = ofpa_ofaa.PrivacyCost

    def doubled(**kw: object) -> object:
        kw["epsilon"] = 2 * float(kw["epsilon"])  # type: ignore[arg-type]
        return real(**kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ofpa_ofaa, "PrivacyCost", doubled)
    with pytest.raises(BudgetExceededError):
        fit(parties, OfpaOfaaSettings(method="ofpa", epsilon=1.0), rng=RandomSource.seeded(15))


def test_registered_and_run() -> None:
    assert {"ofpa", "ofaa"} <= set(registry.algorithms())
    assert {"001-fig2", "001-fig3", "001-fig4"} <= set(registry.reproductions())
    data = _data(800, 3, 16, separable=False)
    config = RunConfig(train=data.rows(np.arange(600)), test=data.rows(np.arange(600, 800)), parties=3,
                       epsilon=1.0, delta=0.0, rng=RandomSource.seeded(17), options={"noise": "fresh",
                                                                                     "max_rounds": 3})
    report = registry.get_algorithm("ofaa").run(config)
    out = report.as_json()
    assert out["epsilon_spent"] <= 1.0 + 1e-12
    assert set(out["per_party_epsilon"]) == {"party0", "party1", "party2"}
    assert out["metric"]["name"] == "accuracy" and out["metric"]["as_computed"]["name"] == "misclassification"
    with pytest.raises(ParameterError):
        registry.get_algorithm("ofpa").run(RunConfig(train=config.train, test=config.test, parties=3, epsilon=1.0,
                                                     delta=0.0, rng=RandomSource.seeded(1), options={"lr": 1}))


def test_first_attributes_keeps_schema() -> None:
    from mpdp.datasets import mixed_tabular

    data = mixed_tabular(200, numeric=2, categorical=2, rng=RandomSource.seeded(18))
    sub = first_attributes(data, 3)
    assert len(sub.attributes) == 3 and sub.d == sum(len(c) for c in data.encoded_columns[:3])
    assert sub.row_norm_bound == pytest.approx(math.sqrt(3))


def test_every_owner_is_checked_against_the_public_schema() -> None:
    from mpdp.datasets import mixed_tabular

    data = mixed_tabular(300, numeric=2, categorical=2, rng=RandomSource.seeded(19))
    parties = [data.rows(np.arange(150)), data.rows(np.arange(150, 300))]
    prepared = prepare_parties(parties)
    assert prepared.row_l1 == pytest.approx(math.sqrt(5))  # 4 attributes + the intercept
    # an adversarial owner whose "one-hot" block holds two ones would break the l1 bound: refused
    cols = list(data.encoded_columns[2])
    X = parties[1].X.copy()
    X[0, cols[:2]] = 1.0
    bad = Dataset(name=data.name, X=X, y=parties[1].y, feature_names=data.feature_names, task=data.task,
                  attributes=data.attributes, values=parties[1].values, encoded_columns=data.encoded_columns)
    with pytest.raises(DomainError, match="one-hot"):
        fit([parties[0], bad], OfpaOfaaSettings(method="ofaa"))
    # the same columns under a different schema are refused too
    plain = Dataset(name=data.name, X=parties[1].X, y=parties[1].y, feature_names=data.feature_names,
                    task=data.task)
    with pytest.raises(ShapeMismatchError, match="schema"):
        fit([parties[0], plain], OfpaOfaaSettings(method="ofaa"))


def test_prepared_parties_give_the_same_fit_as_datasets() -> None:
    parties = _split(_data(600, 3, 20, separable=False), (300, 200, 100))
    prepared = prepare_parties(parties)
    for method in ("ofpa", "ofaa"):
        a = fit(parties, OfpaOfaaSettings(method=method), rng=RandomSource.seeded(21))
        b = fit(prepared, OfpaOfaaSettings(method=method), rng=RandomSource.seeded(21))
        assert np.array_equal(a.theta, b.theta)
