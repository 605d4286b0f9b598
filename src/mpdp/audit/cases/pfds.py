"""PFDS's DP trees (paper 004): the exponential-mechanism split choice and the Laplace leaf counts.

Both go through :mod:`mpdp.learning.pfds.tree_noise`, the calls ``make_tree`` makes, with the sensitivities
of :mod:`mpdp.dp.sensitivities.pfds` and add/remove neighbours (one record added).

Split choice: the Max-operator utilities of eight candidate split values of one attribute, computed by
:func:`mpdp.learning.pfds.tree.max_operator`. Adding a record raises a candidate's utility by 0 or 1 (the
utility is monotone), so the mechanism with the generic factor 2 is in fact ``eps/2``-DP: halving its scale
lands exactly on the claim and cannot be refuted. The broken variant divides the scale by 4 (a temperature
``Delta u / (2 eps)``), which is ``2 eps``-DP on these neighbours.

Leaf counts: the (leaf x class) histogram of four leaves, one Laplace release of L1 sensitivity 1; the broken
variant halves the scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.core import batched
from mpdp.audit.neighbours import check_add_remove, check_query_distance
from mpdp.dp.sensitivities.pfds import class_histogram_sensitivity, max_operator_sensitivity
from mpdp.learning.pfds import tree_noise
from mpdp.learning.pfds.tree import max_operator
from mpdp.randomness import RandomSource

__all__ = ["leaf_counts_case", "split_choice_case"]

CANDIDATES = np.linspace(0.05, 0.95, 8)
# Three class-1 records below every candidate, three class-0 records above all but the last: each candidate
# scores 3 + 3. The added class-1 record at 0.9 only lifts the last candidate's "below" side (elsewhere it
# joins an "above" side class 0 dominates), the worst case for a monotone utility.
_BASE = np.array([[0.01, 1], [0.02, 1], [0.03, 1], [0.97, 0], [0.98, 0], [0.99, 0]])
SPLIT_D1 = _BASE
SPLIT_D0 = np.vstack([_BASE, [[0.9, 1]]])


def _utility(data: Any) -> Any:
    d = np.asarray(data, dtype=np.float64)
    return max_operator(d[:, 0], d[:, 1].astype(np.int64), CANDIDATES, 2)


def split_choice_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: with 2 10^4 samples per side the bound is ~0.4 for the real choice and ~1.35 when broken."""
    sensitivity = max_operator_sensitivity("add_remove")
    check_add_remove(SPLIT_D0, SPLIT_D1)
    check_query_distance(np.max(np.abs(_utility(SPLIT_D0) - _utility(SPLIT_D1))), 0.0, sensitivity)
    used = 4 * epsilon if broken else epsilon

    def run(data: Any, rng: RandomSource) -> int:
        return tree_noise.exponential_choice(_utility(data), epsilon=used, sensitivity=sensitivity, rng=rng)

    return AuditCase("dp-tree-split" + ("-broken" if broken else ""), batched(run), SPLIT_D0, SPLIT_D1, epsilon,
                     0.0, 20_000, score=lambda x: x[:, 0], description="exponential mechanism, Max operator")


LEAF_EDGES = np.array([0.25, 0.5, 0.75])
LEAF_D1 = np.array([[0.1, 0], [0.3, 1], [0.35, 0], [0.6, 1], [0.8, 0], [0.9, 1]])
LEAF_D0 = np.vstack([LEAF_D1, [[0.55, 1]]])


def _histogram(data: Any) -> Any:
    d = np.asarray(data, dtype=np.float64)
    leaf = np.searchsorted(LEAF_EDGES, d[:, 0], side="right")
    return np.bincount(leaf * 2 + d[:, 1].astype(np.int64), minlength=8).astype(np.float64).reshape(4, 2)


def leaf_counts_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: with 2 10^4 samples per side the bound is ~0.9 for the real release and ~1.8 when broken."""
    sensitivity = class_histogram_sensitivity("add_remove")
    check_add_remove(LEAF_D0, LEAF_D1)
    check_query_distance(_histogram(LEAF_D0), _histogram(LEAF_D1), sensitivity)
    used = 2 * epsilon if broken else epsilon

    def run(data: Any, rng: RandomSource) -> Any:
        return tree_noise.laplace_counts(_histogram(data), epsilon=used, sensitivity=sensitivity, rng=rng)

    return AuditCase("pfds-leaf-counts" + ("-broken" if broken else ""), batched(run), LEAF_D0, LEAF_D1, epsilon,
                     0.0, 20_000, description="Laplace (leaf x class) counts")
