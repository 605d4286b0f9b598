"""save -> load -> predict gives the fitted model's own predictions, for each kind of linear release."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.datasets.encoding import make_dataset
from mpdp.errors import UnsupportedModelError
from mpdp.learning import erm
from mpdp.learning.ofpa_ofaa.model import prepare_rows
from mpdp.learning.registry import get_algorithm
from mpdp.learning.release.build import released_model
from mpdp.learning.release.format import read_model, write_model
from mpdp.learning.release.kinds import predict, sample
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

ATTRS = (Attribute("age", "numeric", bounds=(0.0, 100.0)), Attribute("city", "categorical", categories=("a", "b", "c")),
         Attribute("hours", "numeric", bounds=(0.0, 80.0)))


def _data(n: int, seed: int) -> Dataset:
    rng = RandomSource.seeded(seed)
    values = np.column_stack([100 * rng.random(n), rng.integers(0, 3, n).astype(float), 80 * rng.random(n)])
    y = ((values[:, 0] / 100 + (values[:, 1] == 2) * 0.4 + 0.3 * rng.random(n)) > 0.8).astype(float)
    return make_dataset("toy", ATTRS, values, y, task="classification", label_name="y")


@pytest.fixture(scope="module")
def split() -> tuple[Dataset, Dataset]:
    return _data(400, 1), _data(60, 2)


def _config(train: Dataset, test: Dataset, **kwargs: object) -> RunConfig:
    return RunConfig(train=train, test=test, parties=kwargs.pop("parties", 2), epsilon=1.0, delta=1e-5,  # type: ignore[arg-type]
                     rng=RandomSource.seeded(3), **kwargs)  # type: ignore[arg-type]


def _reloaded(tmp_path: Path, algorithm: str, config: RunConfig) -> tuple[object, np.ndarray]:
    report = get_algorithm(algorithm).run(config)
    write_model(tmp_path, released_model(report, config.train))
    model = read_model(tmp_path)
    assert model.epsilon_spent == report.epsilon_spent and model.algorithm == report.algorithm
    prediction, _ = predict(model.kind, model.parameters, model.schema, config.test.values)  # type: ignore[arg-type]
    return report.released, prediction


def test_fm_predictions_survive_the_file(tmp_path: Path, split: tuple[Dataset, Dataset]) -> None:
    train, test = split
    fitted, prediction = _reloaded(tmp_path, "fm-logistic", _config(train, test, partition=(("age", "city"),
                                                                                           ("hours",))))
    np.testing.assert_array_equal(prediction, fitted.predict(test.X))  # type: ignore[attr-defined]
    assert 0 < prediction.sum() < test.n  # not a constant model: the comparison can fail


def test_mpc_gradp_predictions_survive_the_file(tmp_path: Path, split: tuple[Dataset, Dataset]) -> None:
    train, test = split
    config = _config(train, test, parties=3, options={"T": 10})
    fitted, prediction = _reloaded(tmp_path, "mpc-gradp", config)
    scores = erm.add_intercept(test.unit_ball()) @ fitted.theta  # type: ignore[attr-defined]
    np.testing.assert_array_equal(prediction, (scores > 0).astype(float))


def test_ofaa_predictions_survive_the_file(tmp_path: Path, split: tuple[Dataset, Dataset]) -> None:
    train, test = split
    fitted, prediction = _reloaded(tmp_path, "ofaa", _config(train, test, parties=3))
    scores = prepare_rows(test.X, train.row_norm_bound) @ fitted.theta  # type: ignore[attr-defined]
    np.testing.assert_array_equal(prediction, (scores > 0).astype(float))


def test_a_linear_model_has_no_twin_and_nonprivate_runs_save_nothing(tmp_path: Path,
                                                                   split: tuple[Dataset, Dataset]) -> None:
    train, test = split
    report = get_algorithm("fm-logistic").run(_config(train, test))
    model = released_model(report, train)
    with pytest.raises(UnsupportedModelError, match="generative"):
        sample(model.kind, model.parameters, model.schema, 5, RandomSource.seeded(1))
    report.released = None
    with pytest.raises(UnsupportedModelError, match="drop --save"):
        released_model(report, train)
