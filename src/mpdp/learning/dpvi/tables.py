"""Every theta-derived quantity of a :class:`~mpdp.learning.dpvi.mixture.MixtureModel`, computed once per theta.

A DPVI step asks for the same functions of the public ``theta`` many times: every party's public plan needs the
:class:`~mpdp.protocols.mixture_gradient.StatMap` and the squared-norm bound of *every* party's block, and
each party's own log-densities and norms need its features' parameters, digammas and probabilities again.
:class:`ThetaTables` computes all of them for all features at once, in a few vectorised numpy calls (Beta
features as columns of ``(K, features, 2)`` arrays, categorical features as segments of one flat category
axis), and :class:`BlockTables` gives one block's view of them. The model keeps the tables of the last theta
it saw (:meth:`~mpdp.learning.dpvi.mixture.MixtureModel._tables`, keyed by the bytes of theta).

The index arrays that make this possible depend only on the model's layout (:class:`ModelLayout`,
:class:`BlockLayout`); a party's records, in the feature-major form the per-step computations read, only on
its data (:class:`LocalRows`). The tables are shared by the computations of a step and never modified: what
leaves them (the parameter views of ``FeatureBlock._beta`` and ``_probs``, the :class:`StatMap` arrays, the
layouts) is read-only; the mixture weights are handed out as copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt
from scipy import special

from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature, Feature
from mpdp.protocols.mixture_gradient import StatMap

if TYPE_CHECKING:
    from collections.abc import Sequence


__all__ = ["BlockLayout", "BlockTables", "LocalRows", "ModelLayout", "ThetaTables", "beta_grads",
           "softmax_last_zero"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]



class MixtureShape(Protocol):
    """What the tables read of a :class:`~mpdp.learning.dpvi.mixture.MixtureModel` (its public layout)."""

    @property
    def components(self) -> int: ...

    @property
    def features(self) -> tuple[Feature, ...]: ...

    @property
    def dim(self) -> int: ...

    @property
    def _layout(self) -> ModelLayout: ...

    def slice(self, f: int) -> slice: ...


class BlockShape(Protocol):
    """What the tables read of a :class:`~mpdp.learning.dpvi.mixture.FeatureBlock` (one party's features)."""

    @property
    def model(self) -> MixtureShape: ...

    @property
    def features(self) -> tuple[int, ...]: ...

    @property
    def beta_features(self) -> tuple[int, ...]: ...

    @property
    def categorical_features(self) -> tuple[int, ...]: ...

    @property
    def indices(self) -> IntArray: ...

    @property
    def _layout(self) -> BlockLayout: ...


def softmax_last_zero(z: FloatArray) -> FloatArray:
    """``softmax([z, 0])`` along the last axis."""
    out: FloatArray = np.zeros((*z.shape[:-1], z.shape[-1] + 1))
    out[..., :-1] = z
    out -= out.max(axis=-1, keepdims=True)  # (array methods: no numpy-function dispatch on these tiny arrays)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)
    return out


@dataclass(frozen=True)
class LocalRows:
    """A block's records as its per-step computations read them (see :meth:`FeatureBlock.prepare`).

    ``log_pairs``: ``log x`` and ``log(1 - x)`` of each Beta feature, interleaved, ``(2 x Beta features, n)``;
    ``codes``: each categorical code as a position on the model's flat category axis, ``(categorical
    features, n)``. Both feature-major and independent of ``theta``.
    """

    log_pairs: FloatArray
    codes: IntArray

    @property
    def n(self) -> int:
        return int(self.log_pairs.shape[1])

    def rows(self, index: npt.ArrayLike) -> LocalRows:
        idx = np.asarray(index)
        return LocalRows(self.log_pairs[:, idx], self.codes[:, idx])


def beta_grads(at: BlockTables, rows: LocalRows) -> FloatArray:
    """``a_k (log x_i + psi(a_k + b_k) - psi(a_k))`` (and likewise for ``b``), shape ``(2 x Beta features, K, n)``."""
    gain, shift, _, _ = at.beta
    out: FloatArray = rows.log_pairs[:, None, :] + shift[:, :, None]
    out *= gain[:, :, None]
    return out


def _read_only(*arrays: npt.NDArray[Any]) -> None:
    for array in arrays:
        array.flags.writeable = False


@dataclass(frozen=True)
class ModelLayout:
    """Theta-independent index arrays that let :class:`ThetaTables` treat every feature of a kind at once.

    Beta features are columns ``j`` of ``(K, Beta features, 2)`` arrays (``log a``, ``log b``); categorical
    features are segments of one flat category axis (feature ``j`` at ``cat_starts[j] : + C_j``), whose
    *free* categories (all but each feature's last, whose logit is the fixed 0) are the parameters.
    """

    beta_features: tuple[int, ...]
    cat_features: tuple[int, ...]
    beta_theta: IntArray  # (K, nb, 2): theta index of log a_kj and log b_kj
    beta_low: FloatArray  # (nb,): log squeeze, the low end of log x and log(1 - x)
    cat_starts: IntArray  # (nc,)
    cat_seg: IntArray  # (C,): the categorical feature (0..nc-1) of each flat category
    cat_src: IntArray  # (K, C): index into theta of each free logit (0 for last levels, masked to the logit 0)
    cat_free: IntArray  # (F,): flat categories that are not the last of their feature
    cat_free_mask: FloatArray  # (C,): 1.0 for free categories, 0.0 for last levels
    cat_free_size: FloatArray  # (F,): C_j of each free category's feature
    cat_theta: IntArray  # (K, F): theta index of each free logit
    beta_coef: IntArray  # beta_theta - (K - 1): positions among the non-weight coordinates
    cat_coef: IntArray  # cat_theta - (K - 1)
    beta_index: IntArray  # beta_features as an index array
    cat_index: IntArray  # cat_features as an index array

    @classmethod
    def of(cls, model: MixtureShape) -> ModelLayout:
        K, feats = model.components, model.features
        beta = tuple(f for f, feat in enumerate(feats) if feat.kind == "beta")
        cat = tuple(f for f, feat in enumerate(feats) if feat.kind == "categorical")
        ks = np.arange(K, dtype=np.int64)
        beta_theta = np.zeros((K, len(beta), 2), dtype=np.int64)
        for j, f in enumerate(beta):
            beta_theta[:, j, 0] = model.slice(f).start + 2 * ks
            beta_theta[:, j, 1] = model.slice(f).start + 2 * ks + 1
        lows = [math.log(cast("BetaFeature", feats[f]).squeeze) for f in beta]
        sizes = [cast("CategoricalFeature", feats[f]).size for f in cat]
        starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64) if sizes else np.zeros(0, dtype=np.int64)
        total = int(sum(sizes))
        src = np.zeros((K, total), dtype=np.int64)
        free: list[int] = []
        free_size: list[int] = []
        for j, f in enumerate(cat):
            size, s0 = sizes[j], int(starts[j])
            src[:, s0:s0 + size - 1] = model.slice(f).start + ks[:, None] * (size - 1) + np.arange(size - 1)
            free += range(s0, s0 + size - 1)
            free_size += [size] * (size - 1)
        free_idx = np.asarray(free, dtype=np.int64)
        mask = np.zeros(total)
        mask[free_idx] = 1.0
        layout = cls(beta, cat, beta_theta, np.asarray(lows, dtype=np.float64), starts,
                     np.repeat(np.arange(len(cat), dtype=np.int64), sizes), src, free_idx, mask,
                     np.asarray(free_size, dtype=np.float64), src[:, free_idx], beta_theta - (K - 1),
                     src[:, free_idx] - (K - 1), np.asarray(beta, dtype=np.int64), np.asarray(cat, dtype=np.int64))
        _read_only(layout.beta_theta, layout.beta_low, layout.cat_starts, layout.cat_seg, layout.cat_src,
                   layout.cat_free, layout.cat_free_mask, layout.cat_free_size, layout.cat_theta, layout.beta_coef,
                   layout.cat_coef, layout.beta_index, layout.cat_index)
        return layout


class ThetaTables:
    """Every theta-derived quantity of the model at one ``theta`` (never modified once built).

    ``gain = (a, b)`` and ``shift = (psi(a + b) - psi(a), psi(a + b) - psi(b))`` per Beta feature
    (``(K, nb, 2)``) and ``betaln = log B(a, b)``; ``probs`` and ``log_probs`` on the flat category axis
    (``(K, C)``, softmax of ``[z, 0]`` per feature); ``cat_terms`` (``(C, 2K)``): per category its
    log-probability and its part of the squared gradient norm; ``weights``, the mixture weights ``pi``; the
    :class:`StatMap` coefficients of every non-weight coordinate in model order; ``bound_terms`` (``(K,
    features)``), the per-feature terms of :meth:`FeatureBlock.sq_norm_bound`; ``gain_rows`` and
    ``shift_rows``, ``gain`` and ``shift`` as ``(2 nb, K)`` rows (a block's Beta pairs are one gather of them).
    """

    def __init__(self, model: MixtureShape, theta: FloatArray) -> None:
        L, K = model._layout, model.components
        self.weights = softmax_last_zero(theta[: K - 1])
        self.gain = np.exp(theta[L.beta_theta])
        a, b = self.gain[..., 0], self.gain[..., 1]
        self.shift = special.digamma(a + b)[..., None] - special.digamma(self.gain)
        self.betaln = special.betaln(a, b)
        if L.cat_features:
            ext = theta.take(L.cat_src)
            ext *= L.cat_free_mask  # the last level of each feature has the fixed logit 0
            z = ext - np.maximum.reduceat(ext, L.cat_starts, axis=1)[:, L.cat_seg]
            e = np.exp(z)
            sums = np.add.reduceat(e, L.cat_starts, axis=1)
            self.probs = e / sums[:, L.cat_seg]
            self.log_probs = z - np.log(sums)[:, L.cat_seg]
            sq = np.add.reduceat(self.probs * self.probs * L.cat_free_mask, L.cat_starts, axis=1)  # (K, nc)
        else:
            self.probs = self.log_probs = np.zeros((K, 0))
            sq = np.zeros((K, 0))
        hit = sq[:, L.cat_seg] + L.cat_free_mask * (1.0 - 2.0 * self.probs)
        self.cat_terms = np.ascontiguousarray(np.concatenate([self.log_probs, hit], axis=0).T)
        # StatMap coefficients in model order (weights excluded): Beta (a, b) and (a d_a, b d_b); categorical 1, -p
        self.coef_stat = np.ones(model.dim - (K - 1))
        self.coef_stat[L.beta_coef] = self.gain
        self.coef_sum = np.empty(model.dim - (K - 1))
        self.coef_sum[L.beta_coef] = self.gain * self.shift
        self.coef_sum[L.cat_coef] = -self.probs[:, L.cat_free]
        # sq_norm_bound's per-feature terms: (a max(|log s + d|, |d|))^2 + (b ...)^2, and 1 + sum_(c<C-1) p_c^2
        reach = np.maximum(np.abs(L.beta_low[None, :, None] + self.shift), np.abs(self.shift))
        beta_terms = (self.gain * reach) ** 2
        self.bound_terms = np.empty((K, len(model.features)))
        self.bound_terms[:, L.beta_index] = beta_terms[..., 0] + beta_terms[..., 1]
        self.bound_terms[:, L.cat_index] = 1.0 + sq
        # (K, 2 nb) -> (2 nb, K): the rows a block's Beta pairs gather
        self.gain_rows = np.ascontiguousarray(self.gain.reshape(K, -1).T)
        self.shift_rows = np.ascontiguousarray(self.shift.reshape(K, -1).T)
        _read_only(self.gain, self.probs, self.coef_stat, self.coef_sum)  # what leaves the tables (views, maps)
        self._blocks: dict[tuple[int, ...], BlockTables] = {}

    def block(self, block: BlockShape) -> BlockTables:
        found = self._blocks.get(block.features)
        if found is None:
            found = self._blocks[block.features] = BlockTables(self, block._layout)
        return found


class BlockTables:
    """One block's view of :class:`ThetaTables` (each part computed on first use; what leaves it read-only)."""

    def __init__(self, tables: ThetaTables, layout: BlockLayout) -> None:
        self.tables = tables
        self.layout = layout

    @cached_property
    def beta(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The block's Beta features, ``(2 x Beta features, K)`` each, pairs interleaved: ``gain = (a, b)``,
        ``shift = (psi(a + b) - psi(a), psi(a + b) - psi(b))`` and the log-density's weights ``(a - 1, b - 1)``
        of ``(log x, log(1 - x))``; and ``-sum log B(a, b)``, ``(K,)``. Internal: never handed out."""
        rows = self.layout.beta_rows
        gain = self.tables.gain_rows.take(rows, axis=0)
        const: FloatArray = -self.tables.betaln.take(self.layout.beta_index, axis=1).sum(axis=1)
        return gain, self.tables.shift_rows.take(rows, axis=0), gain - 1.0, const

    @cached_property
    def stat_map(self) -> StatMap:
        lay = self.layout
        coef_stat, coef_sum = self.tables.coef_stat[lay.coords], self.tables.coef_sum[lay.coords]
        _read_only(coef_stat, coef_sum)
        return StatMap(lay.stat, lay.comp, coef_stat, coef_sum)

    @cached_property
    def sq_norm_bound(self) -> float:
        terms = self.tables.bound_terms[:, self.layout.bound_features]
        return float(np.maximum.reduce(np.add.reduce(terms, axis=1))) if terms.size else 0.0


@dataclass(frozen=True)
class BlockLayout:
    """A block's theta-independent index arrays into :class:`ThetaTables` and :meth:`FeatureBlock.per_example_grads`."""

    beta_index: IntArray  # the block's Beta features (block order) among the model's
    beta_rows: IntArray  # their (a, b) rows in ThetaTables.gain_rows, interleaved
    cat_starts: IntArray  # flat start of the block's categorical features (block order)
    cat_sizes: IntArray  # their numbers of levels
    beta_cols: IntArray  # per_example_grads columns of the interleaved (a, b) pairs
    cat_free: IntArray  # flat free categories of the block (block order)
    cat_cols: IntArray  # their per_example_grads columns
    onehot_col: IntArray  # (C,): per_example_grads column of a flat category of the block; -1 otherwise
    coords: IntArray  # the block's coordinates among the model's non-weight ones
    bound_features: IntArray  # the block's features, Beta first
    stat: IntArray  # StatMap.stat
    comp: IntArray  # StatMap.comp
    width: int

    @classmethod
    def of(cls, block: BlockShape) -> BlockLayout:
        model, L = block.model, block.model._layout
        K = model.components
        total = int(L.cat_seg.size)
        starts = {f: int(L.cat_starts[j]) for j, f in enumerate(L.cat_features)}
        offsets, offset = {}, 0
        stat: list[IntArray] = []
        comp: list[IntArray] = []
        stat_offset = 0
        for f in block.features:
            offsets[f] = offset
            width = model.features[f].n_params
            stat.append(np.tile(np.arange(stat_offset, stat_offset + width), K))
            comp.append(np.repeat(np.arange(K), width))
            offset += width
            stat_offset += model.features[f].n_stats
        beta_cols = [c for f in block.beta_features for c in (offsets[f], offsets[f] + 1)]
        cat_free: list[int] = []
        cat_cols: list[int] = []
        onehot = np.full(total, -1, dtype=np.int64)
        for f in block.categorical_features:
            free = model.features[f].n_params
            cat_free += range(starts[f], starts[f] + free)
            cat_cols += range(offsets[f], offsets[f] + free)
            onehot[starts[f]:starts[f] + free] = np.arange(offsets[f], offsets[f] + free)

        def ints(values: Sequence[int] | list[IntArray]) -> IntArray:
            if values and isinstance(values[0], np.ndarray):
                return np.concatenate(values).astype(np.int64)
            return np.asarray(values, dtype=np.int64).reshape(-1)

        beta_index = [L.beta_features.index(f) for f in block.beta_features]
        layout = cls(ints(beta_index), ints([r for j in beta_index for r in (2 * j, 2 * j + 1)]),
                     ints([starts[f] for f in block.categorical_features]),
                     ints([model.features[f].n_params + 1 for f in block.categorical_features]), ints(beta_cols),
                     ints(cat_free),
                     ints(cat_cols), onehot, block.indices - (K - 1),
                     ints([*block.beta_features, *block.categorical_features]), ints(stat), ints(comp), offset)
        _read_only(layout.beta_index, layout.beta_rows, layout.cat_starts, layout.cat_sizes, layout.beta_cols,
                   layout.cat_free, layout.cat_cols, layout.onehot_col, layout.coords, layout.bound_features,
                   layout.stat, layout.comp)
        return layout
