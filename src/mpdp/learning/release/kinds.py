"""What each kind of released model holds, how its parameters are checked, and what a reader can do with it.

* ``linear`` (:func:`linear_parameters`, :func:`predict`): a linear score on the schema's encoding;
* ``mixture`` (:mod:`mpdp.learning.release.mixture`): paper 002's mixture at its released posterior mean;
* ``records`` (:func:`records_parameters`): released DP synthetic records (attribute view and labels).

Prediction and synthesis from a released model are post-processing of the DP release: they read no private
data and spend no privacy budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import ModelFileError, UnsupportedModelError, explain
from mpdp.learning.release import mixture
from mpdp.learning.release.schema import TableSchema
from mpdp.randomness import RandomSource

__all__ = ["check_parameters", "check_predictive", "fold_affine", "linear_parameters", "predict",
           "records_parameters", "sample"]

FloatArray = npt.NDArray[np.float64]
_LINEAR = {"link", "weights", "intercept"}
_RECORDS = {"values", "labels"}


def _floats(value: Any, length: int | None, where: str) -> FloatArray:
    ok = isinstance(value, list) and all(isinstance(v, int | float) and not isinstance(v, bool)
                                         and math.isfinite(v) for v in value)
    if not ok or (length is not None and len(value) != length):
        got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise ModelFileError(explain(where, got, f"{length if length is not None else 'a list of'} finite numbers",
                                     "rewrite the model file"))
    return np.asarray(value, dtype=np.float64)


def check_parameters(kind: str, parameters: dict[str, Any], schema: TableSchema) -> None:
    """Refuse parameters that do not fit ``kind`` and ``schema`` (called by the model-file reader)."""
    if kind == "linear":
        if set(parameters) != _LINEAR or parameters["link"] not in ("logistic", "identity"):
            raise ModelFileError(explain("linear parameters", sorted(parameters), f"exactly {sorted(_LINEAR)}, "
                                         "link 'logistic' or 'identity'", "rewrite the model file"))
        _floats(parameters["weights"], len(schema.feature_names), "weights")
        _floats([parameters["intercept"]], 1, "intercept")
        if (parameters["link"] == "logistic") != (schema.task == "classification"):
            raise ModelFileError(explain("link", parameters["link"], f"the link of a {schema.task} model",
                                         "rewrite the model file"))
    elif kind == "mixture":
        mixture.check(parameters, schema)
    elif kind == "records":
        _records(parameters, schema)
    else:  # pragma: no cover - the reader checks the kind first
        raise ModelFileError(explain("kind", kind, "a known kind", "rewrite the model file"))


# -- linear ---------------------------------------------------------------------------------------------------
def fold_affine(transform: Callable[[FloatArray], FloatArray], theta: FloatArray, d: int) -> tuple[FloatArray, float]:
    """Weights and intercept on the encoded features of ``theta . transform(X)``, for an affine ``transform``
    (a public rescaling and an intercept column): evaluated at 0 and at the unit vectors, then checked."""
    basis = np.vstack([np.zeros((1, d)), np.eye(d)])
    scores = transform(basis) @ theta
    intercept = float(scores[0])
    weights = scores[1:] - intercept
    probe = np.linspace(-1.0, 1.0, d)[None, :]
    if not np.allclose(transform(probe) @ theta, probe @ weights + intercept, rtol=1e-9, atol=1e-9):
        raise ModelFileError(explain("feature transform", "not affine", "an affine map", "report this bug"))
    return weights, intercept


def linear_parameters(weights: FloatArray, intercept: float, *, task: str) -> dict[str, Any]:
    """The ``linear`` parameters: logistic link for classification, identity for regression."""
    return {"link": "logistic" if task == "classification" else "identity",
            "weights": [float(w) for w in np.asarray(weights, dtype=np.float64)], "intercept": float(intercept)}


def check_predictive(kind: str) -> None:
    """Refuse a release that has no predictor (a generative model or released records)."""
    if kind != "linear":
        raise UnsupportedModelError(explain("model kind", kind, "a 'linear' model for predict",
                                            "this algorithm releases a generative model: use mpdp synthesize"))


def predict(kind: str, parameters: dict[str, Any], schema: TableSchema,
            values: FloatArray) -> tuple[FloatArray, FloatArray | None]:
    """Predictions for attribute-view rows: (class 0/1 or regression value, probability of class 1 or None).

    Regression values are on the label's encoded scale [-1, 1] (the scale the model was trained on).
    """
    check_predictive(kind)
    X = schema.encode(values)
    score = X @ np.asarray(parameters["weights"], dtype=np.float64) + float(parameters["intercept"])
    if parameters["link"] == "identity":
        return score, None
    proba = 1.0 / (1.0 + np.exp(-np.clip(score, -500, 500)))
    return (score > 0).astype(np.float64), proba


# -- records --------------------------------------------------------------------------------------------------
def records_parameters(values: FloatArray, labels: FloatArray) -> dict[str, Any]:
    """The ``records`` parameters: released rows (attribute view) and their labels."""
    return {"values": [[float(v) for v in row] for row in np.asarray(values, dtype=np.float64)],
            "labels": [float(v) for v in np.asarray(labels, dtype=np.float64)]}


def _records(parameters: dict[str, Any], schema: TableSchema) -> tuple[FloatArray, FloatArray]:
    if set(parameters) != _RECORDS or not isinstance(parameters["values"], list) or not parameters["values"]:
        raise ModelFileError(explain("records parameters", sorted(parameters), f"exactly {sorted(_RECORDS)}, "
                                     "at least one record", "rewrite the model file"))
    a = len(schema.attributes)
    values = np.vstack([_floats(row, a, "record") for row in parameters["values"]])
    labels = _floats(parameters["labels"], values.shape[0], "labels")
    try:
        schema.encode(values)  # codes and bounds within the schema
    except ValueError as exc:
        raise ModelFileError(explain("records", str(exc), "rows in the schema's domain", "rewrite the file")) from exc
    if schema.task == "classification" and not np.all(np.isin(labels, (0.0, 1.0))):
        raise ModelFileError(explain("labels", np.unique(labels)[:5], "0 or 1", "rewrite the model file"))
    return values, labels


def sample(kind: str, parameters: dict[str, Any], schema: TableSchema, rows: int,
           rng: RandomSource) -> tuple[FloatArray, FloatArray]:
    """``rows`` synthetic records (attribute view, labels) from a generative release; post-processing."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ModelFileError(explain("rows", rows, "an int >= 1", "pass e.g. --rows 1000"))
    if kind == "mixture":
        return mixture.sample(parameters, schema, rows, rng)
    if kind == "records":
        values, labels = _records(parameters, schema)
        pick = rng.integers(0, values.shape[0], rows)
        drawn = np.column_stack([a.in_domain(values[pick, j]) for j, a in enumerate(schema.attributes)])
        return drawn, labels[pick]
    raise UnsupportedModelError(explain("model kind", kind, "a generative release ('mixture' or 'records')",
                                        "synthesize works for dpvi and pfds models; use mpdp predict for this one"))
