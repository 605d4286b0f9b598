"""Paper 002's released mixture as plain data: its features, its component count and the posterior mean.

``parameters = {"components": K, "features": [...], "theta": [...]}`` where each feature is
``{"type": "beta", "name", "bounds", "squeeze"}`` or ``{"type": "categorical", "name", "categories", "edges",
"integer"}`` (:mod:`mpdp.learning.dpvi.features`), and ``theta`` is the posterior mean the fit released
(the model's unconstrained parameter vector). Sampling from it is post-processing of the DP release: no
private data is read and no budget is spent (paper 002, section 1; :meth:`mpdp.learning.dpvi.model.DPVI.synthesize`
samples the same way).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import ModelFileError, explain
from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature, Feature
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.release.schema import TableSchema
from mpdp.randomness import RandomSource

__all__ = ["check", "has_label", "model_of", "parameters", "sample"]

FloatArray = npt.NDArray[np.float64]
_TOP = {"components", "features", "theta"}
_BETA = {"type", "name", "bounds", "squeeze"}
_CATEGORICAL = {"type", "name", "categories", "edges", "integer"}


def parameters(model: MixtureModel, theta: FloatArray) -> dict[str, Any]:
    """The ``mixture`` parameters of a fitted model at its released posterior mean ``theta``."""
    features: list[dict[str, Any]] = []
    for f in model.features:
        if isinstance(f, BetaFeature):
            features.append({"type": "beta", "name": f.name, "bounds": [float(b) for b in f.bounds],
                             "squeeze": float(f.squeeze)})
        else:
            features.append({"type": "categorical", "name": f.name, "categories": list(f.categories),
                             "edges": None if f.edges is None else [float(e) for e in f.edges],
                             "integer": bool(f.integer)})
    return {"components": int(model.components), "features": features,
            "theta": [float(t) for t in model.check_theta(theta)]}


def _feature(data: Any) -> Feature:
    if not isinstance(data, dict):
        raise ModelFileError(explain("mixture feature", type(data).__name__, "an object", "rewrite the model file"))
    try:
        if data.get("type") == "beta" and set(data) == _BETA:
            bounds = data["bounds"]
            if not (isinstance(bounds, list) and len(bounds) == 2 and all(_finite(b) for b in bounds)) \
                    or not _finite(data["squeeze"]):
                raise ModelFileError(explain("beta feature", data, "finite bounds and squeeze", "rewrite the file"))
            return BetaFeature(str(data["name"]), (float(bounds[0]), float(bounds[1])), float(data["squeeze"]))
        if data.get("type") == "categorical" and set(data) == _CATEGORICAL:
            cats, edges = data["categories"], data["edges"]
            if not (isinstance(cats, list) and all(isinstance(c, str) for c in cats)) or not (
                    edges is None or (isinstance(edges, list) and all(_finite(e) for e in edges))) \
                    or not isinstance(data["integer"], bool):
                raise ModelFileError(explain("categorical feature", data, "string categories, finite edges or "
                                             "null, a bool integer", "rewrite the model file"))
            return CategoricalFeature(str(data["name"]), tuple(cats),
                                      None if edges is None else tuple(float(e) for e in edges), data["integer"])
    except ModelFileError:
        raise
    except (ValueError, TypeError) as exc:  # the feature's own validation
        raise ModelFileError(explain("mixture feature", data, "a valid feature", str(exc))) from exc
    raise ModelFileError(explain("mixture feature keys", sorted(data), f"{sorted(_BETA)} or {sorted(_CATEGORICAL)}",
                                 "rewrite the model file"))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def model_of(params: dict[str, Any]) -> tuple[MixtureModel, FloatArray]:
    """The mixture and its ``theta`` from checked parameters."""
    if not isinstance(params, dict) or set(params) != _TOP or not isinstance(params["features"], list):
        raise ModelFileError(explain("mixture parameters", sorted(params) if isinstance(params, dict) else params,
                                     f"exactly {sorted(_TOP)}", "rewrite the model file"))
    k = params["components"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise ModelFileError(explain("components", k, "an int in 1..1000", "rewrite the model file"))
    features = tuple(_feature(f) for f in params["features"])
    if not features or len({f.name for f in features}) != len(features):
        raise ModelFileError(explain("mixture features", [f.name for f in features], "distinct names, at least one",
                                     "rewrite the model file"))
    try:
        model = MixtureModel(features, components=k)
        theta = model.check_theta(np.asarray(params["theta"], dtype=np.float64))
    except (ValueError, TypeError) as exc:
        raise ModelFileError(explain("mixture", str(exc), "a theta of the model's length", "rewrite the file")) from exc
    return model, theta


def check(params: dict[str, Any], schema: TableSchema) -> None:
    """The mixture parameters are valid and model exactly the schema's attributes (and possibly its label)."""
    model, _ = model_of(params)
    names = set(model.names)
    expected = set(schema.names)
    if not expected <= names or not names <= expected | {schema.label}:
        raise ModelFileError(explain("mixture features", sorted(names), f"the schema's attributes {sorted(expected)} "
                                     "and possibly its label", "rewrite the model file"))
    for attr in schema.attributes:
        feature = model.features[model.names.index(attr.name)]
        if attr.kind == "categorical" and not (isinstance(feature, CategoricalFeature) and feature.edges is None
                                               and feature.categories == attr.categories):
            raise ModelFileError(explain(f"mixture feature {attr.name}", feature, f"the categories {attr.categories}",
                                         "rewrite the model file"))


def sample(params: dict[str, Any], schema: TableSchema, rows: int, rng: RandomSource) -> tuple[FloatArray, FloatArray]:
    """``rows`` records (attribute view in the schema's order, labels) drawn from the mixture at ``theta``.

    Numeric attributes come out in their units (Beta features decoded onto their bounds, binned ones drawn
    inside their bin; an integer attribute rounded to whole numbers within its bounds), categorical ones as
    codes of the schema's categories. A label the model does not cover is returned as zeros (the twin then has
    no label column: see :func:`has_label`).
    """
    model, theta = model_of(params)
    drawn = model.sample(theta, rows, rng)
    names = model.names
    values = np.column_stack([drawn[:, names.index(a.name)] for a in schema.attributes])
    for j, attr in enumerate(schema.attributes):
        values[:, j] = attr.in_domain(values[:, j])
    labels = drawn[:, names.index(schema.label)] if schema.label in names else np.zeros(rows)
    return values, labels


def has_label(params: dict[str, Any], schema: TableSchema) -> bool:
    """Whether the mixture models the label (then the twin has a label column)."""
    return any(isinstance(f, dict) and f.get("name") == schema.label for f in params.get("features", ()))
