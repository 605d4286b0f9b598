"""One split of paper 004's experiment end to end on small data, and the registered CLI entry points."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.splits import kfold_indices
from mpdp.datasets.synthetic import mixed_tabular
from mpdp.errors import ParameterError, ShapeMismatchError
from mpdp.learning import registry
from mpdp.learning.pfds.evaluation import METHODS, Setting, evaluate_split
from mpdp.learning.pfds.model import PFDSParams
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

SETTING = Setting(agents=4, epsilon=1.0, params=PFDSParams(h_max=4, t=5, p=3, max_leaves=32), eval_agents=2)


def _split(task: str = "classification") -> tuple[Dataset, Dataset]:
    data = mixed_tabular(800, numeric=3, categorical=2, categories=3, task=task, rng=RandomSource.seeded(1))
    train, test = kfold_indices(data, 5, stratify=task == "classification", rng=RandomSource.seeded(2))[0]
    return data.rows(train), data.rows(test)


def test_every_method_on_one_classification_split() -> None:
    train, test = _split()
    result = evaluate_split(train, test, SETTING, methods=METHODS, losses=("logistic", "svm"),
                            rng=RandomSource.seeded(3))
    assert {m for m, _ in result.errors} == set(METHODS)
    assert all(0.0 <= e <= 1.0 for e in result.errors.values())
    assert result.epsilon_spent["pfds"] == pytest.approx(1.0, rel=1e-12)  # ledger total = eps (Theorem 3.3)
    assert result.epsilon_spent["pfds-s"] == pytest.approx(1.0, rel=1e-12)
    assert result.epsilon_spent["pfds-mpdp"] == result.epsilon_spent["pfds"]  # one protocol run, fit costs nothing
    assert set(result.extra["mpdp_choices"]) == {"logistic", "svm"}
    assert result.epsilon_spent["pfds-minus"] == pytest.approx(0.5, rel=1e-12)
    assert result.epsilon_spent["dp-pred/logistic"] == pytest.approx(1.0)
    assert all(v == pytest.approx(1.0) for v in result.per_party["pfds"].values())
    assert result.communication["messages"] > 0 and result.communication["rounds"] == 2


def test_regression_split() -> None:
    train, test = _split("regression")
    result = evaluate_split(train, test, SETTING, methods=("pfds", "dp-pred", "np-agt"), losses=("linear",),
                            rng=RandomSource.seeded(4))
    assert all(e >= 0.0 for e in result.errors.values())
    with pytest.raises(ParameterError, match="losses"):
        evaluate_split(train, test, SETTING, methods=("pfds",), losses=("logistic",), rng=RandomSource.seeded(5))


def test_bad_settings() -> None:
    train, test = _split()
    with pytest.raises(ParameterError, match="methods"):
        evaluate_split(train, test, SETTING, methods=("magic",), rng=RandomSource.seeded(6))
    with pytest.raises(ParameterError, match="sharers"):
        Setting(agents=3, sharers=5)
    with pytest.raises(ParameterError, match="epsilon"):
        Setting(epsilon=0.0)


def test_registered() -> None:
    assert {"pfds", "pfds-s", "pfds-minus", "dp-pred", "np-agt"} <= set(registry.algorithms())
    assert {"004-table2", "004-fig3"} <= set(registry.reproductions())


def test_pfds_variants_through_the_registry() -> None:
    """`mpdp run pfds`: the mpdp fit by default, the paper's one flag away, same eps either way; bad options fail."""
    train, test = _split()
    algo = registry.algorithms()["pfds"]
    base = {"h_max": 4, "t": 5, "p": 3, "max_leaves": 32, "eval_agents": 2}
    reports = {}
    for variant in (None, "paper"):
        options = base if variant is None else {**base, "variant": variant}
        config = RunConfig(train=train, test=test, parties=4, epsilon=0.8, delta=0.0,
                                    rng=RandomSource.seeded(11), options=options)
        reports[variant] = algo.run(config)
    assert reports[None].extra["variant"] == "mpdp" and reports["paper"].extra["variant"] == "paper"
    for report in reports.values():
        assert report.algorithm == "pfds" and report.epsilon_spent == pytest.approx(0.8, rel=1e-12)
        assert 0.0 <= report.metric.value <= 1.0
    config = RunConfig(train=train, test=test, parties=4, epsilon=0.8, delta=0.0,
                                rng=RandomSource.seeded(12), options={**base, "variant": "best"})
    with pytest.raises(ParameterError, match="variant"):
        algo.run(config)
    with pytest.raises(ParameterError, match="variant"):
        registry.algorithms()["np-agt"].run(RunConfig(
            train=train, test=test, parties=4, epsilon=0.8, delta=0.0, rng=RandomSource.seeded(13),
            options={**base, "variant": "paper"}))


def test_table2_shows_both_pfds_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """004-table2 has a `pfds (paper)` and a `pfds (mpdp)` row per setting; the latter is held to the paper's PFDS."""
    from mpdp.learning.pfds import experiments as pfds_reproduce

    data = mixed_tabular(700, numeric=5, categorical=3, categories=3, rng=RandomSource.seeded(21))  # h_max 8 needs 8
    monkeypatch.setattr(pfds_reproduce, "_datasets", lambda quick, rng: [
        ("Census Income (Adult)", data, ("logistic",), "stand-in")])
    table = pfds_reproduce.reproduce_table2(registry.ReproOptions(rng=RandomSource.seeded(22), quick=True))
    rows = {(r.setting["epsilon"], r.setting["method"]): r for r in table.rows}
    for eps in (1.0, 0.5, 0.1):
        assert rows[(eps, "pfds (mpdp)")].paper == rows[(eps, "pfds (paper)")].paper == \
            pfds_reproduce.PAPER_TABLE2[("logistic", eps)]["pfds"]
        assert 0.0 <= rows[(eps, "pfds (mpdp)")].ours_mean <= 1.0
    assert any("pfds (mpdp)" in note for note in table.notes)


def test_explicit_row_split_replaces_the_anchor_split() -> None:
    """`mpdp run pfds --fractions ...`: the agents hold exactly the rows the user asked for."""
    train, test = _split()
    rows = (np.arange(0, 10), np.arange(10, 40), np.arange(40, train.n))
    setting = Setting(agents=3, epsilon=1.0, params=SETTING.params)
    result = evaluate_split(train, test, setting, methods=("np-agt",), rng=RandomSource.seeded(7), rows=rows)
    assert result.extra["agents_with_data"] == 3
    with pytest.raises(ShapeMismatchError, match="one per agent"):
        evaluate_split(train, test, setting, methods=("np-agt",), rng=RandomSource.seeded(7), rows=rows[:2])
    algo = registry.algorithms()["np-agt"]  # trains no trees: the tree options are not its options
    reports = [algo.run(RunConfig(train=train, test=test, parties=3, epsilon=1.0, delta=0.0,
                                  rng=RandomSource.seeded(8), row_partition=rows, row_split=split))
               for split in ("fractions", "default")]
    # the same seed: only the explicit split changes what the agents hold (a 10-row agent scores differently)
    assert reports[0].metric.value != reports[1].metric.value


def test_np_agt_cv_baseline_spends_nothing_and_scores() -> None:
    train, test = _split()
    result = evaluate_split(train, test, SETTING, methods=("np-agt", "np-agt-cv"), rng=RandomSource.seeded(9))
    assert result.epsilon_spent["np-agt-cv"] == 0.0
    for loss in ("logistic", "svm"):
        assert 0.0 <= result.errors[("np-agt-cv", loss)] <= 1.0


@pytest.mark.parametrize(("method", "key"), [("pfds", "pfds-mpdp"), ("pfds-s", "pfds-s"), ("pfds-minus", "pfds-minus"),
                                             ("dp-pred", "dp-pred"), ("np-agt", "np-agt")])
def test_the_reproductions_draw_what_mpdp_run_draws(method: str, key: str) -> None:
    """004-table2's split evaluation and `mpdp run` run the same agents from the same random sources: under one
    seed they report the same error, per-agent spend and traffic."""
    from mpdp.learning.pfds.model import params_for
    from mpdp.learning.pfds.spec import SETTINGS, Method

    train, test = _split()
    spec = registry.algorithms()[method]
    given = {"eval_agents": 2, **({"h_max": 4, "t": 5, "p": 3, "max_leaves": 32} if method.startswith("pfds") else {})}
    settings = SETTINGS[Method(method)].from_options(given)
    report = spec.run(RunConfig(train=train, test=test, parties=4, epsilon=0.8, delta=0.0, rng=RandomSource.seeded(14),
                                settings=settings))
    setting = Setting(agents=4, epsilon=0.8, params=params_for(settings, len(train.attributes)), eval_agents=2)
    result = evaluate_split(train, test, setting, methods=(key,), losses=("logistic",), rng=RandomSource.seeded(14))
    assert report.metric.value == result.errors[(key, "logistic")]
    spent = result.per_party[f"{method}/logistic" if method == "dp-pred" else key]
    charged = report.per_party_epsilon
    assert charged is not None and charged == {n: pytest.approx(spent.get(n, 0.0), rel=1e-12) for n in charged}
    assert report.communication == result.communication
