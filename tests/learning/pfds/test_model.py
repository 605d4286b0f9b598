"""PFDS agents over the runtime: messages, the ledger total (Theorem 3.3), variants, labelling and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import chisquare

from mpdp.datasets.synthetic import mixed_tabular
from mpdp.errors import MalformedMessageError, ParameterError, PrivacyLeakWarning, ShapeMismatchError
from mpdp.learning import erm
from mpdp.learning.pfds import tree_noise
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, Schema, majority_vote
from mpdp.learning.pfds.tree import max_operator
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.learning.pfds.fixtures import RecordingLedger

pytestmark = pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")

PARAMS = PFDSParams(h_max=4, t=5, p=3, max_leaves=32)


def _agents(params: PFDSParams, epsilon: float = 1.0, m: int = 4, sharers: int = 3, task: str = "classification"):
    data = mixed_tabular(600, numeric=3, categorical=2, categories=3, task=task, rng=RandomSource.seeded(1))
    schema = Schema(data.attributes, data.task)
    names = [f"a{k}" for k in range(m)]
    share = names[:sharers]
    ledgers = {n: RecordingLedger() for n in names}
    agents = {n: PFDSAgent(n, data.values[k::m], data.y[k::m], schema, params, epsilon, share, ledger=ledgers[n])
              for k, n in enumerate(names)}
    return data, schema, agents, ledgers


def _total(ledger: RecordingLedger) -> float:
    return sum(cost.epsilon for cost, _ in ledger.entries)  # type: ignore[attr-defined]


@pytest.mark.parametrize("epsilon", [1.0, 0.3])
def test_protocol_shares_data_and_spends_exactly_epsilon(epsilon: float) -> None:
    data, schema, agents, ledgers = _agents(PARAMS, epsilon)
    run = run_protocol(agents, rng=RandomSource.seeded(2))
    assert run.messages == 3 * 2 + 3 * 3  # trees between the 3 sharers, data from each sharer to 3 agents
    for name in ("a0", "a1", "a2"):
        assert _total(ledgers[name]) == pytest.approx(epsilon, rel=1e-12)  # Theorem 3.3
        labels = [label for _, label in ledgers[name].entries]
        assert len(labels) == PARAMS.h_max + PARAMS.p - 1
    assert ledgers["a3"].entries == []  # a non-sharer releases nothing
    n_syn = {n: agents[n].synthetic[0].shape[0] for n in ("a0", "a1", "a2")}  # type: ignore[index]
    assert agents["a3"].received.keys() == {"a0", "a1", "a2"}
    for src, (values, labels) in agents["a3"].received.items():
        assert values.shape == (n_syn[src], len(schema.attributes))
        assert set(np.unique(labels)) <= {0.0, 1.0}
        # The consistent sizes track the true size (150 records) far better than the leaf noise alone would.
        assert abs(values.shape[0] - 150) < 60
    X, _ = agents["a3"].training_set()
    assert X.shape[0] == 150 + sum(n_syn.values())
    theta = agents["a3"].fit(erm.LogisticLoss())
    assert theta.shape == (erm.add_intercept(np.zeros((1, data.d))).shape[1],) and np.all(np.isfinite(theta))


def test_variants_pfds_minus_and_own_labelling() -> None:
    _, _, agents, ledgers = _agents(PFDSParams(h_max=4, t=5, p=3, max_leaves=32, optimize=False))
    run_protocol(agents, rng=RandomSource.seeded(3))
    assert _total(ledgers["a0"]) == pytest.approx(0.5)  # PFDS- spends only the tree's eps/2
    _, _, agents, ledgers = _agents(PFDSParams(h_max=4, t=5, p=3, max_leaves=32, labelling="own"))
    run = run_protocol(agents, rng=RandomSource.seeded(4))
    assert run.messages == 3 * 3  # PFDS(s): no trees exchanged
    a0 = agents["a0"]
    assert a0.tree is not None and a0.synthetic is not None
    np.testing.assert_array_equal(a0.synthetic[1], a0.tree.predict(a0.synthetic[0]))


def test_regression_labels_fall_in_the_voted_bucket() -> None:
    _, schema, agents, _ = _agents(PARAMS, task="regression")
    run_protocol(agents, rng=RandomSource.seeded(5))
    values, labels = agents["a0"].synthetic  # type: ignore[misc]
    assert np.all((labels >= -1) & (labels <= 1))
    trees = [agents[n].tree for n in ("a0", "a1", "a2")]
    votes = np.stack([t.predict(values) for t in trees])  # type: ignore[union-attr]
    codes = schema.domain.label_classes(labels)
    # The label's bucket got at least as many votes as any other bucket.
    for i in range(labels.size):
        counts = np.bincount(votes[:, i], minlength=10)
        assert counts[codes[i]] == counts.max()


def test_majority_vote_breaks_ties_uniformly() -> None:
    rng = RandomSource.seeded(6)
    preds = np.array([[0] * 4000, [1] * 4000])
    out = majority_vote(preds, 2, rng)
    # A fair coin over 4000 ties: 5 sigma bound (false-failure rate < 1e-6).
    assert abs(out.mean() - 0.5) < 5 * 0.5 / np.sqrt(4000)
    assert np.array_equal(majority_vote(np.array([[1, 0], [1, 0], [0, 0]]), 2, rng), [1, 0])


def test_split_selection_frequencies_follow_the_exponential_mechanism() -> None:
    """On a fixed toy dataset, split picks occur with probability exp(eps u / 2) / Z (chi-square, alpha 1e-4)."""
    x = np.array([1.0, 2.0, 2.5, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0])
    y = np.array([0, 0, 0, 0, 1, 1, 1, 0, 1])
    candidates = np.array([1.5, 3.5, 5.0, 7.5, 8.5])
    utility = max_operator(x, y, candidates, 2)
    eps = 1.0
    expected = np.exp(eps * utility / 2)
    expected /= expected.sum()
    rng = RandomSource.seeded(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        picks = [tree_noise.exponential_choice(utility, epsilon=eps, sensitivity=1.0, rng=rng) for _ in range(3000)]
    counts = np.bincount(picks, minlength=candidates.size)
    assert chisquare(counts, 3000 * expected).pvalue > 1e-4
    assert counts.argmax() == utility.argmax()


def test_tampered_data_messages_are_rejected() -> None:
    _, _, agents, _ = _agents(PARAMS)
    agent = agents["a3"]
    good = {"values": np.zeros((2, 5)), "labels": np.zeros(2)}
    agent._check_data("a0", good)
    for bad in ({"values": np.zeros((2, 5))}, {"values": np.zeros((2, 4)), "labels": np.zeros(2)},
                {"values": np.full((2, 5), 1e9), "labels": np.zeros(2)},
                {"values": np.zeros((2, 5)), "labels": np.array([0.0, 3.0])},
                {"values": np.zeros((2, 5), dtype=np.int64), "labels": np.zeros(2)}):
        with pytest.raises(MalformedMessageError):
            agent._check_data("a0", bad)


def test_bad_input() -> None:
    data, schema, _, _ = _agents(PARAMS)
    with pytest.raises(ParameterError, match="p:"):
        PFDSParams(h_max=4, p=5)
    with pytest.raises(ParameterError, match="h_max"):
        PFDSAgent("a", data.values, data.y, schema, PFDSParams(h_max=8, p=4), 1.0, ["a"], ledger=RecordingLedger())
    with pytest.raises(ShapeMismatchError, match="records of agent a"):
        PFDSAgent("a", data.values[:0], data.y[:0], schema, PARAMS, 1.0, ["a"], ledger=RecordingLedger())
    for eps in (0.0, -1.0):
        with pytest.raises(ParameterError, match="epsilon"):
            PFDSAgent("a", data.values, data.y, schema, PARAMS, eps, ["a"], ledger=RecordingLedger())
    with pytest.raises(ParameterError, match="attributes"):
        Schema((), "classification")
