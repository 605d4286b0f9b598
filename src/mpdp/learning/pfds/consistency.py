"""optPrivateGen (paper 004, Algorithm 5): consistent leaf sizes for a private tree, and synthetic records.

A sharer adds Laplace noise to the node sizes of the tree's top ``p - 1`` levels (``eps / (p - 1)`` per
level; each level partitions the universe, so one Laplace release per level), then post-processes them with
the leaves' noisy sizes by the weighted least-squares problem of Algorithm 5::

    min  sum_{i=1..p} (1/m_i) sum_j (x_ij - c~_ij)^2                                          (O1)
    s.t. x_ij = sum_{l in T_ij.ch} x_{i+1,l}   (i < p; level p's children are the leaves below)  (O2)
         x_ij >= 0                                                                               (O3)

where level ``p`` stands for the leaf level. **Reduction.** (O2) makes every node value the sum of the leaf
values below it, ``x_i = A_i l`` with ``A_i`` the 0/1 node-by-leaf incidence matrix of level ``i``; and with
``l >= 0`` every sum is non-negative, so (O3) reduces to ``l >= 0``. Conversely every ``l >= 0`` defines a
feasible ``x``. The problem is therefore exactly the bounded least-squares problem
``min_{l >= 0} || W^(1/2) (A l - c~) ||^2`` with ``A = [A_1; ...; A_{p-1}; I]`` and ``W = diag(1/m_i)``,
solved exactly by a primal-dual active-set method whose linear solves exploit the tree (``O(leaves * p)`` each,
see :class:`_TreeLeastSquares`); its KKT conditions are checked, with scipy's BVLS as the fallback and the
reference (``python -m bench pfds``: same leaves to 1e-8, thousands of times faster). The returned solution
satisfies (O2) exactly (the node values are *computed* as sums of the leaf values) and (O3) exactly (leaves
are clipped at 0 after the solve, which moves them by at most the solver's rounding).

Integer sizes: the leaf sizes are rounded by the largest-remainder method, which keeps their sum equal to the
rounded total, then each leaf receives that many records drawn uniformly from its box (numeric attributes
uniform on the box's interval, categorical ones uniform among the categories the path allows). All of this
reads only DP outputs: post-processing (Theorem 2.3).

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 3.2.1, Algorithm 5, Theorem 3.2. Fioretto,
Lee, Van Hentenryck, AAMAS 2018 [13] (the optimisation-based release). Hay et al., VLDB 2010 [16] (hierarchical
consistency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.dp.sensitivities.pfds import level_count_sensitivity
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.pfds import tree_noise
from mpdp.learning.pfds.tree import PrivateTree
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "ConsistentCounts",
    "consistent_counts",
    "incidence",
    "integer_sizes",
    "noisy_level_counts",
    "synthesize",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ConsistentCounts:
    """The solution of Algorithm 5's line 3: node values per level (levels 1..p-1, then the leaves)."""

    levels: tuple[FloatArray, ...]
    objective: float

    @property
    def leaves(self) -> FloatArray:
        return self.levels[-1]


def incidence(tree: PrivateTree, h: int) -> sp.csr_matrix:
    """0/1 matrix (nodes of level ``h``) x (leaves): 1 where the leaf lies below the node."""
    nodes = tree.level_nodes(h)
    anc = tree.leaf_ancestor(h) - nodes[0]
    n_leaves = tree.n_leaves
    return sp.csr_matrix((np.ones(n_leaves), (anc, np.arange(n_leaves))), shape=(nodes.size, n_leaves))


def noisy_level_counts(
    tree: PrivateTree, values: FloatArray, p: int, *, epsilon: float, rng: RandomSource | None = None,
    ledger: BudgetSpender | None = None,
) -> list[FloatArray]:
    """Algorithm 5, lines 1-2: Laplace-noised node sizes of levels ``1..p-1`` at ``epsilon / (p - 1)`` each.

    Each level is one Laplace release (its nodes partition the universe), charged to ``ledger``: ``epsilon``
    in total (Theorem 3.2).
    """
    rng = resolve(rng)
    tree_noise.check_epsilon(epsilon, "epsilon")
    if not isinstance(p, int) or not 2 <= p <= tree.h_max:
        raise ParameterError(explain("p", p, f"an int in [2, h_max={tree.h_max}]",
                                     "pass p <= h_max (the paper uses p = 4 with h_max = 8)"))
    eps_level = epsilon / (p - 1)
    leaf = tree.leaf_of(values)
    out: list[FloatArray] = []
    for h in range(1, p):
        nodes = tree.level_nodes(h)
        anc = tree.leaf_ancestor(h)[leaf] - nodes[0]
        counts = np.bincount(anc, minlength=nodes.size).astype(np.float64)
        out.append(tree_noise.laplace_counts(counts, epsilon=eps_level, sensitivity=level_count_sensitivity(),
                                             rng=rng, ledger=ledger, label=f"pfds.optPrivateGen level {h}: sizes"))
    return out


def consistent_counts(tree: PrivateTree, noisy_levels: list[FloatArray], noisy_leaves: FloatArray) -> ConsistentCounts:
    """Solve (O1)-(O3) exactly via the bounded least-squares reduction (module docstring).

    ``noisy_levels[i]`` holds the noisy sizes of level ``i + 1``; ``noisy_leaves`` the noisy leaf sizes.
    """
    p = len(noisy_levels) + 1
    if p > tree.h_max:
        raise ParameterError(explain("levels", p - 1, f"at most h_max - 1 = {tree.h_max - 1}", "pass fewer levels"))
    if noisy_leaves.shape != (tree.n_leaves,):
        raise ShapeMismatchError(explain("noisy_leaves", noisy_leaves.shape, f"({tree.n_leaves},)",
                                         "one noisy size per leaf"))
    groups: list[IntArray] = []
    weights: list[float] = []
    for h, counts in enumerate(noisy_levels, start=1):
        nodes = tree.level_nodes(h)
        if counts.shape != (nodes.size,):
            raise ShapeMismatchError(explain(f"noisy counts of level {h}", counts.shape, f"({nodes.size},)",
                                             "one noisy size per node of the level"))
        groups.append(tree.leaf_ancestor(h) - nodes[0])
        weights.append(1.0 / nodes.size)
    problem = _TreeLeastSquares(groups, weights, [np.asarray(c, dtype=np.float64) for c in noisy_levels],
                                np.asarray(noisy_leaves, dtype=np.float64), 1.0 / tree.n_leaves)
    leaves = problem.solve()
    levels: tuple[FloatArray, ...] = (
        *(np.bincount(g, weights=leaves, minlength=c.size).astype(np.float64)
          for g, c in zip(groups, noisy_levels, strict=True)), leaves)
    return ConsistentCounts(levels=levels, objective=problem.objective(leaves))


class _TreeLeastSquares:
    """``min_{l >= 0} sum_i w_i ||A_i l - c_i||^2 + w_p ||l - c_p||^2`` for nested (tree) groupings ``A_i``.

    The Hessian (up to a factor 2) is ``H = w_p I + sum_i w_i A_i^T A_i``: the identity plus one all-ones
    block per node, nested along the tree. ``H_FF x = b`` on any subset ``F`` of the leaves is solved in
    ``O(|F| p)`` by Sherman-Morrison from the leaves up: a node's block is its children's block-diagonal
    ``B`` plus ``w 1 1^T``, so ``(B + w 1 1^T)^-1 b = B^-1 b - B^-1 1 * w 1^T B^-1 b / (1 + w 1^T B^-1 1)``.

    The bound constraints are handled by the primal-dual active-set method (Hintermüller, Ito, Kunisch,
    SIAM J. Optim. 2002), whose fixed point is exactly the KKT system ``H l - g = mu``, ``l >= 0``,
    ``mu >= 0``, ``l * mu = 0``. The result is checked against those conditions; in the unlikely case the
    iteration cycles or the check fails, scipy's BVLS (an exact active-set solver) is used instead.
    """

    def __init__(self, groups: list[IntArray], weights: list[float], targets: list[FloatArray],
                 leaf_target: FloatArray, leaf_weight: float) -> None:
        self.groups, self.weights, self.targets = groups, weights, targets
        self.leaf_target, self.leaf_weight = leaf_target, leaf_weight
        self.n = leaf_target.size
        self.sizes = [t.size for t in targets]
        g = leaf_weight * leaf_target
        for grp, w, c in zip(groups, weights, targets, strict=True):
            g = g + w * c[grp]
        self.g = g

    def hessian_times(self, x: FloatArray) -> FloatArray:
        out = self.leaf_weight * x
        for grp, w, size in zip(self.groups, self.weights, self.sizes, strict=True):
            out = out + w * np.bincount(grp, weights=x, minlength=size)[grp]
        return out

    def objective(self, x: FloatArray) -> float:
        total = self.leaf_weight * float(np.sum((x - self.leaf_target) ** 2))
        for grp, w, c in zip(self.groups, self.weights, self.targets, strict=True):
            total += w * float(np.sum((np.bincount(grp, weights=x, minlength=c.size) - c) ** 2))
        return total

    def solve_free(self, free: npt.NDArray[np.bool_], b: FloatArray) -> FloatArray:
        """``x_F = H_FF^-1 b_F`` (zero outside ``F``), by the bottom-up Sherman-Morrison recursion."""
        x = np.zeros(self.n)
        idx = np.flatnonzero(free)
        if idx.size == 0:
            return x
        xf = b[idx] / self.leaf_weight
        uf = np.full(idx.size, 1.0 / self.leaf_weight)
        for grp, w, size in zip(reversed(self.groups), reversed(self.weights), reversed(self.sizes), strict=True):
            gf = grp[idx]
            sb = np.bincount(gf, weights=xf, minlength=size)[gf]
            su = np.bincount(gf, weights=uf, minlength=size)[gf]
            denom = 1.0 + w * su
            xf = xf - uf * (w * sb) / denom
            uf = uf / denom
        x[idx] = xf
        return x

    def solve(self, max_iter: int = 200) -> FloatArray:
        free = np.ones(self.n, dtype=bool)
        x = self.solve_free(free, self.g)
        mu = np.zeros(self.n)
        scale = max(1.0, float(np.abs(self.g).max()))
        for _ in range(max_iter):
            new_free = ~((mu - x) > 0)
            x = self.solve_free(new_free, self.g)
            mu = np.where(new_free, 0.0, self.hessian_times(x) - self.g)
            if np.array_equal(new_free, free):
                break
            free = new_free
        # KKT check: primal feasibility (up to rounding) and dual feasibility on the active set.
        if np.all(x >= -1e-9 * scale) and np.all(mu >= -1e-9 * scale):
            return np.maximum(x, 0.0)
        return self._bvls()  # pragma: no cover - a safety net; the tests exercise it directly

    def _bvls(self) -> FloatArray:
        """The exact reference: BVLS on the explicit (dense) weighted system."""
        blocks = [np.sqrt(w) * sp.csr_matrix((np.ones(self.n), (grp, np.arange(self.n))), shape=(size, self.n))
                  for grp, w, size in zip(self.groups, self.weights, self.sizes, strict=True)]
        blocks.append(np.sqrt(self.leaf_weight) * sp.identity(self.n, format="csr"))
        M = sp.vstack(blocks, format="csr").toarray()
        b = np.concatenate([np.sqrt(w) * c for w, c in zip(self.weights, self.targets, strict=True)]
                           + [np.sqrt(self.leaf_weight) * self.leaf_target])
        result = lsq_linear(M, b, bounds=(0.0, np.inf), method="bvls", tol=1e-12)
        return np.maximum(np.asarray(result.x, dtype=np.float64), 0.0)


def integer_sizes(x: FloatArray) -> IntArray:
    """Largest-remainder rounding of non-negative sizes: sum equals ``round(sum(x))``, each moves by < 1."""
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    base = np.floor(x)
    short = round(float(x.sum())) - int(base.sum())
    if short > 0:
        order = np.argsort(-(x - base), kind="stable")
        base[order[:short]] += 1
    return base.astype(np.int64)


def synthesize(tree: PrivateTree, sizes: IntArray, *, rng: RandomSource | None = None) -> tuple[FloatArray, IntArray]:
    """Algorithm 5, lines 6-8: ``sizes[j]`` records drawn uniformly in leaf ``j``'s box.

    Returns the attribute view of the records (n x d) and each record's leaf index.
    """
    rng = resolve(rng)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.shape != (tree.n_leaves,) or np.any(sizes < 0):
        raise ShapeMismatchError(explain("sizes", sizes.shape, f"{tree.n_leaves} non-negative ints",
                                         "pass integer_sizes(...) of the consistent leaf sizes"))
    lower, upper, fixed = tree.boxes()
    leaf = np.repeat(np.arange(tree.n_leaves, dtype=np.int64), sizes)
    n, d = leaf.size, tree.domain.d
    out = np.empty((n, d))
    for j in range(d):
        if tree.domain.numeric[j]:
            lo, hi = lower[leaf, j], upper[leaf, j]
            col = lo + (hi - lo) * rng.random(n)
            # [lo, hi): never reach hi, which belongs to the right sibling of a split at hi.
            out[:, j] = np.where(hi > lo, np.minimum(col, np.nextafter(hi, -np.inf)), lo)
        else:
            free = rng.below(tree.domain.n_categories[j], n).astype(np.float64)
            out[:, j] = np.where(fixed[leaf, j] >= 0, fixed[leaf, j], free)
    return out, leaf
