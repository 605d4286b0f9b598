"""Paper 003's specs: one set of defaults, one schedule and one privacy charge, whichever engine runs a method."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import ParameterError
from mpdp.learning.distributed_erm import DistributedERMClassifier, DistributedERMRegressor, HorizontalParties
from mpdp.learning.distributed_erm.common import size_classes
from mpdp.learning.distributed_erm.deployment import ERMDeployment, party_indices, run_settings
from mpdp.learning.distributed_erm.experiments import fit_method
from mpdp.learning.distributed_erm.problem import prepare
from mpdp.learning.distributed_erm.rounds import setup_of
from mpdp.learning.distributed_erm.spec import SPECS, GradientSettings, MPCGradientSettings, method_of
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

NAMES = [spec.name for spec in SPECS]


def _config(name: str, *options: str, parties: int = 2, dataset: str = "synthetic-mixed:n=200") -> Any:
    task = ",task=regression" if get_algorithm(name).task == "regression" else ""
    argv = ["run", name, "--dataset", dataset + task, "--seed", "3", "--parties", str(parties), "--delta", "1e-5"]
    for option in options:
        argv += ["--option", option]
    return build_config(get_algorithm(name), build_parser().parse_args(argv))


@pytest.mark.parametrize("estimator", [DistributedERMClassifier, DistributedERMRegressor])
def test_the_estimator_defaults_are_the_specs(estimator: type) -> None:
    signature = inspect.signature(estimator)
    options = {info.name: info.default for info in MPCGradientSettings.options()}
    shared = [name for name in signature.parameters if name in options]
    assert shared == ["T", "eta", "lam", "accountant", "aggregators"]
    for name in shared:
        assert signature.parameters[name].default == options[name], name


def test_the_default_iterations_are_the_papers() -> None:
    assert GradientSettings().T == 1500  # 003 section 4: "T = 1,500 for gradient descent"


@pytest.mark.parametrize("name", NAMES)
def test_every_engine_charges_the_same_entry(name: str, tmp_path: Path) -> None:
    """In memory (``mpdp run`` and the model-level fit), deployed (the shared file a party reads, its ledger) and
    as an estimator, a data party is charged one entry: the schedule's cost for its record count."""
    from mpdp.deploy.launcher import prepare_folders

    method = method_of(name)
    config = _config(name, *(["T=3"] if method.gradient else []))
    deployment = ERMDeployment()
    deployed = deployment.prepare(config)
    plan = deployment.plan(name, deployed)
    folders = prepare_folders(tmp_path, name, plan, epsilon=config.epsilon, delta=config.delta, seed=3,
                              timeout=5.0, connect_timeout=5.0)
    shared = json.loads((tmp_path / "shared.json").read_text())  # what every deployed party reads
    entries = {}
    for party, folder in folders.items():
        cost = deployment.cost(shared, party)
        if cost is None:
            continue
        budget = json.loads(folder.config.read_text())["ledger"]
        ledger = PrivacyLedger.open_or_create(tmp_path / party / budget["path"], epsilon=budget["epsilon"],
                                              delta=budget["delta"], method="basic", subject=f"party:{party}")
        ledger.spend(cost, label=f"{name}/{party}")  # what deploy.party does before the party connects
        (entry,) = PrivacyLedger.open(tmp_path / party / budget["path"]).entries
        entries[party] = entry.cost
    assert sorted(entries) == ["party0", "party1"] and entries["party0"] == entries["party1"]
    charged = entries["party0"]

    report = get_algorithm(name).run(config)  # in memory: the deployment's parties, cohorts of 1,024
    assert report.per_party_epsilon is not None and set(report.per_party_epsilon.values()) == {charged.epsilon}
    assert (report.epsilon_spent, report.delta_spent) == (charged.epsilon, charged.delta)

    settings = run_settings(config)
    data = prepare(config.train, config.test, lam=settings.lam)
    parties = HorizontalParties.from_rows(data.X, data.y, party_indices(config), task=data.problem.task)
    fit_ledger = PrivacyLedger(epsilon=config.epsilon, delta=config.delta)
    T = settings.T if isinstance(settings, GradientSettings) else 1
    kwargs: dict[str, Any] = {"setup": setup_of(settings)} if method.mpc else {}
    fit_method(method, data, parties, epsilon=config.epsilon, delta=config.delta, T=T, rng=RandomSource.seeded(1),
               ledger=fit_ledger, **kwargs)
    (entry,) = fit_ledger.entries
    assert entry.cost == charged

    estimator_ledger = PrivacyLedger(epsilon=config.epsilon, delta=config.delta)
    model = (DistributedERMRegressor if config.train.task == "regression" else DistributedERMClassifier)
    model(method, config.epsilon, config.delta, T=T, parties=2, clip=True, ledger=estimator_ledger,
          random_state=1).fit(config.train.X, config.train.y)
    (entry,) = estimator_ledger.entries  # a record's guarantee: the largest charge of any party
    assert entry.cost == charged


@pytest.mark.parametrize(("option", "value"), [("T", 0), ("lam", -1.0), ("accountant", "rdp"), ("aggregators", 1),
                                               ("eta", "fast")])
def test_a_bad_option_is_refused_alike_by_the_cli_and_the_estimator(option: str, value: object) -> None:
    with pytest.raises(ParameterError, match=rf"{option}.*expected") as cli:
        _config("mpc-gradp", f"{option}={value}")
    X, y = np.zeros((4, 2)), np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ParameterError, match=rf"{option}.*expected") as estimator:
        DistributedERMClassifier("mpc-gradp", **{option: value}).fit(X, y)  # type: ignore[arg-type]
    assert str(cli.value).split("expected")[1] == str(estimator.value).split("expected")[1]


def test_in_memory_cohorts_are_runtime_parties_and_a_deployment_runs_one_per_data_party() -> None:
    config = _config("mpc-gradp", "T=2", parties=5)
    deployment = ERMDeployment()
    plan = deployment.plan("mpc-gradp", config)  # in memory: the default cohorts
    assert plan.parties == ("parties0-4", "agg0", "agg1") and plan.public["clients"] == {"parties0-4": 5}
    assert plan.data["parties0-4"] is not None and plan.data["parties0-4"].n == sum(
        len(i) for i in party_indices(config))
    deployed = deployment.plan("mpc-gradp", deployment.prepare(config))
    assert deployed.parties == ("party0", "party1", "party2", "party3", "party4", "agg0", "agg1")
    assert shared_parameters(deployed)["settings"]["cohort"] == 1
    with pytest.raises(ParameterError, match=r"cohort.*one process per data party"):
        deployment.prepare(_config("mpc-gradp", "cohort=4"))
    assert get_algorithm("mpc-gradp").run(config).parties == 5


def test_per_party_epsilon_names_the_parties_of_each_size() -> None:
    assert size_classes([53, 53, 54]) == {53: "party0..party1 (53 rows each)", 54: "party2 (54 rows)"}
    assert size_classes([10, 11, 10, 1]) == {1: "party3 (1 row)", 10: "party0, party2 (10 rows each)",
                                             11: "party1 (11 rows)"}
    report = get_algorithm("mpc-outp").run(_config("mpc-outp", "cohort=1", parties=3))
    assert report.per_party_epsilon is not None and list(report.per_party_epsilon) == [
        "party0..party1 (53 rows each)", "party2 (54 rows)"]
    smaller, larger = report.per_party_epsilon.values()
    assert smaller == report.epsilon_spent == 1.0 and 53 / 54 < larger < 1.0  # the noise is set for n(1) = 53
    assert "n(1)" in report.extra["per_party_note"]
