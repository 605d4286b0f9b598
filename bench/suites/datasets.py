"""Suite ``datasets``: loading, encoding, generating and partitioning data.

Baselines (same process, same data): bare tokenising of the Adult text (``str.split``, no conversion or
validation) for the parser; a bare numpy one-hot (``np.eye`` indexing) for the encoder; the raw uniform draws
from the random source for the synthetic generator (its floor); a bare permutation for the partitioners.
Adult items are skipped with a note when the files are not reachable.
"""

from __future__ import annotations

import numpy as np

from bench.harness import BenchResult, time_call
from mpdp.datasets import adult as adult_module
from mpdp.datasets import horizontal_by_anchors, horizontal_equal, load_adult, sparse_linear_regression
from mpdp.datasets.encoding import encode
from mpdp.errors import DatasetUnavailableError
from mpdp.randomness import RandomSource


def _adult_results(quick: bool) -> list[BenchResult]:
    try:
        files = adult_module.fetch_adult()
    except DatasetUnavailableError as exc:
        return [BenchResult("adult", 0, 0.0, note=f"skipped: {exc}")]
    text = files["adult.data"].read_text()
    lines = text.splitlines()
    seconds, (values, _, _) = time_call(lambda: adult_module._parse(text, source="adult.data"))
    base, _ = time_call(lambda: [line.split(",") for line in lines])
    results = [BenchResult("parse adult.data (complete rows)", values.shape[0], seconds, "str.split tokens", base)]

    data = load_adult()
    attrs, vals = data.attributes, data.values
    assert vals is not None
    seconds, _ = time_call(lambda: encode(attrs, vals))
    cats = [j for j, a in enumerate(attrs) if a.kind == "categorical"]

    def bare_one_hot() -> np.ndarray:
        return np.hstack([np.eye(len(attrs[j].categories or ()))[vals[:, j].astype(int)] for j in cats])

    base, _ = time_call(bare_one_hot)
    results.append(BenchResult("encode adult (scale + one-hot + checks)", data.n, seconds, "bare np.eye one-hot",
                               base))
    rng = RandomSource.seeded("bench")
    agents = 100
    seconds, _ = time_call(lambda: horizontal_by_anchors(data, "age", agents, rng=rng), repeat=1 if quick else 3)
    base, _ = time_call(lambda: rng.permutation(data.n))
    results.append(BenchResult(f"anchor partition, {agents} agents", data.n, seconds, "permutation", base))
    seconds, _ = time_call(lambda: horizontal_equal(data, data.n, rng=rng))
    results.append(BenchResult("one record per party (45,222 parties)", data.n, seconds, "permutation", base))
    return results


def run(quick: bool = False) -> list[BenchResult]:
    results = _adult_results(quick)
    n, d = (8_000, 800) if quick else (80_000, 800)
    rng = RandomSource.seeded("bench-synthetic")
    seconds, _ = time_call(lambda: sparse_linear_regression(n, d, 0.1, rng=rng), repeat=1)
    base, _ = time_call(lambda: [rng.random((4096, d)) for _ in range(0, n, 4096)], repeat=1)
    results.append(BenchResult(f"synthetic-linear n={n} d={d} s=0.1", n * d, seconds, "raw uniform draws", base,
                               bytes=n * d * 8))
    return results
