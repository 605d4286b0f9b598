"""The public side of paper 004's data: the attribute schema every agent shares and the ERM feature map.

:class:`Schema` holds the typed attributes, the task and the tree domain built from them; :func:`features`
maps attribute-view rows to the unit-ball ERM features every agent's predictor (and every baseline) uses.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 3 (the data universe) and section 4 (the ERM tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute
from mpdp.datasets.encoding import encode
from mpdp.errors import ParameterError, explain
from mpdp.learning import erm
from mpdp.learning.pfds.domain import TreeDomain

__all__ = ["Schema", "encoded_features", "features"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Schema:
    """The public description every agent shares: typed attributes, task and the tree domain built from them."""

    attributes: tuple[Attribute, ...]
    task: Literal["classification", "regression"]
    label_buckets: int = 10
    domain: TreeDomain = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.attributes:
            raise ParameterError(explain("attributes", "none declared", "typed attributes (numeric or categorical)",
                                         "declare the attribute kinds, e.g. load the data with mpdp.datasets"))
        numeric = tuple(a.kind == "numeric" for a in self.attributes)
        lower = tuple(float(a.bounds[0]) if a.bounds else float("nan") for a in self.attributes)
        upper = tuple(float(a.bounds[1]) if a.bounds else float("nan") for a in self.attributes)
        cats = tuple(len(a.categories) if a.kind == "categorical" and a.categories else 0 for a in self.attributes)
        classes = 2 if self.task == "classification" else self.label_buckets
        domain = TreeDomain(tuple(a.name for a in self.attributes), numeric, lower, upper, cats, self.task, classes)
        object.__setattr__(self, "domain", domain)


def encoded_features(schema: Schema, values: FloatArray) -> FloatArray:
    """The shared encoding of attribute-view rows (numeric scaled to [-1, 1] by public bounds, one-hots)."""
    X, _, _ = encode(schema.attributes, values)
    return X


def features(schema: Schema, values: FloatArray) -> FloatArray:
    """ERM features of attribute-view rows: the shared encoding, scaled into the unit ball, plus an intercept.

    The encoding gives every row norm at most ``sqrt(#attributes)`` (one-hot blocks hold a single 1), so
    dividing by that public constant puts rows in the unit ball before :func:`erm.add_intercept`.
    """
    return erm.add_intercept(encoded_features(schema, values) / np.sqrt(len(schema.attributes)))
