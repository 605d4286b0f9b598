"""The released model of an ``mpdp run``: what each algorithm's :class:`~mpdp.learning.registry.RunReport`
carries in ``released``, turned into a :class:`~mpdp.learning.release.format.ReleasedModel`.

* fm-logistic, fm-linear (:class:`~mpdp.learning.functional_mechanism.model.FMLogisticRegression`): ``linear``, the
  coefficients on the encoded features;
* mpc-gradp, mpc-outp, pathak, local-* (and ``-ridge``; a :class:`~mpdp.learning.distributed_erm.DistributedFit`):
  ``linear``, ``theta`` folded through the public unit-ball map ``[x / B, 1] / sqrt(2)``;
* ofpa (either perturbation), ofaa (:class:`~mpdp.learning.ofpa_ofaa.model.FitResult`): ``linear``, ``theta``
  folded through ``[x, 1] / sqrt(B^2 + 1)``;
* dpvi (:class:`~mpdp.learning.dpvi.VerticalDPVI`): ``mixture`` at the released posterior mean;
* pfds, pfds-s, pfds-minus (the sharers' synthetic records): ``records``.

Other algorithms (dp-pred, np-agt: an agent's predictor trained on its own records is not a DP release) have
nothing to save: :class:`~mpdp.errors.UnsupportedModelError`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpdp.datasets.dataset import Dataset
from mpdp.errors import UnsupportedModelError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.common import DistributedFit
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI
from mpdp.learning.functional_mechanism.model import FMLinearRegression, FMLogisticRegression
from mpdp.learning.ofpa_ofaa.model import FitResult, prepare_rows
from mpdp.learning.registry import RunReport
from mpdp.learning.release import kinds, mixture
from mpdp.learning.release.format import ReleasedModel
from mpdp.learning.release.schema import TableSchema

__all__ = ["SAVABLE", "check_savable", "released_model"]

#: Algorithms whose run releases a model file (the ``-ridge`` variants of paper 003's methods included).
SAVABLE = ("fm-logistic", "fm-linear", "mpc-gradp", "mpc-outp", "pathak", "local-outp", "local-objp", "local-gradp",
           "ofpa", "ofaa", "dpvi", "pfds", "pfds-s", "pfds-minus")


def check_savable(algorithm: str) -> None:
    """Refuse ``--save`` before a run whose algorithm releases nothing mpdp can save."""
    if algorithm.removesuffix("-ridge") not in SAVABLE:
        raise UnsupportedModelError(explain("--save", algorithm, f"one of {list(SAVABLE)}",
                                            f"{algorithm} releases no DP model (an agent's own predictor or a "
                                            "non-private baseline): drop --save"))


def _run_summary(report: RunReport) -> dict[str, Any]:
    record = report.as_json()
    keep = ("algorithm", "dataset", "parties", "epsilon", "delta", "metric", "non_private")
    return {k: record[k] for k in keep}


def released_model(report: RunReport, train: Dataset, *, label_bounds: tuple[float, float] | None = None,
                   label_classes: tuple[str, str] | None = None) -> ReleasedModel:
    """The model ``report`` released, in the schema of ``train`` (the run's training set); ``label_bounds``: a
    regression target's declared public bounds, ``label_classes``: the names of classes 0 and 1
    (:class:`~mpdp.learning.release.schema.TableSchema`)."""
    schema = TableSchema.of(train, label_bounds=label_bounds, label_classes=label_classes)
    released = report.released
    d = len(schema.feature_names)
    if isinstance(released, FMLogisticRegression | FMLinearRegression):
        kind, params = "linear", kinds.linear_parameters(released.coef_, released.intercept_, task=train.task)
    elif isinstance(released, DistributedFit):
        bound = train.row_norm_bound
        weights, intercept = kinds.fold_affine(lambda X: erm.add_intercept(X / bound), released.theta, d)
        kind, params = "linear", kinds.linear_parameters(weights, intercept, task=train.task)
    elif isinstance(released, FitResult):
        bound = train.row_norm_bound
        weights, intercept = kinds.fold_affine(lambda X: prepare_rows(X, bound), released.theta, d)
        kind, params = "linear", kinds.linear_parameters(weights, intercept, task=train.task)
    elif isinstance(released, VerticalDPVI | DPVI):
        kind, params = "mixture", mixture.parameters(released.model_, released.theta_)
    elif isinstance(released, tuple) and len(released) == 2 and isinstance(released[0], np.ndarray):
        kind, params = "records", kinds.records_parameters(released[0], released[1])
    else:
        raise UnsupportedModelError(explain(f"{report.algorithm} release", type(released).__name__,
                                            f"a model of one of {list(SAVABLE)}", "drop --save for this algorithm"))
    if not (math.isfinite(report.epsilon_spent) and math.isfinite(report.delta_spent)):
        raise UnsupportedModelError(explain("privacy spent", report.epsilon_spent, "a finite epsilon (a DP release)",
                                            "a non-private run releases nothing to save"))
    per_party = None if report.per_party_epsilon is None else {
        str(k): float(v) for k, v in report.per_party_epsilon.items()}
    return ReleasedModel(algorithm=report.algorithm, kind=kind, schema=schema, parameters=params,
                         epsilon_spent=float(report.epsilon_spent), delta_spent=float(report.delta_spent),
                         per_party=per_party, run=_run_summary(report))
