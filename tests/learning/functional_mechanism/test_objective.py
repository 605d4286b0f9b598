"""The FM objective as a quadratic and its dissection into single- and cross-party blocks (Equation 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.errors import DomainError, ParameterError, ShapeMismatchError
from mpdp.learning.functional_mechanism.objective import (
    ColumnPartition,
    QuadraticObjective,
    block_shape,
    check_features,
    check_labels,
    exact_objective,
    label_weights,
    quadratic_weight,
)
from mpdp.randomness import RandomSource


def _data(rng: RandomSource, n: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = 2 * rng.random((n, d)) - 1
    y_lin = 2 * rng.random(n) - 1
    y_log = rng.bits(n).astype(np.float64)
    return X, y_lin, y_log


@pytest.mark.parametrize("objective", ["linear", "logistic"])
def test_exact_objective_matches_loss(objective: str, rng: RandomSource) -> None:
    X, y_lin, y_log = _data(rng, 50, 4)
    y = y_lin if objective == "linear" else y_log
    obj = exact_objective(objective, X, y)  # type: ignore[arg-type]
    w = 0.3 * (2 * rng.random(4) - 1)
    z = X @ w
    if objective == "linear":
        assert obj.value(w) == pytest.approx(np.sum((y - z) ** 2))
    else:  # order-2 Taylor expansion of log(1 + e^z) - y z at 0, minus the data-free n log 2
        assert obj.value(w) == pytest.approx(np.sum(z / 2 + z * z / 8 - y * z))
    # The monomial view: off-diagonal monomials carry 2 M_ab; diagonal M_aa.
    mono = obj.monomials()
    assert mono.size == 1 + 4 + 10
    assert mono[5] == pytest.approx(obj.quad[0, 0]) and mono[6] == pytest.approx(2 * obj.quad[0, 1])


@given(st.integers(1, 9), st.integers(1, 4), st.data())
def test_blocks_reassemble_to_centralised(d: int, k: int, data: st.DataObject) -> None:
    parties = min(k, d)
    rng = RandomSource.seeded(data.draw(st.integers(0, 2**32)))
    perm = rng.permutation(d)
    cuts = sorted(data.draw(st.sets(st.integers(1, d - 1), min_size=parties - 1, max_size=parties - 1))) if d > 1 \
        else []
    parts = tuple(tuple(int(c) for c in chunk) for chunk in np.split(perm, cuts))
    label = data.draw(st.integers(0, len(parts) - 1))
    partition = ColumnPartition(parts, label)
    X, y, _ = _data(rng, 20, d)
    for objective in ("linear", "logistic"):
        central = exact_objective(objective, X, y)  # type: ignore[arg-type]
        Xs = partition.split(X)
        r = label_weights(objective, y)  # type: ignore[arg-type]
        q = quadratic_weight(objective)  # type: ignore[arg-type]
        values = {}
        for block in partition.blocks():
            if block[0] == "const":
                values[block] = np.asarray(central.constant)
            elif block[0] == "lin":
                values[block] = r @ Xs[block[1]]
            else:
                values[block] = q * Xs[block[1]].T @ Xs[block[2]]
            assert np.shape(values[block]) == block_shape(partition, block)
        joint = QuadraticObjective.from_blocks(partition, values)
        np.testing.assert_allclose(joint.quad, central.quad, atol=1e-12)
        np.testing.assert_allclose(joint.linear, central.linear, atol=1e-12)
        single = [b for b in partition.blocks() if len(partition.involved(b)) == 1]
        assert all(b[0] != "quad" or b[1] == b[2] for b in single)


def test_partition_validation() -> None:
    p = ColumnPartition.even(7, 3, label_party=1)
    assert p.sizes == (2, 3, 2) and p.d == 7 and p.owner(4) == 1
    assert ColumnPartition(((), (0, 1)), label_party=0).sizes == (0, 2)  # a label-only party
    with pytest.raises(ParameterError, match="exactly one party"):
        ColumnPartition(((0, 1), (1, 2)))
    with pytest.raises(ParameterError, match="at least one column"):
        ColumnPartition(((0, 1), ()), label_party=0)
    with pytest.raises(ParameterError, match="label_party"):
        ColumnPartition(((0,), (1,)), label_party=2)
    with pytest.raises(ShapeMismatchError):
        p.split(np.zeros((3, 6)))
    with pytest.raises(ShapeMismatchError, match="collect every"):
        QuadraticObjective.from_blocks(p, {})


def test_feature_and_label_policy() -> None:
    X = np.array([[0.5, -0.5], [1.0, 1.0]])
    assert check_features(X).shape == (2, 2)
    with pytest.raises(DomainError, match=r"\[-1, 1\]"):
        check_features([[1.5, 0.0]])
    with pytest.raises(DomainError, match="row L1 norm"):
        check_features(X, l1_bound=1.5)
    clipped = check_features([[1.5, -3.0], [0.2, 0.2]], l1_bound=1.0, clip=True)
    assert np.abs(clipped).max() <= 1.0 and np.abs(clipped).sum(axis=1).max() <= 1.0 + 1e-12
    np.testing.assert_allclose(clipped[1], [0.2, 0.2])
    with pytest.raises(DomainError, match="non-finite"):
        check_features([[np.nan, 0.0]])
    with pytest.raises(DomainError, match=r"\{0, 1\}"):
        check_labels("logistic", [0.0, 2.0])
    with pytest.raises(DomainError, match=r"\[-1, 1\]"):
        check_labels("linear", [0.0, 2.0])
    with pytest.raises(ShapeMismatchError):
        check_labels("linear", [[0.0]])
    np.testing.assert_array_equal(check_labels("linear", [0.5, 2.0, -3.0], clip=True), [0.5, 1.0, -1.0])
    with pytest.raises(DomainError, match=r"\{0, 1\}"):  # clipping never changes a class
        check_labels("logistic", [0.0, 2.0], clip=True)
