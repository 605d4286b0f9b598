"""Paper 004's options written once: the spec's defaults reach the deployment's parties and the estimator, the
data-dependent defaults are resolved in one place, and bad options are refused by the spec's settings."""

from __future__ import annotations

import inspect
import json
from typing import Any

import numpy as np
import pytest

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.synthetic import mixed_tabular
from mpdp.errors import ParameterError
from mpdp.learning.pfds import PFDSClassifier
from mpdp.learning.pfds.deployment import PfdsDeployment, PfdsRun
from mpdp.learning.pfds.model import params_for
from mpdp.learning.pfds.spec import SETTINGS, AgentSettings, Method, PFDSSettings, PFDSVariantSettings, agent_cost
from mpdp.learning.registry import get_algorithm
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def test_every_method_is_registered_with_its_settings() -> None:
    for method in Method:
        assert get_algorithm(method.value).settings is SETTINGS[method]


def test_the_estimators_defaults_are_the_specs() -> None:
    """Every constructor parameter that is an option of ``pfds`` defaults to the spec's value (None: the spec's
    data-dependent default)."""
    options = {o.name: o.default for o in get_algorithm(Method.PFDS.value).settings.options()}
    parameters = inspect.signature(PFDSClassifier).parameters
    shared = [name for name in parameters if name in options]
    assert set(shared) == {"sharers", "h_max", "t", "p", "max_leaves"}
    for name in shared:
        assert parameters[name].default in (options[name], None), name
        if parameters[name].default is None:
            assert options[name] is None, name


@pytest.mark.parametrize(("attributes", "given", "expected"), [
    (14, {}, (8, 4)),  # the paper's h_max = 8, p = 4
    (5, {}, (5, 4)),  # h_max <= |A|
    (3, {}, (3, 3)),  # p <= h_max
    (1, {}, (2, 2)),  # a consistency step needs two levels
    (14, {"h_max": 3}, (3, 3)),
    (14, {"h_max": 6, "p": 2}, (6, 2)),
])
def test_data_dependent_defaults_are_resolved_in_one_function(attributes: int, given: dict[str, int],
                                                              expected: tuple[int, int]) -> None:
    params = params_for(PFDSSettings.from_options(given), attributes)
    assert (params.h_max, params.p) == expected
    assert params.t == 10 and params.max_leaves == 1024
    defaults, baseline = params_for(PFDSSettings(), attributes), params_for(AgentSettings(), attributes)
    assert (baseline.h_max, baseline.p) == (defaults.h_max, defaults.p)  # the baselines train no trees
    assert params_for(PFDSVariantSettings(variant="paper"), attributes).variant == "paper"
    assert params_for(PFDSSettings(), attributes).variant == "mpdp"


def _data(n: int = 160) -> Dataset:
    return mixed_tabular(n, numeric=3, categorical=2, categories=3, rng=RandomSource.seeded(1))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"p": 1}, r"PFDSClassifier p"),
    ({"h_max": 3, "p": 4}, r"at most h_max = 3"),
    ({"t": 0}, r"PFDSClassifier t"),
    ({"max_leaves": None}, r"PFDSClassifier max_leaves"),
    ({"sharers": 0}, r"PFDSClassifier sharers"),
])
def test_the_estimators_options_are_checked_by_the_spec(kwargs: dict[str, Any], match: str) -> None:
    data = _data()
    with pytest.raises(ParameterError, match=match):
        PFDSClassifier(1.0, agents=2, attributes=data.attributes, **kwargs).fit(data.values, data.y)
    with pytest.raises(ParameterError, match=match.replace("PFDSClassifier", "--option of pfds:")):
        get_algorithm(Method.PFDS.value).settings_from({k: v for k, v in kwargs.items()})


def test_the_shared_section_carries_the_options_and_every_party_reads_them_back() -> None:
    data = _data(200)
    train, test = data.rows(np.arange(160)), data.rows(np.arange(160, 200))
    settings = PFDSVariantSettings(h_max=3, eval_agents=2, variant="paper")
    config = RunConfig(train=train, test=test, parties=3, epsilon=0.7, delta=0.0, rng=RandomSource.seeded(2),
                       options={k: v for k, v in settings.to_public().items() if v is not None}, settings=settings)
    plan = PfdsDeployment().plan(Method.PFDS.value, config)
    assert plan.public["settings"] == settings.to_public()
    shared = json.loads(json.dumps(shared_parameters(plan)))  # what a deployed party reads
    run = PfdsRun.of(shared)
    assert run.settings == settings and run.fit == "paper" and (run.params.h_max, run.params.p) == (3, 3)
    assert run.method is Method.PFDS and len(run.evaluated) == 2
    with pytest.raises(ParameterError, match="missing"):
        PfdsRun.of({**shared, "settings": {"h_max": 3}})
    wrong = RunConfig(train=train, test=test, parties=3, epsilon=0.7, delta=0.0, rng=RandomSource.seeded(2),
                      settings=PFDSSettings())
    with pytest.raises(ParameterError, match="PFDSVariantSettings"):
        PfdsDeployment().plan(Method.PFDS.value, wrong)


def test_each_agents_cost_is_paper_004s_guarantee() -> None:
    """Theorem 3.3: eps for a PFDS or PFDS(s) sharer, eps / 2 for PFDS- (no consistency step), eps for a DP-Pred
    sharer; nothing for an agent that does not share, nor for NP-Agt."""
    for method, share in ((Method.PFDS, 1.0), (Method.PFDS_S, 1.0), (Method.PFDS_MINUS, 0.5), (Method.DP_PRED, 1.0)):
        cost = agent_cost(method, 0.8, sharer=True)
        assert cost is not None and cost.epsilon == pytest.approx(0.8 * share) and cost.delta == 0.0
        assert agent_cost(method, 0.8, sharer=False) is None
    assert agent_cost(Method.NP_AGT, 0.8, sharer=True) is None
    fm = agent_cost(Method.DP_PRED, 0.8, sharer=True, regression=True)
    assert fm is not None and fm.mechanism == "functional mechanism"
