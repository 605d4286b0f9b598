"""Paper 002's generative model: a mixture whose components factorise over the parties' features.

``p(x | theta) = sum_k pi_k prod_f f_f(x_f | theta_kf)`` (paper 002, Eqs. 13-17; section 6.1), where each
feature ``f`` is a :class:`~mpdp.learning.dpvi.features.BetaFeature` (numeric) or a
:class:`~mpdp.learning.dpvi.features.CategoricalFeature` (categorical, or numeric in public bins).

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
map from ``(T^T w, sum_i w)`` to the gradient (:meth:`FeatureBlock.stat_map`). Every function of ``theta`` they
read is computed once per theta for all features at once (:mod:`~mpdp.learning.dpvi.tables`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt
from scipy import special

from mpdp.datasets.dataset import Dataset
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain
from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature, EncodedBlock, Feature, MixturePriors
from mpdp.learning.dpvi.tables import (
    BlockLayout,
    BlockTables,
    LocalRows,
    ModelLayout,
    ThetaTables,
    beta_grads,
)
from mpdp.protocols.mixture_gradient import StatMap
from mpdp.randomness import RandomSource

__all__ = [
    "ADULT_BINS",
    "FeatureBlock",
    "MixtureModel",
    "adult_model",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


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
    # Everything below reads the model's per-theta tables (:meth:`MixtureModel._tables`: every feature's
    # parameters, digammas, probabilities, map coefficients and bound terms, computed once per theta in a few
    # vectorised calls) through this block's theta-independent index arrays.
    @cached_property
    def _layout(self) -> BlockLayout:
        return BlockLayout.of(self)

    def _at(self, theta: FloatArray) -> BlockTables:
        return self.model._tables(theta).block(self)

    def prepare(self, data: EncodedBlock) -> LocalRows:
        """The block's records as its per-step computations read them (theta-independent): compute once for a
        party's whole data and take :meth:`LocalRows.rows` per minibatch."""
        lay = self._layout
        n, nb = data.beta.shape
        if nb != len(self.beta_features) or data.codes.shape != (n, len(self.categorical_features)):
            raise ShapeMismatchError(explain("encoded block", (data.beta.shape, data.codes.shape),
                                             f"{len(self.beta_features)} Beta and {len(self.categorical_features)} "
                                             "categorical columns", "encode the values with this block"))
        if np.any(data.codes < 0) or np.any(data.codes >= lay.cat_sizes):
            raise DomainError(explain("categorical codes", data.codes[(data.codes < 0) | (data.codes >= lay.cat_sizes)]
                                      [:3], "codes 0..C-1 of each feature", "encode the values with this block"))
        pairs = np.empty((2 * nb, n))
        pairs[0::2] = np.log(data.beta.T)
        pairs[1::2] = np.log1p(-data.beta.T)
        flat = np.ascontiguousarray((data.codes + lay.cat_starts).T, dtype=np.int64)
        return LocalRows(pairs, flat)

    def _beta(self, theta: FloatArray, f: int) -> tuple[FloatArray, FloatArray]:
        """``(a_k, b_k)`` of Beta feature ``f`` (read-only views)."""
        tables = self.model._tables(theta)
        j = self.model._layout.beta_features.index(f)
        return tables.gain[:, j, 0], tables.gain[:, j, 1]

    def _probs(self, theta: FloatArray, f: int) -> FloatArray:
        """``p_k`` of categorical feature ``f``, shape ``(K, C)`` (a read-only view)."""
        layout = self.model._layout
        start = int(layout.cat_starts[layout.cat_features.index(f)])
        probs: FloatArray = self.model._tables(theta).probs[:, start:start + self.model.features[f].n_stats + 1]
        return probs

    def log_densities(self, theta: FloatArray, data: EncodedBlock | LocalRows) -> FloatArray:
        """``a_ik = sum_(f in block) log f_f(x_if | theta_kf)``, shape ``(n, K)``."""
        return self.local_terms(theta, data)[0]

    def sq_norms(self, theta: FloatArray, data: EncodedBlock | LocalRows) -> FloatArray:
        """``N_ik = ||g_ik||^2`` over the block's coordinates, shape ``(n, K)`` (no ``(n, K, d)`` array)."""
        return self.local_terms(theta, data)[1]

    def local_terms(self, theta: FloatArray, data: EncodedBlock | LocalRows) -> tuple[FloatArray, FloatArray]:
        """``(log_densities, sq_norms)`` in one pass (what a party computes per step on its minibatch).

        With ``t = (log x, log(1 - x))`` per Beta feature: ``a_ik = t_i . (a_k - 1, b_k - 1) - log B(a_k, b_k)``
        and ``N_ik = sum (a_k (log x_i + psi(a_k + b_k) - psi(a_k)))^2 + (b_k (...))^2``; a categorical feature
        adds ``log p_k[c_i]`` and ``sum_(c < C-1) p_kc^2 + [c_i < C - 1] (1 - 2 p_k[c_i])``, read from one table
        of the model's flat category axis (one gather for both).
        """
        rows = data if isinstance(data, LocalRows) else self.prepare(data)
        at = self._at(theta)
        K = self.model.components
        # feature-major arrays, so that numpy's inner loops run over the records
        _, _, log_weights, log_const = at.beta
        cat = at.tables.cat_terms.take(rows.codes, axis=0).sum(axis=0)  # (n, 2K)
        logs = cat[:, :K] + rows.log_pairs.T @ log_weights
        logs += log_const
        grads = beta_grads(at, rows)
        grads *= grads
        norms = cat[:, K:] + grads.sum(axis=0).T
        return logs, norms

    def per_example_grads(self, theta: FloatArray, data: EncodedBlock | LocalRows) -> FloatArray:
        """``g_ikd = d a_ik / d theta_(block d)``, shape ``(n, K, per-component block width)`` in block order.

        The block's coordinate ``indices`` are ordered feature by feature, each feature ``(K, p_f)``
        row-major; coordinate ``(k, j)`` of feature ``f`` is entry ``[:, k, offset_f + j]`` here.
        """
        rows = data if isinstance(data, LocalRows) else self.prepare(data)
        at, lay = self._at(theta), self._layout
        n, K = rows.n, self.model.components
        out = np.empty((n, K, lay.width))
        out[:, :, lay.beta_cols] = beta_grads(at, rows).transpose(2, 1, 0)
        out[:, :, lay.cat_cols] = -at.tables.probs[:, lay.cat_free][None, :, :]
        col = lay.onehot_col[rows.codes.T]  # the one-hot column of each (record, feature), -1 for the last level
        hit = col >= 0
        out[np.nonzero(hit)[0], :, col[hit]] += 1.0
        return out

    def sq_norm_bound(self, theta: FloatArray) -> float:
        """A public bound on every ``N_ik`` (from ``theta`` and the features' public domains alone).

        ``max_k sum_f B_kf`` with, for a Beta feature, ``B = (a max(|log s + d_a|, |d_a|))^2 + (b ...)^2``
        (``d_a = psi(a + b) - psi(a)``; ``log x`` and ``log(1 - x)`` lie in ``[log s, 0]`` and the gradient
        ``a (log x + d_a)`` is affine in them, so its modulus peaks at an end), and for a categorical feature
        ``B = 1 + sum_(c < C-1) p_c^2`` (``1 - 2 p_c <= 1``).
        """
        return self._at(theta).sq_norm_bound

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
        Categorical: ``d/dz_kc = M[c, k] - p_kc s_k``. Built once per ``theta`` (its arrays are read-only).
        """
        return self._at(theta).stat_map

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
        return self._tables(theta).weights.copy()

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
        K = self.components
        layout, tables = self._layout, self._tables(theta)
        grad = np.zeros(self.dim)
        pi = self.weights(theta)
        grad[self.weights_slice] = pr.weights_concentration * (1.0 - K * pi[:-1])
        grad[layout.beta_theta] = pr.beta_shape - pr.beta_rate * tables.gain
        grad[layout.cat_theta] = pr.categorical_concentration * (
            1.0 - layout.cat_free_size * tables.probs[:, layout.cat_free])
        return grad

    # -- theta-derived tables -----------------------------------------------------------------------------------
    @cached_property
    def _layout(self) -> ModelLayout:
        return ModelLayout.of(self)

    def _tables(self, theta: FloatArray) -> ThetaTables:
        """Every theta-derived quantity at ``theta``, computed once per theta value.

        Keyed by the bytes of ``theta`` (not its identity: a vector modified in place gets fresh tables); one
        entry, replaced atomically, so concurrent users each read a consistent set.
        """
        t = np.asarray(theta, dtype=np.float64)
        if t.shape != (self.dim,):
            raise ShapeMismatchError(explain("theta", t.shape, f"({self.dim},)", "pass the model's parameter vector"))
        key = t.tobytes()
        cached = self.__dict__.get("_theta_tables")
        if cached is not None and cached[0] == key:
            tables: ThetaTables = cached[1]
            return tables
        tables = ThetaTables(self, t)
        object.__setattr__(self, "_theta_tables", (key, tables))
        return tables

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
