"""optPrivateGen: the bounded least-squares reduction equals a brute-force QP; synthesis stays in the leaves."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.errors import ParameterError, ShapeMismatchError
from mpdp.learning.pfds.consistency import (
    consistent_counts,
    incidence,
    integer_sizes,
    synthesize,
)
from mpdp.learning.pfds.tree import TreeParams, make_tree
from mpdp.randomness import RandomSource
from tests.learning.pfds.fixtures import toy_data, toy_domain

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def _small_tree(seed: int, h_max: int = 3):
    rng = RandomSource.seeded(seed)
    values, y = toy_data(60, rng)
    from mpdp.learning.pfds import tree_noise
    saved = (tree_noise.exponential_choice, tree_noise.laplace_counts)
    tree_noise.exponential_choice = lambda utility, **_: int(np.argmax(utility))  # type: ignore[assignment]
    tree_noise.laplace_counts = lambda counts, **_: np.asarray(counts, dtype=float)  # type: ignore[assignment]
    try:
        tree = make_tree(values, y, toy_domain(), TreeParams(h_max=h_max, t=4, max_leaves=8),
                            epsilon_level=1.0, rng=rng)
    finally:
        tree_noise.exponential_choice, tree_noise.laplace_counts = saved  # type: ignore[assignment]
    return tree


def _brute_force_qp(tree, noisy_levels, noisy_leaves):
    """min sum_i (1/m_i)||x_i - c_i||^2 s.t. parent = sum of children (O2), x >= 0 (O3), over ALL node
    variables: enumerate which variables sit at 0, solve each equality-constrained QP by its KKT system,
    keep the feasible solutions, return the best objective. Independent of the leaf reduction."""
    p = len(noisy_levels) + 1
    sizes = [tree.level_nodes(h).size for h in range(1, p)] + [tree.n_leaves]
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    nvar = int(offsets[-1])
    weights = np.concatenate([np.full(s, 1.0 / s) for s in sizes])
    target = np.concatenate([*noisy_levels, noisy_leaves])
    rows = []
    for h in range(1, p):  # each node of level h equals the sum of its nodes at level h+1 (leaves for h = p-1)
        nodes = tree.level_nodes(h)
        if h + 1 < p:
            child_anc = tree.leaf_ancestor(h)  # via leaves: the node at h+1 is a child iff its leaves are below
            below = tree.leaf_ancestor(h + 1)
            for j, node in enumerate(nodes):
                row = np.zeros(nvar)
                row[offsets[h - 1] + j] = 1.0
                kids = np.unique(below[child_anc == node]) - tree.level_nodes(h + 1)[0]
                row[offsets[h] + kids] = -1.0
                rows.append(row)
        else:
            anc = tree.leaf_ancestor(h)
            for j, node in enumerate(nodes):
                row = np.zeros(nvar)
                row[offsets[h - 1] + j] = 1.0
                row[offsets[h] + np.flatnonzero(anc == node)] = -1.0
                rows.append(row)
    E = np.array(rows)
    best = np.inf
    best_x = None
    Q = np.diag(2 * weights)
    for zeros in itertools.product((False, True), repeat=nvar):
        Z = np.flatnonzero(zeros)
        cons = np.vstack([E, np.eye(nvar)[Z]]) if Z.size else E
        kkt = np.block([[Q, cons.T], [cons, np.zeros((cons.shape[0], cons.shape[0]))]])
        rhs = np.concatenate([2 * weights * target, np.zeros(cons.shape[0])])
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        x = sol[:nvar]
        if np.any(x < -1e-9) or np.abs(E @ x).max() > 1e-9:
            continue
        val = float(weights @ (x - target) ** 2)
        if val < best:
            best, best_x = val, x
    return best, best_x


@pytest.mark.parametrize("seed", range(6))
def test_consistency_solve_equals_brute_force_qp(seed: int) -> None:
    tree = _small_tree(seed)
    rng = RandomSource.seeded(100 + seed)
    # Noisy counts with some strongly negative entries, so the non-negativity constraints bind.
    noisy_levels = [rng.integers(-20, 40, tree.level_nodes(h).size).astype(float) for h in range(1, 3)]
    noisy_leaves = rng.integers(-15, 25, tree.n_leaves).astype(float)
    result = consistent_counts(tree, noisy_levels, noisy_leaves)
    best, best_x = _brute_force_qp(tree, noisy_levels, noisy_leaves)
    ours = np.concatenate(result.levels)
    w = np.concatenate([np.full(lv.size, 1.0 / lv.size) for lv in result.levels])
    target = np.concatenate([*noisy_levels, noisy_leaves])
    assert float(w @ (ours - target) ** 2) == pytest.approx(best, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(ours, best_x, atol=1e-7)


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.5, 200.0))
def test_every_constraint_holds_exactly(seed: int, scale: float) -> None:
    tree = _small_tree(seed % 7, h_max=4)
    rng = RandomSource.seeded(seed)
    noisy_levels = [scale * (rng.random(tree.level_nodes(h).size) - 0.4) for h in range(1, 4)]
    noisy_leaves = scale * (rng.random(tree.n_leaves) - 0.5)
    result = consistent_counts(tree, noisy_levels, noisy_leaves)
    leaves = result.leaves
    assert np.all(leaves >= 0.0)  # (O3) exactly, not within a tolerance
    for h in range(1, 4):
        assert np.array_equal(result.levels[h - 1], incidence(tree, h) @ leaves)  # (O2) by construction
        assert np.all(result.levels[h - 1] >= 0.0)
    # Children sums, level by level, match up to float summation order only.
    for h in range(1, 3):
        np.testing.assert_allclose(result.levels[h - 1], incidence(tree, h) @ leaves, rtol=0, atol=0)


def test_consistent_counts_recover_exact_counts_without_noise() -> None:
    tree = _small_tree(3)
    leaves = np.arange(tree.n_leaves, dtype=float)
    levels = [incidence(tree, h) @ leaves for h in range(1, 3)]
    result = consistent_counts(tree, levels, leaves)
    np.testing.assert_allclose(result.leaves, leaves, atol=1e-9)
    assert result.objective == pytest.approx(0.0, abs=1e-15)


def test_shape_errors() -> None:
    tree = _small_tree(0)
    with pytest.raises(ShapeMismatchError, match="noisy_leaves"):
        consistent_counts(tree, [np.zeros(1)], np.zeros(tree.n_leaves + 1))
    with pytest.raises(ShapeMismatchError, match="level 1"):
        consistent_counts(tree, [np.zeros(2)], np.zeros(tree.n_leaves))
    with pytest.raises(ParameterError, match="levels"):
        consistent_counts(tree, [np.zeros(1)] * 3, np.zeros(tree.n_leaves))


@given(st.lists(st.floats(0.0, 50.0), min_size=1, max_size=30))
def test_integer_sizes_keep_the_total_and_move_each_by_less_than_one(x: list[float]) -> None:
    arr = np.array(x)
    sizes = integer_sizes(arr)
    assert sizes.sum() == round(arr.sum())
    assert np.all(np.abs(sizes - arr) < 1.0)
    assert np.all(sizes >= 0)


@pytest.mark.parametrize("seed", range(3))
def test_synthetic_records_fall_inside_their_leaves(seed: int) -> None:
    tree = _small_tree(seed, h_max=4)
    rng = RandomSource.seeded(seed)
    sizes = rng.integers(0, 30, tree.n_leaves)
    values, leaf = synthesize(tree, sizes, rng=rng)
    assert values.shape == (int(sizes.sum()), 4)
    assert np.array_equal(np.bincount(leaf, minlength=tree.n_leaves), sizes)
    assert np.array_equal(tree.leaf_of(values), leaf)
    lower, upper, fixed = tree.boxes()
    assert np.all(values[:, :2] >= lower[leaf, :2]) and np.all(values[:, :2] < upper[leaf, :2])
    free = fixed[leaf] < 0
    assert np.all(values[:, 2:][~free[:, 2:]] == fixed[leaf][:, 2:][~free[:, 2:]])


def test_synthesis_is_uniform_inside_a_leaf() -> None:
    """A leaf's free categorical attribute takes each category with frequency 1/k (binomial bound)."""
    tree = _small_tree(1)
    rng = RandomSource.seeded(5)
    sizes = np.zeros(tree.n_leaves, dtype=np.int64)
    sizes[0] = 30_000
    values, _ = synthesize(tree, sizes, rng=rng)
    _, _, fixed = tree.boxes()
    for j, k in ((2, 3), (3, 2)):
        if fixed[0, j] < 0:
            freq = np.bincount(values[:, j].astype(int), minlength=k) / 30_000
            # 5 sigma of a binomial proportion: false-failure rate below 1e-6 per category.
            assert np.all(np.abs(freq - 1 / k) < 5 * np.sqrt((1 / k) * (1 - 1 / k) / 30_000))


@settings(max_examples=15)
@given(seed=st.integers(0, 10_000))
def test_active_set_solver_matches_bvls_on_larger_trees(seed: int) -> None:
    from mpdp.learning.pfds.consistency import _TreeLeastSquares

    tree = _small_tree(seed % 5, h_max=4)
    rng = RandomSource.seeded(seed)
    levels = [40.0 * (rng.random(tree.level_nodes(h).size) - 0.3) for h in range(1, 4)]
    leaves = 30.0 * (rng.random(tree.n_leaves) - 0.5)
    ours = consistent_counts(tree, levels, leaves)
    groups = [tree.leaf_ancestor(h) - tree.level_nodes(h)[0] for h in range(1, 4)]
    problem = _TreeLeastSquares(groups, [1.0 / c.size for c in levels], levels, leaves, 1.0 / tree.n_leaves)
    reference = problem._bvls()
    assert ours.objective <= problem.objective(reference) + 1e-9
    np.testing.assert_allclose(ours.leaves, reference, atol=1e-6)
