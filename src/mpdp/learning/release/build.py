"""The released model of an ``mpdp run``: what each algorithm's :class:`~mpdp.learning.spec.run.RunReport`
carries in ``released``, turned into a :class:`~mpdp.learning.release.format.ReleasedModel`.

An algorithm's spec names the function that reads its release (:attr:`AlgorithmSpec.release
<mpdp.learning.spec.AlgorithmSpec.release>`), one of those below, ``(released, train) -> (kind, parameters)``:

* :func:`linear_of_fm` (fm-logistic, fm-linear): ``linear``, the coefficients on the encoded features;
* :func:`linear_of_erm` (paper 003's methods; a :class:`~mpdp.learning.distributed_erm.DistributedFit`):
  ``linear``, ``theta`` folded through the public unit-ball map ``[x / B, 1] / sqrt(2)``;
* :func:`linear_of_ofpa` (ofpa, ofaa; a :class:`~mpdp.learning.ofpa_ofaa.model.FitResult`): ``linear``,
  ``theta`` folded through ``[x, 1] / sqrt(B^2 + 1)``;
* :func:`mixture_of_dpvi` (dpvi): ``mixture`` at the released posterior mean;
* :func:`records_of` (pfds, pfds-s, pfds-minus: the sharers' synthetic records): ``records``.

A deployed run's receiving party writes the same file from what it holds (:func:`deployed_model`: its
deployment's :meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.release`, read by the same hook, in the
public schema the parties share), so ``mpdp predict`` reads either.

An algorithm without one (dp-pred, np-agt: an agent's predictor trained on its own records is not a DP release)
has nothing to save: :class:`~mpdp.errors.UnsupportedModelError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.holdings import schema_dataset
from mpdp.errors import UnsupportedModelError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.common import DistributedFit
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI
from mpdp.learning.functional_mechanism.model import FMLinearRegression, FMLogisticRegression
from mpdp.learning.ofpa_ofaa.model import FitResult, prepare_rows
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.release import kinds, mixture
from mpdp.learning.release.format import ReleasedModel
from mpdp.learning.release.schema import TableSchema
from mpdp.learning.spec.deployment import PartyRelease
from mpdp.learning.spec.run import RunReport

__all__ = ["check_savable", "deployed_model", "linear_of_erm", "linear_of_fm", "linear_of_ofpa", "mixture_of_dpvi",
           "records_of", "released_model", "savable"]

def savable() -> tuple[str, ...]:
    """The algorithms whose run releases a model file (their spec names a release reader)."""
    return tuple(name for name, spec in algorithms().items() if spec.release is not None)


def check_savable(algorithm: str) -> None:
    """Refuse ``--save`` before a run whose algorithm releases nothing mpdp can save."""
    if get_algorithm(algorithm).release is None:
        raise UnsupportedModelError(explain("--save", algorithm, f"one of {list(savable())}",
                                            f"{algorithm} releases no DP model (an agent's own predictor or a "
                                            "non-private baseline): drop --save"))


def linear_of_fm(released: Any, train: Dataset) -> tuple[str, dict[str, Any]]:
    if not isinstance(released, FMLogisticRegression | FMLinearRegression):
        raise _unexpected(released, "a fitted FM estimator")
    return "linear", kinds.linear_parameters(released.coef_, released.intercept_, task=train.task)


def linear_of_erm(released: Any, train: Dataset) -> tuple[str, dict[str, Any]]:
    if not isinstance(released, DistributedFit):
        raise _unexpected(released, "a DistributedFit")
    bound = train.row_norm_bound
    weights, intercept = kinds.fold_affine(lambda X: erm.add_intercept(X / bound), released.theta,
                                           len(train.feature_names))
    return "linear", kinds.linear_parameters(weights, intercept, task=train.task)


def linear_of_ofpa(released: Any, train: Dataset) -> tuple[str, dict[str, Any]]:
    if not isinstance(released, FitResult):
        raise _unexpected(released, "an OFPA/OFAA FitResult")
    bound = train.row_norm_bound
    weights, intercept = kinds.fold_affine(lambda X: prepare_rows(X, bound), released.theta, len(train.feature_names))
    return "linear", kinds.linear_parameters(weights, intercept, task=train.task)


def mixture_of_dpvi(released: Any, train: Dataset) -> tuple[str, dict[str, Any]]:
    if not isinstance(released, VerticalDPVI | DPVI):
        raise _unexpected(released, "a fitted DPVI")
    return "mixture", mixture.parameters(released.model_, released.theta_)


def records_of(released: Any, train: Dataset) -> tuple[str, dict[str, Any]]:
    if not (isinstance(released, tuple) and len(released) == 2 and isinstance(released[0], np.ndarray)):
        raise _unexpected(released, "released records (values, labels)")
    return "records", kinds.records_parameters(released[0], released[1])


def _unexpected(released: Any, expected: str) -> UnsupportedModelError:
    return UnsupportedModelError(explain("release", type(released).__name__, expected,
                                         "this run released no model mpdp can save (a non-private run?): "
                                         "drop --save"))


def _run_summary(report: RunReport) -> dict[str, Any]:
    record = report.as_json()
    keep = ("algorithm", "dataset", "parties", "epsilon", "delta", "metric", "non_private")
    return {k: record[k] for k in keep}


def released_model(report: RunReport, train: Dataset, *, label_bounds: tuple[float, float] | None = None,
                   label_classes: tuple[str, str] | None = None) -> ReleasedModel:
    """The model ``report`` released, in the schema of ``train`` (the run's training set); ``label_bounds``: a
    regression target's declared public bounds, ``label_classes``: the names of classes 0 and 1
    (:class:`~mpdp.learning.release.schema.TableSchema`)."""
    per_party = None if report.per_party_epsilon is None else {
        str(k): float(v) for k, v in report.per_party_epsilon.items()}
    release = PartyRelease(report.released, float(report.epsilon_spent), float(report.delta_spent), per_party)
    return _model(report.algorithm, train, release, _run_summary(report), label_bounds, label_classes)


def deployed_model(algorithm: str, schema: Mapping[str, Any], release: PartyRelease, run: Mapping[str, Any], *,
                   label_bounds: tuple[float, float] | None = None) -> ReleasedModel:
    """The model a deployed run's receiving party writes: ``release`` (its deployment's
    :meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.release`) read by the spec's hook, in the public
    ``schema`` of the shared section (:func:`~mpdp.datasets.holdings.schema_of`); ``run`` describes the run."""
    train = schema_dataset(schema)
    return _model(algorithm, train, release, dict(run), label_bounds, train.label_classes)


def _model(algorithm: str, train: Dataset, release: PartyRelease, run: dict[str, Any],
           label_bounds: tuple[float, float] | None, label_classes: tuple[str, str] | None) -> ReleasedModel:
    schema = TableSchema.of(train, label_bounds=label_bounds, label_classes=label_classes)
    hook = get_algorithm(algorithm).release
    if hook is None:
        check_savable(algorithm)
        raise UnsupportedModelError(algorithm)  # pragma: no cover - check_savable raised
    kind, params = hook.load()(release.released, train)
    if not (math.isfinite(release.epsilon_spent) and math.isfinite(release.delta_spent)):
        raise UnsupportedModelError(explain("privacy spent", release.epsilon_spent, "a finite epsilon (a DP release)",
                                            "a non-private run releases nothing to save"))
    return ReleasedModel(algorithm=algorithm, kind=kind, schema=schema, parameters=params,
                         epsilon_spent=float(release.epsilon_spent), delta_spent=float(release.delta_spent),
                         per_party=release.per_party, run=run)
