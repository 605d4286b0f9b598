"""Paper 002 on its spec: one set of options and defaults, one privacy bill in every engine.

``mpdp run dpvi`` runs the deployment's parties in memory (as greenlets, or forked: ``--option runner``);
``mpdp launch`` runs the same parties one process each; :class:`VerticalDPVI` runs the same roles. Each must
charge the same costs: every data party its guarantee towards the parties (VPDP), which exceeds the analyst's,
and the analyst the guarantee towards an outside observer.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from mpdp.cli import build_parser, main
from mpdp.cli.run_cmd import build_config
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import ParameterError
from mpdp.learning.dpvi.deployment import DpviDeployment, vertical_of
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI
from mpdp.learning.dpvi.spec import DEFAULTS, PAPER_BATCH, PAPER_ITERATIONS, DPVIRunSettings, batch_size_for, epochs_for
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.memory import memory_root, run_in_memory
from mpdp.learning.spec.run import RunConfig
from mpdp.protocols.mixture_gradient import GradientPrecision
from tests.run_cases import CASES, DATA, MEMORY_ONLY

NAME = "dpvi"
#: estimator parameter -> the spec's option of the same meaning
OPTIONS = {"components": "components", "epochs": "epochs", "batch_size": "batch", "clip": "clip",
           "learning_rate": "lr", "batching": "batching", "accountant": "accountant"}


def _config(*extra: str, case: list[str] | None = None) -> RunConfig:
    args = build_parser().parse_args(["run", NAME, *DATA, *(CASES[NAME] if case is None else case), *extra])
    return build_config(get_algorithm(NAME), args)


@pytest.mark.parametrize("estimator", [VerticalDPVI, DPVI])
def test_estimator_defaults_are_the_spec_defaults(estimator: type[VerticalDPVI | DPVI]) -> None:
    params = inspect.signature(estimator).parameters
    for param, option in OPTIONS.items():
        assert params[param].default == getattr(DEFAULTS, option), param
    assert estimator().spec_settings() == DEFAULTS
    if estimator is VerticalDPVI:
        assert params["noise"].default == DEFAULTS.noise
        assert GradientPrecision().renormalize is DEFAULTS.renormalize
        assert not params["processes"].default and not params["fork_services"].default  # greenlets
        assert DEFAULTS.runner == "greenlets"


def test_a_default_run_is_the_papers_3000_iterations_of_minibatches_of_100() -> None:
    # paper 002, section 6.2: "3000 iterations and batch size 100 (i.e., 33 epochs)" of its ~9,100 records
    assert DEFAULTS.epochs is None and DEFAULTS.batch is None and PAPER_BATCH == 100 and PAPER_ITERATIONS == 3000
    assert batch_size_for(None, 30_000) == 100 and batch_size_for(None, 60) == 60 and batch_size_for(7, 60) == 7
    assert epochs_for(None, None, 9_100) == 33  # the paper's data set: its 33 epochs
    assert epochs_for(None, None, 36_178) == 9  # Adult's training rows: 3,000 / 362 batches per epoch
    assert epochs_for(4, None, 36_178) == 4
    settings = VerticalDPVI().settings_for(60)
    assert settings.batch_size == 60 and settings.epochs == 3000


def test_options_given_to_an_estimator_are_checked_by_the_spec() -> None:
    with pytest.raises(ParameterError, match=r"VerticalDPVI epochs"):
        VerticalDPVI(epochs=0)
    with pytest.raises(ParameterError, match=r"DPVI lr"):
        DPVI(learning_rate=-1.0)
    with pytest.raises(ParameterError, match=r"VerticalDPVI batching"):
        VerticalDPVI(batching="fixed")


def test_the_runner_option_chooses_how_the_in_memory_parties_run() -> None:
    deployment = DpviDeployment()
    assert deployment.execution(_config()) == {"cooperative": True}
    assert deployment.execution(_config("--option", "runner=processes")) == {"processes": True}
    forked = ["--option", "runner=fork-services"]
    try:
        assert deployment.execution(_config(*forked)) == {"cooperative": True, "forked": ("dealer",)}
        trusted = deployment.execution(_config(*forked, "--option", "noise=trusted"))
        assert trusted == {"cooperative": True, "forked": ("dealer", "noise")}
    except ParameterError as exc:  # a test session running other threads cannot fork them
        assert "threads" in str(exc)


def test_every_party_forked_gives_the_greenlets_results(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", NAME, *DATA, *CASES[NAME], "--json"]
    assert main(argv) == 0
    greenlets = json.loads(capsys.readouterr().out)
    assert main([*argv[:-1], "--option", "runner=processes", "--json"]) == 0
    forked = json.loads(capsys.readouterr().out)
    assert forked["runner"] == "processes" and greenlets["runner"] == "greenlets"
    for key in ("metric", "epsilon_spent", "per_party_epsilon", "communication"):
        assert forked[key] == greenlets[key], key


@pytest.mark.parametrize("case", ["dpvi", "dpvi/trusted"])
def test_memory_and_estimator_charge_what_the_deployment_costs(case: str) -> None:
    config = _config(case=MEMORY_ONLY.get(case, CASES[NAME]))
    deployment = DpviDeployment()
    report = run_in_memory(NAME, deployment, config)
    plan = deployment.plan(NAME, config)
    holders = [p for p in plan.parties if plan.data[p] is not None]
    costs = {p: deployment.cost(plan.public, p) for p in plan.parties}
    assert {p for p, c in costs.items() if c is not None} == set(holders)
    assert report.per_party_epsilon == {p: costs[p].epsilon for p in holders}  # type: ignore[union-attr]
    # VPDP towards a party exceeds the analyst's guarantee; the record says why
    assert all(e > report.epsilon_spent for e in report.per_party_epsilon.values())
    assert "towards each party (VPDP)" in report.extra["per_party_note"]
    analyst = PrivacyLedger(epsilon=10.0, delta=1e-3)
    parties = {p: PrivacyLedger(epsilon=10.0, delta=1e-3) for p in holders}
    model = vertical_of(plan.public).set_params(ledger=analyst, party_ledgers=parties, rng=memory_root(config, plan))
    model.fit(config.train, plan.public["groups"])
    for p in holders:
        (entry,) = parties[p].entries
        assert entry.cost == costs[p]
    (entry,) = analyst.entries
    assert (entry.cost.epsilon, entry.cost.delta) == (report.epsilon_spent, report.delta_spent)
    assert model.nll(config.test) == report.metric.value  # the same parties, the same seed: the same model


def test_a_run_reads_its_options_from_the_typed_settings() -> None:
    config = _config("--option", "lr=0.02")
    public = DpviDeployment().plan(NAME, config).public
    assert DPVIRunSettings.from_public(public["settings"]) == config.settings
    assert vertical_of(public).learning_rate == 0.02
    wrong = dataclasses.replace(config, settings=None, options={"epochs": 0})
    with pytest.raises(ParameterError, match="epochs"):
        DpviDeployment().plan(NAME, wrong)


@pytest.mark.net
def test_deployed_ledgers_hold_the_memory_runs_costs(tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    from mpdp.deploy.launcher import launch

    memory = get_algorithm(NAME).run(_config())
    launched = launch(NAME, _config(), get_algorithm(NAME).run, seed=5, timeout=60.0, connect_timeout=60.0,
                      keep=tmp_path)
    for party, epsilon in memory.per_party_epsilon.items():
        (entry,) = PrivacyLedger.open(tmp_path / party / "ledger.json").entries
        assert entry.cost == DpviDeployment().cost(launched.plan.public, party) and entry.cost.epsilon == epsilon
    assert not (tmp_path / "dealer" / "ledger.json").exists()
    assert (launched.report.epsilon_spent, launched.report.metric) == (memory.epsilon_spent, memory.metric)
