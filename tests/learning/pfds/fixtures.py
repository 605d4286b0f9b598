"""Small mixed-type data and noise-free stand-ins for the PFDS tests (tests only, never src)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.learning.pfds import tree_noise
from mpdp.learning.pfds.domain import TreeDomain
from mpdp.randomness import RandomSource


class RecordingLedger:
    """A BudgetSpender that only records (tests of what is charged, in order)."""

    def __init__(self) -> None:
        self.entries: list[tuple[object, str]] = []

    def spend(self, cost, *, label: str):  # type: ignore[no-untyped-def]
        self.entries.append((cost, label))
        return None


def toy_domain(task: str = "classification") -> TreeDomain:
    """Two numeric attributes on [0, 10], a 3-category and a 2-category attribute."""
    return TreeDomain(
        names=("x0", "x1", "c0", "c1"), numeric=(True, True, False, False),
        lower=(0.0, 0.0, float("nan"), float("nan")), upper=(10.0, 10.0, float("nan"), float("nan")),
        n_categories=(0, 0, 3, 2), task=task, n_classes=2 if task == "classification" else 10,
    )


def toy_data(n: int, rng: RandomSource, task: str = "classification") -> tuple[np.ndarray, np.ndarray]:
    """Label 1 iff x0 >= 6 (or, for regression, y = x0 / 5 - 1), with categorical noise attributes."""
    values = np.column_stack([
        10.0 * rng.random(n), 10.0 * rng.random(n),
        rng.below(3, n).astype(np.float64), rng.below(2, n).astype(np.float64),
    ])
    if task == "classification":
        return values, (values[:, 0] >= 6.0).astype(np.float64)
    return values, values[:, 0] / 5.0 - 1.0


@pytest.fixture
def noiseless(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the DP noise by its noise-free limit (argmax choice, exact counts) to test structure."""
    monkeypatch.setattr(tree_noise, "exponential_choice",
                        lambda utility, **_: int(np.argmax(utility)))

    def exact_counts(counts, *, epsilon, ledger=None, label="laplace", **_):  # type: ignore[no-untyped-def]
        if ledger is not None:
            ledger.spend(PrivacyCost(epsilon=epsilon, mechanism="laplace"), label=label)
        return np.asarray(counts, dtype=np.float64)

    monkeypatch.setattr(tree_noise, "laplace_counts", exact_counts)
