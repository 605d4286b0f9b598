"""Paper 001's specs: one set of defaults and one privacy charge, whichever engine runs OFPA or OFAA."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import ParameterError
from mpdp.learning.ofpa_ofaa.deployment import OfpaDeployment, run_settings
from mpdp.learning.ofpa_ofaa.estimator import OfpaOfaaClassifier
from mpdp.learning.ofpa_ofaa.model import fit
from mpdp.learning.ofpa_ofaa.spec import OfaaSettings, OfpaSettings
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _config(name: str, *options: str):  # type: ignore[no-untyped-def]
    argv = ["run", name, "--dataset", "synthetic-mixed:n=200", "--seed", "3", "--parties", "2"]
    for option in options:
        argv += ["--option", option]
    return build_config(get_algorithm(name), build_parser().parse_args(argv))


def test_the_estimator_defaults_are_the_specs() -> None:
    signature = inspect.signature(OfpaOfaaClassifier)
    for info in OfpaSettings.options():
        if info.name in signature.parameters:
            assert signature.parameters[info.name].default == info.default, info.name
    assert OfaaSettings().lam == OfpaSettings().lam  # one regulariser default for both (the spec's docstring)


@pytest.mark.parametrize("name", ["ofpa", "ofaa"])
@pytest.mark.parametrize("noise", ["once", "fresh"])
def test_every_engine_charges_the_same_entry(name: str, noise: str) -> None:
    config = _config(name, f"noise={noise}", "max_rounds=3")
    settings = run_settings(config)
    deployment = OfpaDeployment()
    plan = deployment.plan(name, config)
    deployed = {p: deployment.cost(shared_parameters(plan), p) for p in plan.parties}
    owners = [p for p, cost in deployed.items() if cost is not None]
    assert owners == ["party0", "party1"]

    ledgers = {p: PrivacyLedger(epsilon=10.0, subject=p) for p in owners}
    fit(config.party_data(), settings, rng=RandomSource.seeded(1), ledgers=ledgers)
    estimator_ledger = PrivacyLedger(epsilon=10.0)
    X = np.clip(config.train.X, -1.0, 1.0)
    OfpaOfaaClassifier(settings.method, config.epsilon, parties=2, noise=noise, max_rounds=3,
                       ledger=estimator_ledger, random_state=1).fit(X, config.train.y)
    report = get_algorithm(name).run(config)

    for p in owners:
        (entry,) = ledgers[p].entries
        assert entry.cost == deployed[p]  # in memory, each owner's ledger: what a deployed owner is charged
        assert report.per_party_epsilon is not None and report.per_party_epsilon[p] == deployed[p].epsilon
    (entry,) = estimator_ledger.entries  # a record's guarantee: its owner's charge
    assert entry.cost == deployed["party0"]
    assert report.epsilon_spent == config.epsilon and math.isfinite(report.epsilon_spent)


@pytest.mark.parametrize(("option", "value"), [("noise", "often"), ("max_rounds", 0), ("lam", -1.0)])
def test_a_bad_option_is_refused_alike_by_the_cli_and_the_estimator(option: str, value: object) -> None:
    with pytest.raises(ParameterError, match=rf"{option}.*expected") as cli:
        _config("ofaa", f"{option}={value}")
    X, y = np.zeros((4, 2)), np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ParameterError, match=rf"{option}.*expected") as estimator:
        OfpaOfaaClassifier("ofaa", **{option: value}).fit(X, y)  # type: ignore[arg-type]
    assert str(cli.value).split("expected")[1] == str(estimator.value).split("expected")[1]
