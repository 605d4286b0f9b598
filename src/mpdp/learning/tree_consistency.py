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
which :func:`scipy.optimize.lsq_linear` solves (BVLS, an active-set method that terminates at the exact
optimum up to floating-point rounding). The returned solution satisfies (O2) exactly (the node values are
*computed* as sums of the leaf values) and (O3) exactly (leaves are clipped at 0 after the solve, which moves
them by at most the solver's rounding).

Integer sizes: the leaf sizes are rounded by the largest-remainder method, which keeps their sum equal to the
rounded total, then each leaf receives that many records drawn uniformly from its box (numeric attributes
uniform on the box's interval, categorical ones uniform among the categories the path allows). All of this
reads only DP outputs: post-processing (Theorem 2.3).

References
----------
004_c0399b84594d620b.txt, section 3.2.1, Algorithm 5, Theorem 3.2. Fioretto, Lee, Van Hentenryck,
AAMAS 2018 [13] (the optimisation-based release). Hay et al., VLDB 2010 [16] (hierarchical consistency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from mpdp.dp.sensitivities.dp_tree import level_count_sensitivity
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning import tree_noise
from mpdp.learning.dp_tree import PrivateTree
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

# BVLS (exact active set) on a dense matrix up to this many leaves; beyond, the sparse trust-region solver.
_DENSE_LEAVES = 4096


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
    tree: PrivateTree, values: FloatArray, p: int, *, epsilon: float, rng: RandomSource | None = None
) -> tuple[list[FloatArray], list[tuple[str, float]]]:
    """Algorithm 5, lines 1-2: Laplace-noised node sizes of levels ``1..p-1`` at ``epsilon / (p - 1)`` each.

    Returns the noisy counts per level and the releases made (one per level) for the caller's ledger.
    """
    rng = resolve(rng)
    tree_noise.check_epsilon(epsilon, "epsilon")
    if not isinstance(p, int) or not 2 <= p <= tree.h_max:
        raise ParameterError(explain("p", p, f"an int in [2, h_max={tree.h_max}]",
                                     "pass p <= h_max (the paper uses p = 4 with h_max = 8)"))
    eps_level = epsilon / (p - 1)
    leaf = tree.leaf_of(values)
    out: list[FloatArray] = []
    spends: list[tuple[str, float]] = []
    for h in range(1, p):
        nodes = tree.level_nodes(h)
        anc = tree.leaf_ancestor(h)[leaf] - nodes[0]
        counts = np.bincount(anc, minlength=nodes.size).astype(np.float64)
        out.append(tree_noise.laplace_counts(counts, epsilon=eps_level, sensitivity=level_count_sensitivity(),
                                             rng=rng))
        spends.append((f"optPrivateGen level {h}: Laplace node sizes (parallel over nodes)", eps_level))
    return out, spends


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
    blocks, targets = [], []
    for h, counts in enumerate(noisy_levels, start=1):
        A = incidence(tree, h)
        if counts.shape != (A.shape[0],):
            raise ShapeMismatchError(explain(f"noisy counts of level {h}", counts.shape, f"({A.shape[0]},)",
                                             "one noisy size per node of the level"))
        w = np.sqrt(1.0 / A.shape[0])
        blocks.append(A * w)
        targets.append(counts * w)
    w_leaf = np.sqrt(1.0 / tree.n_leaves)
    blocks.append(sp.identity(tree.n_leaves, format="csr") * w_leaf)
    targets.append(noisy_leaves * w_leaf)
    M = sp.vstack(blocks, format="csr")
    b = np.concatenate(targets)
    if tree.n_leaves <= _DENSE_LEAVES:
        result = lsq_linear(M.toarray(), b, bounds=(0.0, np.inf), method="bvls", tol=1e-12, lsmr_tol=None)
    else:
        result = lsq_linear(M, b, bounds=(0.0, np.inf), method="trf", tol=1e-12, lsmr_tol="auto")
    leaves = np.maximum(np.asarray(result.x, dtype=np.float64), 0.0)
    levels = tuple(incidence(tree, h) @ leaves for h in range(1, p)) + (leaves,)
    residual = M @ leaves - b
    return ConsistentCounts(levels=levels, objective=float(residual @ residual))


def integer_sizes(x: FloatArray) -> IntArray:
    """Largest-remainder rounding of non-negative sizes: sum equals ``round(sum(x))``, each moves by < 1."""
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    base = np.floor(x)
    short = int(round(float(x.sum()))) - int(base.sum())
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
