"""Paper 000 on its spec: one set of options and defaults, one privacy bill in every engine.

``mpdp run fm-*`` runs the deployment's parties in memory; ``mpdp launch`` runs the same parties one process
each; the estimators run the same roles. Each must charge the same costs: every column holder its own
``eps^(k)`` of the released plan (paper 000, Theorem 2) and the analyst the release's cost on D.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import ParameterError
from mpdp.learning.functional_mechanism.deployment import FMDeployment
from mpdp.learning.functional_mechanism.model import FMLinearRegression, FMLogisticRegression, fm_estimator
from mpdp.learning.functional_mechanism.release import SolveSettings
from mpdp.learning.functional_mechanism.spec import SETTINGS, SPECS
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.memory import run_in_memory
from mpdp.learning.spec.run import RunConfig
from tests.run_cases import CASES, DATA

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

NAMES = [spec.name for spec in SPECS]


def _config(name: str, *extra: str) -> RunConfig:
    args = build_parser().parse_args(["run", name, *DATA, *CASES[name], *extra])
    return build_config(get_algorithm(name), args)


def _deployment(name: str) -> FMDeployment:
    deployment = get_algorithm(name).deployment
    assert deployment is not None
    out: FMDeployment = deployment.load()()
    return out


@pytest.mark.parametrize("estimator", [FMLogisticRegression, FMLinearRegression])
def test_estimator_defaults_are_the_spec_defaults(estimator: type[FMLogisticRegression | FMLinearRegression],
                                                  ) -> None:
    spec = SETTINGS[estimator._objective].defaults()
    params = inspect.signature(estimator).parameters
    assert params["fit_intercept"].default == spec.intercept
    assert params["settings"].default is None  # None: the spec's solve
    solve = SolveSettings()
    assert solve.ridge_factor == spec.ridge and solve.trim(estimator._objective) == spec.trim_factor()
    assert estimator().spec_settings() == spec


def test_the_trim_defaults_are_the_papers_objectives() -> None:
    # chosen on Adult (logistic) and the synthetic regression data (linear); written once, in the spec
    assert SETTINGS["logistic"]().trim == 0.3 and SETTINGS["linear"]().trim == 1.5


def test_options_given_to_an_estimator_are_checked_by_the_spec() -> None:
    X = np.zeros((4, 2))
    y = np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ParameterError, match=r"FMLogisticRegression intercept"):
        FMLogisticRegression(1.0, fit_intercept=3).fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"settings of FMLinearRegression"):
        FMLinearRegression(1.0, settings={"trim": 1.0}).fit(X, y - 0.5)  # type: ignore[arg-type]


def test_a_run_reads_its_options_from_the_typed_settings() -> None:
    config = _config("fm-logistic", "--option", "l1=box", "--option", "intercept=false")
    plan = _deployment("fm-logistic").plan("fm-logistic", config)
    assert plan.public["settings"] == {"l1": "box", "ridge": 0.0, "intercept": False, "trim": 0.3}
    assert plan.public["row_l1"] is None  # box: each party's column count
    with pytest.raises(ParameterError, match="FMLinearSettings"):
        _deployment("fm-linear").plan("fm-linear", config)  # the other objective's settings


@pytest.mark.parametrize("name", NAMES)
def test_memory_and_estimator_charge_what_the_deployment_costs(name: str) -> None:
    config = _config(name)
    deployment = _deployment(name)
    plan = deployment.plan(name, config)
    public = plan.public
    report = run_in_memory(name, deployment, config)
    holders = [p for p in plan.parties if plan.data[p] is not None]
    costs = {p: deployment.cost(public, p) for p in holders}
    assert report.per_party_epsilon == {p: c.epsilon for p, c in costs.items() if c is not None}
    assert deployment.cost(public, "server") is None
    analyst = PrivacyLedger(epsilon=10.0)
    parties = {p: PrivacyLedger(epsilon=10.0) for p in holders}
    settings = SETTINGS["logistic" if name == "fm-logistic" else "linear"].from_public(public["settings"])
    model = fm_estimator(config.train, public["columns"], public["label_party"], config.epsilon,
                         public["backend"], config.rng, settings)
    model.set_params(ledger=analyst, party_ledgers=parties).fit(config.train.X, config.train.y)
    for p in holders:
        (entry,) = parties[p].entries
        assert entry.cost == costs[p] and entry.label == f"{name}/{p}"
    assert sum(e.cost.epsilon for e in analyst.entries) == report.epsilon_spent == config.epsilon
    assert list(model.per_party_epsilon_) == list(report.per_party_epsilon.values())
    assert np.array_equal(model.coef_, report.released.coef_)  # the same roles, the same seed: the same model


@pytest.mark.parametrize("backend", ["ckks"])
def test_an_approximate_backend_charges_the_inflated_guarantee_everywhere(backend: str) -> None:
    # CKKS products move the coefficients by their documented error, priced into the sensitivity once the
    # record count is known: the cost a party is charged before it connects already includes it
    name = "fm-logistic"
    config = _config(name, "--backend", backend)
    deployment = _deployment(name)
    report = run_in_memory(name, deployment, config)
    plan = deployment.plan(name, config)
    charged = {p: c.epsilon for p in plan.parties if (c := deployment.cost(plan.public, p)) is not None}
    assert report.per_party_epsilon == charged
    assert dict(zip(charged, report.released.result_.per_party_epsilon, strict=True)) == charged


@pytest.mark.net
@pytest.mark.parametrize("name", NAMES)
def test_deployed_ledgers_hold_the_memory_runs_costs(name: str, tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    from mpdp.deploy.launcher import launch

    config = _config(name)
    memory = get_algorithm(name).run(config)
    launched = launch(name, _config(name), get_algorithm(name).run, seed=5, timeout=60.0, connect_timeout=60.0,
                      keep=tmp_path)
    deployment = _deployment(name)
    for party, epsilon in memory.per_party_epsilon.items():
        (entry,) = PrivacyLedger.open(tmp_path / party / "ledger.json").entries
        assert entry.cost == deployment.cost(launched.plan.public, party) and entry.cost.epsilon == epsilon
        assert entry.label == f"{name}/{party}"
    assert not (tmp_path / "server" / "ledger.json").exists()
    assert launched.report.epsilon_spent == memory.epsilon_spent
