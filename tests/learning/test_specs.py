"""Every algorithm's spec is the one source of its options: each engine resolves the same settings.

* ``mpdp run`` builds them from ``--option`` (:meth:`AlgorithmSpec.settings_from`);
* ``mpdp launch`` / ``mpdp party`` carry them in the shared configuration (``plan.public["settings"]``) and every
  party reads them back with ``from_public``;
* ``mpdp launch --engine flower`` carries them in the hub's job;
* an estimator's constructor defaults are the spec's (or None, meaning the spec's).

A value refused by the schema is refused alike wherever it comes from.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.errors import ParameterError
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec import AlgorithmSpec
from tests.run_cases import CASES, DATA

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")
SPECS = algorithms()


def _config(name: str, extra: list[str]) -> Any:
    return build_config(get_algorithm(name), build_parser().parse_args(["run", name, *DATA, *extra]))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_run_and_launch_resolve_the_same_settings(name: str) -> None:
    spec = SPECS[name]
    config = _config(name, CASES[name])
    assert isinstance(config.settings, spec.settings) and config.algorithm == name
    if spec.deployment is None:
        pytest.skip(f"{name} has no deployment")
    deployment = spec.deployment.load()()
    plan = deployment.plan(name, deployment.prepare(config))
    shared = plan.public["settings"]
    assert shared == deployment.prepare(config).settings.to_public()
    assert spec.settings.from_public(shared) == deployment.prepare(config).settings


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.flower is not None))
def test_the_flower_job_carries_the_same_settings(name: str, tmp_path: Path) -> None:
    from mpdp.flower.plans import plan_run

    config = _config(name, CASES[name])
    job = plan_run(name, config, tmp_path).job
    assert SPECS[name].settings.from_public(job["settings"]) == config.settings


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.estimator is not None))
def test_estimator_defaults_are_the_specs(name: str) -> None:
    spec: AlgorithmSpec = SPECS[name]
    parameters = inspect.signature(spec.estimator.load()).parameters  # type: ignore[union-attr]
    shared = [o for o in spec.settings.options() if o.name in parameters]
    for option in shared:
        default = parameters[option.name].default
        assert default is None or default == option.default, (name, option.name, default, option.default)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_an_unknown_or_ill_typed_option_is_refused_by_the_schema(name: str) -> None:
    spec = SPECS[name]
    with pytest.raises(ParameterError, match="options among"):
        spec.settings_from({"no_such_option": 1})
    for option in spec.settings.options():
        if option.kind is str and not option.choices:
            continue  # any string is legal
        bad: Any = {int: "not-a-number", float: "not-a-number", bool: 3.5, str: "not-a-choice"}[option.kind]
        with pytest.raises(ParameterError, match=option.name):
            spec.settings_from({option.name: bad})


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.estimator is not None))
def test_estimator_budget_and_parties_default_to_the_runs(name: str) -> None:
    """An estimator built without a budget spends what ``mpdp run`` spends without ``--epsilon``/``--delta``, over
    as many parties as ``mpdp run`` splits the data into without ``--parties``."""
    from mpdp.learning.spec.run import DEFAULT_DELTA, DEFAULT_EPSILON, DEFAULT_PARTIES

    spec: AlgorithmSpec = SPECS[name]
    parameters = inspect.signature(spec.estimator.load()).parameters  # type: ignore[union-attr]
    args = build_parser().parse_args(["run", name])
    assert (args.epsilon, args.delta) == (DEFAULT_EPSILON, DEFAULT_DELTA)
    assert parameters["epsilon"].default == DEFAULT_EPSILON
    if "delta" in parameters:
        assert parameters["delta"].default == DEFAULT_DELTA
    for count in ("parties", "agents"):
        if count in parameters and isinstance(parameters[count].default, int):
            assert parameters[count].default == DEFAULT_PARTIES[spec.partitioning], count
