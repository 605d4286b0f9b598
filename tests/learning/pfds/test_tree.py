"""makeTree (Algorithm 3): structure, Max-operator utility, wire format and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.datasets.dataset import Dataset
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError
from mpdp.learning.pfds.domain import TreeDomain
from mpdp.learning.pfds.tree import PrivateTree, TreeParams, make_tree, max_operator, min_leaves
from mpdp.randomness import RandomSource
from mpdp.runtime import decode, encode
from tests.learning.pfds.fixtures import RecordingLedger, noiseless, toy_data, toy_domain

__all__ = ["noiseless"]

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")


def test_max_operator_matches_its_definition() -> None:
    rng = RandomSource.seeded(1)
    x = 10 * rng.random(200)
    y = rng.below(3, 200).astype(np.int64)
    cands = np.array([0.0, 2.5, 5.0, x[7], 10.0])
    got = max_operator(x, y, cands, 3)
    for i, v in enumerate(cands):
        left = max(np.sum((x < v) & (y == c)) for c in range(3))
        right = max(np.sum((x >= v) & (y == c)) for c in range(3))
        assert got[i] == left + right


@pytest.mark.usefixtures("noiseless")
def test_tree_shape_levels_and_leaf_bound() -> None:
    rng = RandomSource.seeded(2)
    values, y = toy_data(500, rng)
    ledger = RecordingLedger()
    tree = make_tree(values, y, toy_domain(), TreeParams(h_max=4, t=10, max_leaves=16),
                     epsilon_level=0.25, rng=rng, ledger=ledger)
    assert tree.level[0] == 1 and tree.level[-1] == 4
    assert 8 <= tree.n_leaves <= 16  # at least 2^(h_max-1) binary leaves, at most the bound
    assert np.all(tree.attribute[tree.leaf_start:] == -1)
    assert [c.epsilon for c, _ in ledger.entries] == [0.25] * 4  # h_max entries of epsilon_level: Theorem 3.1
    # Categorical attributes appear at most once on every root-to-leaf path.
    _, _, fixed = tree.boxes()
    assert fixed.shape == (tree.n_leaves, 4)
    # Noise-free leaves carry the true class histogram and its argmax label.
    leaf = tree.leaf_of(values)
    hist = np.zeros((tree.n_leaves, 2))
    np.add.at(hist, (leaf, y.astype(int)), 1)
    np.testing.assert_array_equal(tree.leaf_counts, hist)
    nonempty = hist.sum(1) > 0
    assert np.all(hist[nonempty, tree.leaf_label[nonempty]] == hist[nonempty].max(1))


@pytest.mark.usefixtures("noiseless")
def test_noise_free_tree_learns_the_rule() -> None:
    rng = RandomSource.seeded(3)
    values, y = toy_data(2000, rng)
    tree = make_tree(values, y, toy_domain(), TreeParams(h_max=4, t=10, max_leaves=16),
                        epsilon_level=1.0, rng=rng)
    test_values, test_y = toy_data(2000, rng)
    # Every path crosses x0 at least with probability 1 - (3/4)^3; error well below the 40% base rate.
    assert np.mean(tree.predict(test_values) == test_y) > 0.8


@pytest.mark.usefixtures("noiseless")
def test_regression_labels_are_bucketed() -> None:
    rng = RandomSource.seeded(4)
    values, y = toy_data(400, rng, task="regression")
    domain = toy_domain("regression")
    tree = make_tree(values, y, domain, TreeParams(h_max=3, t=10, max_leaves=8), epsilon_level=1.0, rng=rng)
    assert tree.leaf_counts is not None and tree.leaf_counts.shape == (tree.n_leaves, 10)
    assert tree.leaf_counts.sum() == 400
    codes = domain.label_classes(y)
    assert codes.min() >= 0 and codes.max() <= 9
    lo, hi = domain.bucket_bounds(codes)
    assert np.all((lo <= y) & (y <= hi))


def test_leaf_bound_is_respected_with_many_categories(noiseless: None) -> None:
    domain = TreeDomain(("n", "c1", "c2", "c3"), (True, False, False, False), (0.0, np.nan, np.nan, np.nan),
                        (1.0, np.nan, np.nan, np.nan), (0, 41, 16, 14))
    rng = RandomSource.seeded(5)
    values = np.column_stack([rng.random(300), rng.below(41, 300), rng.below(16, 300), rng.below(14, 300)])
    y = rng.bits(300).astype(float)
    for seed in range(5):
        tree = make_tree(values, y, domain, TreeParams(h_max=4, t=3, max_leaves=64), epsilon_level=1.0,
                            rng=RandomSource.seeded(seed))
        assert tree.n_leaves <= 64
    assert min_leaves(domain, np.ones(4, dtype=bool), 3) == 8


@pytest.mark.usefixtures("noiseless")
def test_wire_round_trip_keeps_predictions_and_drops_counts() -> None:
    rng = RandomSource.seeded(6)
    values, y = toy_data(300, rng)
    domain = toy_domain()
    tree = make_tree(values, y, domain, TreeParams(h_max=4, t=5, max_leaves=32), epsilon_level=1.0, rng=rng)
    received = PrivateTree.from_wire(decode(encode(tree)), domain)
    assert received.leaf_counts is None
    np.testing.assert_array_equal(received.predict(values), tree.predict(values))
    np.testing.assert_array_equal(received.boxes()[0], tree.boxes()[0])


@pytest.mark.usefixtures("noiseless")
@pytest.mark.parametrize("field, value", [
    ("kind", "other"), ("h_max", 9), ("level", np.array([1, 2])), ("leaf_label", None),
    ("attribute", "shift"), ("n_children", "shift"), ("first_child", "shift"), ("leaf_label", "big"),
    ("threshold", "nan"), ("domain", [1.0]),
])
def test_tampered_tree_messages_are_rejected(field: str, value: object) -> None:
    rng = RandomSource.seeded(7)
    values, y = toy_data(100, rng)
    domain = toy_domain()
    tree = make_tree(values, y, domain, TreeParams(h_max=3, t=5, max_leaves=16), epsilon_level=1.0, rng=rng)
    wire = decode(encode(tree))
    if isinstance(value, str) and value == "shift":
        wire[field] = wire[field] + 1
    elif isinstance(value, str) and value == "big":
        wire[field] = wire[field] + 5
    elif isinstance(value, str) and value == "nan":
        wire[field] = np.full_like(wire[field], np.nan)
    else:
        wire[field] = value
    with pytest.raises(MalformedMessageError, match="tree message"):
        PrivateTree.from_wire(wire, domain)


def test_bad_input() -> None:
    rng = RandomSource.seeded(8)
    values, y = toy_data(50, rng)
    domain = toy_domain()
    with pytest.raises(ParameterError, match="h_max"):
        make_tree(values, y, domain, TreeParams(h_max=5), epsilon_level=1.0, rng=rng)
    with pytest.raises(ParameterError, match="max_leaves"):
        make_tree(values, y, domain, TreeParams(h_max=4, max_leaves=4), epsilon_level=1.0, rng=rng)
    for eps in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="epsilon_level"):
            make_tree(values, y, domain, TreeParams(h_max=3), epsilon_level=eps, rng=rng)
    with pytest.raises(ShapeMismatchError, match="empty party"):
        make_tree(values[:0], y[:0], domain, TreeParams(h_max=3), epsilon_level=1.0, rng=rng)
    with pytest.raises(ParameterError, match="t:"):
        TreeParams(t=0)
    bad = values.copy()
    bad[0, 2] = 7  # category 7 of a 3-category attribute
    with pytest.raises(ParameterError, match="c0"):
        make_tree(bad, y, domain, TreeParams(h_max=3), epsilon_level=1.0, rng=rng)


def test_attribute_types_must_be_declared() -> None:
    data = Dataset(name="plain", X=np.zeros((3, 2)), y=np.zeros(3), feature_names=("a", "b"),
                   task="classification")
    with pytest.raises(ParameterError, match="attributes of dataset 'plain'"):
        TreeDomain.from_dataset(data)
    with pytest.raises(ParameterError, match="attributes"):
        TreeDomain((), (), (), (), ())
