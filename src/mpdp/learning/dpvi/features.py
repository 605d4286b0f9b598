"""The mixture's component distributions over one feature each, their priors, and a party's encoded records.

* :class:`BetaFeature`: a numeric attribute scaled from its public ``bounds`` into ``[s, 1 - s]``
  (``s = squeeze``, so ``log x`` and ``log(1 - x)`` stay finite), modelled as ``Beta(a_kf, b_kf)``; parameters
  ``(log a_k, log b_k)`` per component;
* :class:`CategoricalFeature`: a categorical attribute (or a numeric one discretised by public bin ``edges``),
  modelled as ``Categorical(p_kf)``; parameters ``z_k`` of length ``C - 1``, ``p_k = softmax([z_k, 0])``;
* :class:`MixturePriors`: ``pi ~ Dirichlet``, ``p_kf ~ Dirichlet``, ``a_kf, b_kf ~ Gamma(shape, rate)``
  (paper 002, section 6.1);
* :class:`EncodedBlock`: one party's records as the model reads them (Beta features in ``(0, 1)``, category codes).

How they combine into one parameter vector and the local computations of a party:
:mod:`~mpdp.learning.dpvi.mixture`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = ["BetaFeature", "CategoricalFeature", "EncodedBlock", "Feature", "MixturePriors"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _check_positive(name: str, value: float, fix: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ParameterError(explain(name, value, "a finite number > 0", fix))
    return float(value)


# -- features -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BetaFeature:
    """A numeric attribute on public ``bounds``, scaled into ``[squeeze, 1 - squeeze]`` and Beta-distributed."""

    name: str
    bounds: tuple[float, float]
    squeeze: float = 1e-3
    kind: ClassVar[str] = "beta"

    def __post_init__(self) -> None:
        lo, hi = (float(b) for b in self.bounds)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ParameterError(explain(f"bounds of {self.name}", self.bounds, "finite (low, high) with low < high",
                                         "declare the attribute's public range"))
        if not 0 < self.squeeze < 0.5:
            raise ParameterError(explain("squeeze", self.squeeze, "a number in (0, 0.5)", "pass e.g. 1e-3"))

    @property
    def n_params(self) -> int:
        return 2

    @property
    def n_stats(self) -> int:
        return 2

    @property
    def stat_bound(self) -> float:
        """``max |t(x)|``: ``t = (log x, log(1 - x))`` with ``x`` in ``[s, 1 - s]``."""
        return -math.log(self.squeeze)

    def encode(self, values: npt.ArrayLike) -> FloatArray:
        v = np.asarray(values, dtype=np.float64)
        lo, hi = self.bounds
        if not np.all(np.isfinite(v)) or np.any(v < lo) or np.any(v > hi):
            bad = v[~(np.isfinite(v) & (v >= lo) & (v <= hi))][:3]
            raise DomainError(explain(f"values of {self.name}", bad, f"finite numbers in [{lo:g}, {hi:g}]",
                                      "clip the attribute to its declared public bounds, or declare wider bounds"))
        unit = (v - lo) / (hi - lo)
        return self.squeeze + (1.0 - 2.0 * self.squeeze) * unit

    def decode(self, x: FloatArray) -> FloatArray:
        lo, hi = self.bounds
        unit = (np.asarray(x, dtype=np.float64) - self.squeeze) / (1.0 - 2.0 * self.squeeze)
        return lo + np.clip(unit, 0.0, 1.0) * (hi - lo)


@dataclass(frozen=True)
class CategoricalFeature:
    """A categorical attribute (codes ``0..C-1``), or a numeric one discretised into public bins.

    With ``edges`` (``C + 1`` increasing numbers), a numeric value ``v`` has code ``c`` when
    ``edges[c] <= v < edges[c + 1]`` (the last bin includes its upper edge); synthetic values are drawn
    uniformly within their bin (rounded when ``integer``).
    """

    name: str
    categories: tuple[str, ...]
    edges: tuple[float, ...] | None = None
    integer: bool = False
    kind: ClassVar[str] = "categorical"

    def __post_init__(self) -> None:
        if len(self.categories) < 2:
            raise ParameterError(explain(f"categories of {self.name}", self.categories, "at least two categories",
                                         "drop constant attributes before modelling"))
        if self.edges is not None:
            e = np.asarray(self.edges, dtype=np.float64)
            if e.shape != (len(self.categories) + 1,) or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
                raise ParameterError(explain(f"edges of {self.name}", self.edges,
                                             f"{len(self.categories) + 1} increasing finite numbers",
                                             "pass one edge more than there are bins"))

    @property
    def size(self) -> int:
        return len(self.categories)

    @property
    def n_params(self) -> int:
        return self.size - 1

    @property
    def n_stats(self) -> int:
        return self.size - 1

    @property
    def stat_bound(self) -> float:
        return 1.0

    def encode(self, values: npt.ArrayLike) -> IntArray:
        v = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(v)):
            raise DomainError(explain(f"values of {self.name}", "NaN or inf", "finite values", "clean the data"))
        if self.edges is not None:
            lo, hi = self.edges[0], self.edges[-1]
            if np.any(v < lo) or np.any(v > hi):
                bad = v[(v < lo) | (v > hi)][:3]
                raise DomainError(explain(f"values of {self.name}", bad, f"numbers in [{lo:g}, {hi:g}]",
                                          "clip the attribute to its declared bins, or widen the edges"))
            codes = np.searchsorted(np.asarray(self.edges[1:-1]), v, side="right")
            return codes.astype(np.int64)
        if np.any(v != np.rint(v)) or np.any(v < 0) or np.any(v >= self.size):
            bad = v[(v != np.rint(v)) | (v < 0) | (v >= self.size)][:3]
            raise DomainError(explain(f"codes of {self.name}", bad, f"integer codes 0..{self.size - 1} (categories "
                                      "seen at fit time)", "map unseen categories to a known one, or refit with "
                                      "the full category list"))
        return v.astype(np.int64)

    def decode(self, codes: IntArray, rng: RandomSource) -> FloatArray:
        c = np.asarray(codes, dtype=np.int64)
        if self.edges is None:
            return c.astype(np.float64)
        e = np.asarray(self.edges, dtype=np.float64)
        u = rng.random(c.shape)
        v = e[c] + u * (e[c + 1] - e[c])
        return np.minimum(np.rint(v), e[-1]) if self.integer else v


Feature = BetaFeature | CategoricalFeature


@dataclass(frozen=True)
class MixturePriors:
    """Dirichlet concentrations for the weights and categorical probabilities; Gamma(shape, rate) on Beta params."""

    weights_concentration: float = 1.0
    categorical_concentration: float = 1.0
    beta_shape: float = 1.0
    beta_rate: float = 1.0

    def __post_init__(self) -> None:
        for name in ("weights_concentration", "categorical_concentration", "beta_shape", "beta_rate"):
            _check_positive(name, getattr(self, name), f"pass e.g. {name}=1.0")


# -- encoded data and the public map of one party's block --------------------------------------------------
@dataclass(frozen=True)
class EncodedBlock:
    """One party's records, encoded: Beta features as ``x`` in ``(0, 1)`` and categorical codes."""

    beta: FloatArray  # (n, number of Beta features of the block)
    codes: IntArray  # (n, number of categorical features of the block)

    @property
    def n(self) -> int:
        return int(self.beta.shape[0])

    def rows(self, index: npt.ArrayLike) -> EncodedBlock:
        idx = np.asarray(index)
        return EncodedBlock(self.beta[idx], self.codes[idx])
