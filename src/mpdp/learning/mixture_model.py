"""Paper 002's generative model: a mixture whose components factorise over the parties' features.

``p(x | theta) = sum_k pi_k prod_f f_f(x_f | theta_kf)`` (paper 002, Eqs. 13-17; section 6.1), where each
feature ``f`` is

* a :class:`BetaFeature`: a numeric attribute scaled from its public ``bounds`` into ``[s, 1 - s]``
  (``s = squeeze``, so ``log x`` and ``log(1 - x)`` stay finite), modelled as ``Beta(a_kf, b_kf)``;
* a :class:`CategoricalFeature`: a categorical attribute (or a numeric one discretised by public bin
  ``edges``), modelled as ``Categorical(p_kf)``.

Parameters are *unconstrained* reals (what the Gaussian variational posterior of :mod:`.variational` lives
on), in one flat vector laid out by :class:`MixtureModel`:

* weights: ``beta`` of length ``K - 1``, ``pi = softmax([beta, 0])`` (additive log-ratio);
* a Beta feature: ``(log a_k, log b_k)`` per component, a ``(K, 2)`` block;
* a Categorical feature with ``C`` levels: ``z_k`` of length ``C - 1``, ``p_k = softmax([z_k, 0])``, ``(K, C - 1)``.

Priors (section 6.1, the formulas lost in extraction restored as the README says): ``pi ~ Dirichlet(1)``,
``p_kf ~ Dirichlet(1)``, and ``a_kf, b_kf ~ Gamma(1, 1)``; :meth:`MixtureModel.log_prior_grad` includes the
log-Jacobians of the transforms (``sum_k log pi_k`` for a log-ratio simplex, ``log a`` for ``a = e^u``).

Every component density is an exponential family, ``log f(x | theta) = eta(theta) . t(x) - A(theta)``, so the
gradient of a *weighted sum* of log-densities needs only the weighted sums of the sufficient statistics
``t(x)``: ``sum_i w_ik d/dtheta_k log f(x_i | theta_k) = J_k^T (T^T w)_k - grad A_k sum_i w_ik``.
:class:`FeatureBlock` (one party's features) computes, locally, what the secure protocol needs from a party:
log-densities, per-(record, component) squared gradient norms, the statistics ``T`` and the public linear
map from ``(T^T w, sum_i w)`` to the gradient (:meth:`FeatureBlock.stat_map`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from scipy import special

from mpdp.datasets.dataset import Dataset
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain
from mpdp.protocols.mixture_gradient import StatMap
from mpdp.randomness import RandomSource

__all__ = [
    "ADULT_BINS",
    "BetaFeature",
    "CategoricalFeature",
    "EncodedBlock",
    "Feature",
    "FeatureBlock",
    "MixtureModel",
    "MixturePriors",
    "adult_model",
]

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


@dataclass(frozen=True)
class FeatureBlock:
    """A group of features (one party's), with the local computations the protocol asks of that party."""

    model: MixtureModel
    features: tuple[int, ...]

    @cached_property
    def beta_features(self) -> tuple[int, ...]:
        return tuple(f for f in self.features if isinstance(self.model.features[f], BetaFeature))

    @cached_property
    def categorical_features(self) -> tuple[int, ...]:
        return tuple(f for f in self.features if isinstance(self.model.features[f], CategoricalFeature))

    @cached_property
    def indices(self) -> IntArray:
        """Positions of this block's parameters in the model's flat vector (in block order)."""
        return np.concatenate([np.arange(self.model.slice(f).start, self.model.slice(f).stop) for f in self.features]
                              ).astype(np.int64) if self.features else np.zeros(0, dtype=np.int64)

    @property
    def dim(self) -> int:
        return int(self.indices.size)

    @cached_property
    def n_stats(self) -> int:
        return sum(self.model.features[f].n_stats for f in self.features)

    @cached_property
    def stat_bound(self) -> float:
        return max((self.model.features[f].stat_bound for f in self.features), default=0.0)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.model.features[f].name for f in self.features)

    # -- data ---------------------------------------------------------------------------------------------
    def encode(self, values: npt.ArrayLike) -> EncodedBlock:
        """Encode raw attribute values ``(n, len(features))`` in block order; refuses out-of-domain values."""
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != len(self.features):
            raise ShapeMismatchError(explain("values", v.shape, f"(n, {len(self.features)}) for {self.names}",
                                             "pass one column per feature of the block"))
        pos = {f: i for i, f in enumerate(self.features)}
        beta = np.column_stack([self.model.features[f].encode(v[:, pos[f]]) for f in self.beta_features]) \
            if self.beta_features else np.zeros((v.shape[0], 0))
        codes = np.column_stack([self.model.features[f].encode(v[:, pos[f]]) for f in self.categorical_features]) \
            if self.categorical_features else np.zeros((v.shape[0], 0), dtype=np.int64)
        return EncodedBlock(beta.astype(np.float64), codes.astype(np.int64))

    # -- local computations -------------------------------------------------------------------------------
    def _cached(self, theta: FloatArray, what: str, f: int, make: Callable[[], Any]) -> Any:
        # A step asks for each feature's parameters (and digammas) at the same theta several times (log-densities,
        # norms, the public map and bound): computed once per theta, keyed by its bytes, and read-only.
        key = theta.tobytes()
        cache = self.__dict__.get("_theta_cache")
        if cache is None or cache[0] != key:
            cache = (key, {})
            object.__setattr__(self, "_theta_cache", cache)
        values: dict[tuple[str, int], Any] = cache[1]
        if (what, f) not in values:
            made = make()
            for array in made if isinstance(made, tuple) else (made,):
                array.flags.writeable = False
            values[(what, f)] = made
        return values[(what, f)]

    def _beta(self, theta: FloatArray, f: int) -> tuple[FloatArray, FloatArray]:
        def make() -> tuple[FloatArray, FloatArray]:
            block = theta[self.model.slice(f)].reshape(self.model.components, 2)
            return np.exp(block[:, 0]), np.exp(block[:, 1])

        result: tuple[FloatArray, FloatArray] = self._cached(theta, "beta", f, make)
        return result

    def _digammas(self, theta: FloatArray, f: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(psi(a), psi(b), psi(a + b))`` of a Beta feature."""
        def make() -> tuple[FloatArray, FloatArray, FloatArray]:
            a, b = self._beta(theta, f)
            return special.digamma(a), special.digamma(b), special.digamma(a + b)

        result: tuple[FloatArray, FloatArray, FloatArray] = self._cached(theta, "digamma", f, make)
        return result

    def _probs(self, theta: FloatArray, f: int) -> FloatArray:
        def make() -> FloatArray:
            z = theta[self.model.slice(f)].reshape(self.model.components, -1)
            return _softmax_last_zero(z)

        result: FloatArray = self._cached(theta, "probs", f, make)
        return result

    def log_densities(self, theta: FloatArray, data: EncodedBlock) -> FloatArray:
        """``a_ik = sum_(f in block) log f_f(x_if | theta_kf)``, shape ``(n, K)``."""
        out = np.zeros((data.n, self.model.components))
        for col, f in enumerate(self.beta_features):
            a, b = self._beta(theta, f)
            lx, l1x = np.log(data.beta[:, col]), np.log1p(-data.beta[:, col])
            out += np.outer(lx, a - 1.0) + np.outer(l1x, b - 1.0) - special.betaln(a, b)
        for col, f in enumerate(self.categorical_features):
            logp = np.log(self._probs(theta, f))  # (K, C)
            out += logp[:, data.codes[:, col]].T
        return out

    def per_example_grads(self, theta: FloatArray, data: EncodedBlock) -> FloatArray:
        """``g_ikd = d a_ik / d theta_(block d)``, shape ``(n, K, per-component block width)`` in block order.

        The block's coordinate ``indices`` are ordered feature by feature, each feature ``(K, p_f)``
        row-major; coordinate ``(k, j)`` of feature ``f`` is entry ``[:, k, offset_f + j]`` here.
        """
        parts = []
        for f in self.features:
            parts.append(self._feature_grads(theta, data, f))
        return np.concatenate(parts, axis=2) if parts else np.zeros((data.n, self.model.components, 0))

    def _feature_grads(self, theta: FloatArray, data: EncodedBlock, f: int) -> FloatArray:
        feature = self.model.features[f]
        if isinstance(feature, BetaFeature):
            col = self.beta_features.index(f)
            a, b = self._beta(theta, f)
            lx, l1x = np.log(data.beta[:, col]), np.log1p(-data.beta[:, col])
            psi_a, psi_b, dab = self._digammas(theta, f)
            ga = a * (lx[:, None] - psi_a + dab)
            gb = b * (l1x[:, None] - psi_b + dab)
            return np.stack([ga, gb], axis=2)
        col = self.categorical_features.index(f)
        p = self._probs(theta, f)[:, :-1]  # (K, C-1)
        onehot = np.zeros((data.n, feature.size))
        onehot[np.arange(data.n), data.codes[:, col]] = 1.0
        return onehot[:, None, :-1] - p[None, :, :]

    def sq_norms(self, theta: FloatArray, data: EncodedBlock) -> FloatArray:
        """``N_ik = ||g_ik||^2`` over the block's coordinates, shape ``(n, K)`` (no ``(n, K, d)`` array)."""
        out = np.zeros((data.n, self.model.components))
        for col, f in enumerate(self.beta_features):
            a, b = self._beta(theta, f)
            lx, l1x = np.log(data.beta[:, col]), np.log1p(-data.beta[:, col])
            psi_a, psi_b, dab = self._digammas(theta, f)
            out += (a * (lx[:, None] - psi_a + dab)) ** 2
            out += (b * (l1x[:, None] - psi_b + dab)) ** 2
        for col, f in enumerate(self.categorical_features):
            p = self._probs(theta, f)  # (K, C)
            size = p.shape[1]
            code = data.codes[:, col]
            base = np.sum(p[:, :-1] ** 2, axis=1)  # (K,)
            hit = np.where(code[:, None] < size - 1, 1.0 - 2.0 * p[:, np.minimum(code, size - 2)].T, 0.0)
            out += base[None, :] + hit
        return out

    def sq_norm_bound(self, theta: FloatArray) -> float:
        """A public bound on every ``N_ik`` (from ``theta`` and the features' public domains alone)."""
        total = np.zeros(self.model.components)
        for f in self.beta_features:
            feature = self.model.features[f]
            squeeze = feature.squeeze if isinstance(feature, BetaFeature) else 0.5
            a, b = self._beta(theta, f)
            psi_a, psi_b, dab = self._digammas(theta, f)
            low = math.log(squeeze)  # log x and log(1 - x) lie in [low, log(1 - s)] within [low, 0]
            da, db = dab - psi_a, dab - psi_b
            ga = a * np.maximum(np.abs(low + da), np.abs(da))
            gb = b * np.maximum(np.abs(low + db), np.abs(db))
            total += ga**2 + gb**2
        for f in self.categorical_features:
            p = self._probs(theta, f)
            total += 1.0 + np.sum(p[:, :-1] ** 2, axis=1)
        return float(np.max(total)) if total.size else 0.0

    def stats(self, data: EncodedBlock) -> FloatArray:
        """Sufficient statistics ``T``, shape ``(n, n_stats)``: ``(log x, log(1 - x))`` per Beta feature and the
        first ``C - 1`` one-hot columns per categorical feature, in block order."""
        cols = []
        for f in self.features:
            feature = self.model.features[f]
            if isinstance(feature, BetaFeature):
                x = data.beta[:, self.beta_features.index(f)]
                cols += [np.log(x)[:, None], np.log1p(-x)[:, None]]
            else:
                onehot = np.zeros((data.n, feature.size))
                onehot[np.arange(data.n), data.codes[:, self.categorical_features.index(f)]] = 1.0
                cols.append(onehot[:, :-1])
        return np.concatenate(cols, axis=1) if cols else np.zeros((data.n, 0))

    def stat_map(self, theta: FloatArray) -> StatMap:
        """The public map from ``(M = T^T w, s = sum_i w_i)`` to ``sum_i w_ik g_ik`` (see :class:`StatMap`).

        Beta: ``d/dlog a_k = a_k (M[log x, k] - (psi(a_k) - psi(a_k + b_k)) s_k)`` (and likewise for ``b``);
        Categorical: ``d/dz_kc = M[c, k] - p_kc s_k``.
        """
        K = self.model.components
        cs, cz = [], []
        for f in self.features:
            feature = self.model.features[f]
            if isinstance(feature, BetaFeature):
                a, b = self._beta(theta, f)
                psi_a, psi_b, dab = self._digammas(theta, f)
                cs.append(np.stack([a, b], axis=1).ravel())
                cz.append(np.stack([-a * (psi_a - dab), -b * (psi_b - dab)], axis=1).ravel())
            else:
                cs.append(np.ones(K * (feature.size - 1)))
                cz.append(-self._probs(theta, f)[:, :-1].ravel())
        stat, comp = self._stat_layout
        if not cs:
            empty = np.zeros(0)
            return StatMap(stat.copy(), comp.copy(), empty, empty)
        return StatMap(stat.copy(), comp.copy(), np.concatenate(cs), np.concatenate(cz))

    @cached_property
    def _stat_layout(self) -> tuple[IntArray, IntArray]:
        """The statistic and component index of each entry of :meth:`stat_map` (independent of ``theta``)."""
        K = self.model.components
        ks = np.arange(K)
        stat, comp = [], []
        offset = 0
        for f in self.features:
            feature = self.model.features[f]
            width = 2 if isinstance(feature, BetaFeature) else feature.size - 1
            stat.append(np.tile(np.arange(offset, offset + width), K))
            comp.append(np.repeat(ks, width))
            offset += feature.n_stats
        if not stat:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(stat).astype(np.int64), np.concatenate(comp).astype(np.int64)

    def sample(self, theta: FloatArray, components: IntArray, rng: RandomSource) -> FloatArray:
        """Synthetic attribute values ``(n, len(features))`` for records drawn from the given components."""
        n = int(components.shape[0])
        out = np.zeros((n, len(self.features)))
        for i, f in enumerate(self.features):
            feature = self.model.features[f]
            u = rng.spawn(f"feature/{feature.name}").random_open(n)
            if isinstance(feature, BetaFeature):
                a, b = self._beta(theta, f)
                x = special.betaincinv(a[components], b[components], u)
                out[:, i] = feature.decode(x)
            else:
                cdf = np.cumsum(self._probs(theta, f), axis=1)[components]
                codes = np.minimum(np.sum(cdf < u[:, None], axis=1), feature.size - 1)
                out[:, i] = feature.decode(codes, rng.spawn(f"bins/{feature.name}"))
        return out


def _softmax_last_zero(z: FloatArray) -> FloatArray:
    """``softmax([z, 0])`` along the last axis."""
    ext = np.concatenate([z, np.zeros((*z.shape[:-1], 1))], axis=-1)
    ext -= np.max(ext, axis=-1, keepdims=True)
    e = np.exp(ext)
    out: FloatArray = e / np.sum(e, axis=-1, keepdims=True)
    return out


# -- the model --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MixtureModel:
    """The mixture's schema and parameter layout (see the module docstring).

    Parameters
    ----------
    features:
        The modelled attributes, in the order their values are given.
    components:
        ``K >= 1`` mixture components (paper 002, section 6.1, uses a small K; default 10 here).
    priors:
        :class:`MixturePriors`.
    """

    features: tuple[Feature, ...]
    components: int = 10
    priors: MixturePriors = field(default_factory=MixturePriors)

    def __post_init__(self) -> None:
        if not self.features:
            raise ParameterError(explain("features", self.features, "at least one feature", "model some attributes"))
        k = self.components
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise ParameterError(explain("components", self.components, "an int in [1, 1000]", "pass e.g. 10"))
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ParameterError(explain("feature names", names, "unique names", "rename the duplicates"))
        for f in self.features:
            if not isinstance(f, (BetaFeature, CategoricalFeature)):
                raise ParameterError(explain("feature", f, "a BetaFeature or CategoricalFeature", "wrap the attribute"))

    # -- layout ---------------------------------------------------------------------------------------------
    @cached_property
    def _offsets(self) -> tuple[int, ...]:
        offsets = [self.components - 1]
        for f in self.features:
            offsets.append(offsets[-1] + self.components * f.n_params)
        return tuple(offsets)

    @property
    def dim(self) -> int:
        """Length of the flat unconstrained parameter vector."""
        return self._offsets[-1]

    @property
    def weights_slice(self) -> slice:
        return slice(0, self.components - 1)

    def slice(self, f: int) -> slice:
        return slice(self._offsets[f], self._offsets[f + 1])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    def block(self, names: Sequence[str] | None = None) -> FeatureBlock:
        """The block of features ``names`` (default: all), in the order given."""
        if names is None:
            return FeatureBlock(self, tuple(range(len(self.features))))
        unknown = [n for n in names if n not in self.names]
        if unknown or len(set(names)) != len(names):
            raise ParameterError(explain("block features", list(names), f"distinct names among {list(self.names)}",
                                         "name the model's features"))
        return FeatureBlock(self, tuple(self.names.index(n) for n in names))

    # -- weights ----------------------------------------------------------------------------------------------
    def weights(self, theta: FloatArray) -> FloatArray:
        """``pi = softmax([beta, 0])``."""
        return _softmax_last_zero(theta[self.weights_slice])

    def check_theta(self, theta: npt.ArrayLike) -> FloatArray:
        t = np.asarray(theta, dtype=np.float64)
        if t.shape != (self.dim,) or not np.all(np.isfinite(t)):
            raise ParameterError(explain("theta", t.shape, f"a finite vector of length {self.dim}",
                                         "use MixtureModel.dim and the variational posterior's samples"))
        return t

    # -- priors (data-independent part of the ELBO) -------------------------------------------------------------
    def log_prior_grad(self, theta: FloatArray) -> FloatArray:
        """Gradient of ``log p(T(theta)) + log |J_T(theta)|`` w.r.t. the unconstrained ``theta``.

        Dirichlet(alpha) on ``softmax([z, 0])`` with its log-ratio Jacobian ``sum_c log p_c``:
        ``d/dz_c = alpha - C alpha p_c`` (c < C). Gamma(shape, rate) on ``a = e^u`` with Jacobian ``u``:
        ``d/du = shape - rate a``.
        """
        pr = self.priors
        grad = np.zeros(self.dim)
        K = self.components
        pi = self.weights(theta)
        grad[self.weights_slice] = pr.weights_concentration * (1.0 - K * pi[:-1])
        for f, feature in enumerate(self.features):
            block = theta[self.slice(f)].reshape(K, -1)
            if isinstance(feature, BetaFeature):
                g = pr.beta_shape - pr.beta_rate * np.exp(block)
            else:
                p = _softmax_last_zero(block)
                g = pr.categorical_concentration * (1.0 - feature.size * p[:, :-1])
            grad[self.slice(f)] = g.reshape(-1)
        return grad

    # -- evaluation and generation (float, for the experimenter and the releasing party) --------------------------
    def log_likelihood(self, theta: FloatArray, values: npt.ArrayLike) -> FloatArray:
        """Per-record ``log p(x_i | theta)`` of raw attribute rows ``(n, len(features))`` (log-sum-exp, float64)."""
        t = self.check_theta(theta)
        block = self.block()
        a = block.log_densities(t, block.encode(values)) + np.log(self.weights(t))[None, :]
        out: FloatArray = special.logsumexp(a, axis=1)
        return out

    def sample(self, theta: FloatArray, n: int, rng: RandomSource) -> FloatArray:
        """``n`` synthetic records ``(n, len(features))`` from the mixture at ``theta``."""
        t = self.check_theta(theta)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ParameterError(explain("n", n, "an int >= 0", "pass the number of synthetic records"))
        cdf = np.cumsum(self.weights(t))
        u = rng.spawn("components").random_open(n)
        comps = np.minimum(np.sum(cdf[None, :] < u[:, None], axis=1), self.components - 1).astype(np.int64)
        return self.block().sample(t, comps, rng.spawn("features"))

    # -- construction from a dataset -------------------------------------------------------------------------------
    @classmethod
    def from_dataset(cls, data: Dataset, *, components: int = 10, bins: Mapping[str, Sequence[float]] | None = None,
                     label: bool = True, squeeze: float = 1e-3, priors: MixturePriors | None = None) -> MixtureModel:
        """Beta features for numeric attributes, Categorical for categorical ones (and the label, if ``label``).

        ``bins`` maps numeric attribute names to public bin edges: those attributes become categorical
        (paper 002, section 6.1: "real-valued non-continuous variables" are discretised).
        """
        if not data.attributes or data.values is None:
            raise ParameterError(explain(f"dataset {data.name}", "no attribute view", "typed attributes",
                                         "load it with mpdp.datasets (Adult, CSV with --categorical/--bounds)"))
        bins = dict(bins or {})
        unknown = [b for b in bins if b not in data.attribute_names]
        if unknown:
            raise ParameterError(explain("bins", unknown, f"numeric attributes of {data.name}", "check the names"))
        features: list[Feature] = []
        for attr in data.attributes:
            if attr.kind == "categorical":
                if attr.name in bins:
                    raise ParameterError(explain(f"bins for {attr.name}", bins[attr.name], "numeric attributes only",
                                                 "drop the entry"))
                features.append(CategoricalFeature(attr.name, tuple(attr.categories or ())))
            elif attr.name in bins:
                edges = tuple(float(e) for e in bins[attr.name])
                labels = tuple(f"[{lo:g}, {hi:g})" for lo, hi in itertools.pairwise(edges))
                integer = bool(np.all(data.values[:, data.attribute_names.index(attr.name)] ==
                                      np.rint(data.values[:, data.attribute_names.index(attr.name)])))
                features.append(CategoricalFeature(attr.name, labels, edges=edges, integer=integer))
            else:
                if attr.bounds is None:  # pragma: no cover - Attribute validates numeric bounds
                    raise ParameterError(explain(f"bounds of {attr.name}", None, "public bounds", "declare them"))
                features.append(BetaFeature(attr.name, attr.bounds, squeeze=squeeze))
        if label and data.task == "classification":
            features.append(CategoricalFeature(data.label_name, ("0", "1")))
        return cls(tuple(features), components=components, priors=priors or MixturePriors())

    def values_of(self, data: Dataset, names: Sequence[str] | None = None) -> FloatArray:
        """The raw values of ``names`` (default: every feature) from a dataset's attribute view (and label)."""
        if data.values is None:
            raise ParameterError(explain(f"dataset {data.name}", "no attribute view", "typed attributes",
                                         "load it with mpdp.datasets"))
        cols = []
        for name in (names if names is not None else self.names):
            if name in data.attribute_names:
                cols.append(data.values[:, data.attribute_names.index(name)])
            elif name == data.label_name:
                cols.append(data.y)
            else:
                raise ParameterError(explain("feature", name, f"an attribute of {data.name} or its label",
                                             "build the model from this dataset's schema"))
        return np.column_stack(cols).astype(np.float64)


#: Public bins for Adult's non-continuous numeric attributes (paper 002, section 6.1): education-num is an
#: integer code 1..16; capital gains and losses are mostly 0 with a long tail (edges from the census top-codes).
ADULT_BINS: dict[str, tuple[float, ...]] = {
    "education-num": tuple(float(e) + 0.5 for e in range(0, 17)),
    "capital-gain": (0.0, 1.0, 3000.0, 5000.0, 7500.0, 10000.0, 15000.0, 99_999.0),
    "capital-loss": (0.0, 1.0, 1500.0, 1800.0, 2000.0, 2500.0, 5000.0),
}


def adult_model(data: Dataset, *, components: int = 10, priors: MixturePriors | None = None) -> MixtureModel:
    """Paper 002's model of Adult: Beta for age, fnlwgt and hours-per-week; Categorical for the rest."""
    bins = {k: v for k, v in ADULT_BINS.items() if k in data.attribute_names}
    return MixtureModel.from_dataset(data, components=components, bins=bins, priors=priors)
