"""The partitioned step's responsibilities in float64, for ablations (paper 002's renormalization floor).

The secure step (:mod:`mpdp.protocols.mixture_gradient`) forms ``r_ik = pi_k prod_j e_ikj / S_i`` from each
party's renormalized factors ``e_ikj = exp(a_ikj - max_k a_ikj)``. In exact arithmetic the per-party constants
cancel and ``r`` is the non-partitioned softmax; two choices of the secure computation may still change it:

* paper 002's Algorithm 4 floors each party's factors at ``2^(floor_log2 / P)`` (so that ``S_i`` stays inside
  the secure normalisation's domain by construction): a component that one party rates ``e^-30`` below its
  best keeps a responsibility of up to ``2^(floor_log2 / P)``;
* mpdp's step instead drops a record whose ``S_i`` falls below the normalisation's domain (it contributes
  nothing).

:class:`PartitionedResponsibilities` computes ``r`` that way in float64, with no fixed point and no MPC, so that
:class:`~mpdp.learning.dpvi.model.DPVI` can train with it and isolate the effect of either choice from the
arithmetic's (``mpdp reproduce 002-floor``). It is a measurement tool: a real partitioned run is
:class:`~mpdp.learning.dpvi.model.VerticalDPVI`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.crypto.renormalization import RenormalizationParams, renormalize
from mpdp.errors import ParameterError, explain
from mpdp.learning.dpvi.mixture import MixtureModel

__all__ = ["PartitionedResponsibilities"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Responsibilities = Callable[[FloatArray, IntArray], tuple[FloatArray, BoolArray]]


@dataclass(frozen=True)
class PartitionedResponsibilities:
    """Responsibilities from per-party renormalized factors, floored as ``renormalization`` says.

    Parameters
    ----------
    groups:
        Each party's feature names (every feature of the model exactly once).
    renormalization:
        The parties' :class:`~mpdp.crypto.renormalization.RenormalizationParams` (``parties == len(groups)``);
        its ``floor_log2`` is paper 002's floor (None: exact factors).
    drop_log2:
        Records with ``S_i = sum_k pi_k prod_j e_ikj < 2^drop_log2`` contribute nothing (None: none dropped).
    """

    groups: tuple[tuple[str, ...], ...]
    renormalization: RenormalizationParams
    drop_log2: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.renormalization, RenormalizationParams):
            raise ParameterError(explain("renormalization", self.renormalization, "RenormalizationParams",
                                         "pass e.g. GradientPrecision().renormalization(2)"))
        if not self.groups or self.renormalization.parties != len(self.groups):
            raise ParameterError(explain("groups", len(self.groups),
                                         f"{self.renormalization.parties} (renormalization.parties) non-empty groups",
                                         "one group of feature names per party"))
        if self.drop_log2 is not None and not (math.isfinite(self.drop_log2) and self.drop_log2 < 0):
            raise ParameterError(explain("drop_log2", self.drop_log2, "None or a number < 0", "pass e.g. -37"))

    def bind(self, model: MixtureModel, values: npt.ArrayLike) -> Responsibilities:
        """``(theta, batch) -> (r, kept)`` on ``values`` (the model's features in model order, one row per record)."""
        names: Sequence[str] = model.names
        flat = [n for g in self.groups for n in g]
        if sorted(flat) != sorted(names):
            raise ParameterError(explain("groups", self.groups, f"a partition of the model's features {names}",
                                         "name every feature exactly once"))
        v = np.asarray(values, dtype=np.float64)
        parts = []
        for group in self.groups:
            block = model.block(group)
            parts.append((block, block.encode(v[:, [names.index(n) for n in group]])))
        floor_sum = None if self.drop_log2 is None else 2.0**self.drop_log2

        def responsibilities(theta: FloatArray, batch: IntArray) -> tuple[FloatArray, BoolArray]:
            q = np.tile(model.weights(theta), (batch.size, 1))
            for block, data in parts:
                q *= renormalize(block.log_densities(theta, data.rows(batch)), self.renormalization)[0]
            sums = q.sum(axis=1)
            kept = np.ones(batch.size, dtype=bool) if floor_sum is None else sums >= floor_sum
            r: FloatArray = q / np.maximum(sums, np.finfo(np.float64).tiny)[:, None]
            return r, kept

        return responsibilities
