"""Suite ``pfds``: paper 004's per-agent work (target: one agent's tree + synthesis on Adult-sized data <= 2 s).

Rows: the whole local pipeline of one sharer on all 45,222 Adult records (makeTree, noisy level counts, the
consistency solve, integer sizes, synthesis); the consistency solve alone against scipy's BVLS on the same
tree (the exact reference solver); and a 10-agent PFDS protocol run over the in-memory transport.
"""

from __future__ import annotations

import warnings

import numpy as np

from bench.harness import BenchResult, time_call
from mpdp.datasets import load_adult
from mpdp.dp.accounting import PrivacyLedger
from mpdp.errors import PrivacyLeakWarning
from mpdp.learning.pfds.consistency import (
    _TreeLeastSquares,
    consistent_counts,
    integer_sizes,
    noisy_level_counts,
    synthesize,
)
from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, Schema
from mpdp.learning.pfds.tree import make_tree
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def run(quick: bool = False) -> list[BenchResult]:
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    data = load_adult()
    schema = Schema(data.attributes, "classification")
    params = PFDSParams()
    assert data.values is not None
    values, labels = data.values, data.y
    rng = RandomSource.fresh()

    def pipeline() -> int:
        ledger = PrivacyLedger(epsilon=1.0, subject="party:bench")
        tree = make_tree(values, labels, schema.domain, params.tree, epsilon_level=1.0 / 16, rng=rng, ledger=ledger)
        levels = noisy_level_counts(tree, values, params.p, epsilon=0.5, rng=rng, ledger=ledger)
        assert tree.leaf_counts is not None
        sizes = integer_sizes(consistent_counts(tree, levels, tree.leaf_counts.sum(axis=1)).leaves)
        synthetic, _ = synthesize(tree, sizes, rng=rng)
        return int(synthetic.shape[0])

    results = []
    seconds, n_syn = time_call(pipeline, repeat=1 if quick else 3)
    results.append(BenchResult(f"one agent: tree + synthesis, {data.n} records (h_max=8, t=10, p=4)", data.n,
                               seconds, note=f"target <= 2 s; {n_syn} synthetic records"))

    tree = make_tree(values, labels, schema.domain, params.tree, epsilon_level=1.0 / 16, rng=rng)
    levels = noisy_level_counts(tree, values, params.p, epsilon=0.5, rng=rng)
    assert tree.leaf_counts is not None
    totals = tree.leaf_counts.sum(axis=1)
    seconds, ours = time_call(lambda: consistent_counts(tree, levels, totals), repeat=5)
    groups = [tree.leaf_ancestor(h) - tree.level_nodes(h)[0] for h in range(1, params.p)]
    problem = _TreeLeastSquares(groups, [1.0 / c.size for c in levels], levels, totals, 1.0 / tree.n_leaves)
    base, ref = time_call(problem._bvls, repeat=1)
    results.append(BenchResult(f"consistency solve, {tree.n_leaves} leaves", tree.n_leaves, seconds,
                               "scipy BVLS (dense)", base,
                               max_abs_error=float(np.abs(ours.leaves - ref).max())))

    m = 10
    parts = np.array_split(np.arange(min(data.n, 4000 if quick else 45_000)), m)
    names = [f"a{k}" for k in range(m)]

    def protocol() -> int:
        agents = {n: PFDSAgent(n, values[idx], labels[idx], schema, params, 1.0, names,
                               ledger=PrivacyLedger(epsilon=1.0, subject=f"party:{n}"))
                  for n, idx in zip(names, parts, strict=True)}
        return run_protocol(agents).bytes

    seconds, sent = time_call(protocol, repeat=1)
    results.append(BenchResult(f"PFDS protocol, {m} agents, {sum(p.size for p in parts)} records", m, seconds,
                               bytes=sent, note="per_s = agents per second"))
    return results
