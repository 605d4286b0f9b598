"""Test-only algorithms and a reproduction, registered by monkeypatching ``registry.MODULES`` (the specs) and
``registry.REPRODUCTION_MODULES`` (the reproduction).

They are deliberately simple but use their inputs for real: the vertical toy checks that its partition covers
the training columns and runs a 2-round secure sum between the parties (so communication counts are real);
the horizontal toy fits least squares per party and averages. Neither is differentially private: they only
exercise the CLI plumbing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mpdp.learning.registry import Reproduction, ReproOptions, ReproRow, ReproTable
from mpdp.learning.spec import AlgorithmSpec, Ref, Settings, option
from mpdp.learning.spec.run import Curve, Metric, RunConfig, RunReport
from mpdp.progress import progress_bar
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.runtime import run_protocol

SEEN: list[RunConfig] = []


def _least_squares(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    return np.linalg.solve(A.T @ A + 1e-3 * np.eye(A.shape[1]), A.T @ y)


def _predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) @ w


def run_vertical(config: RunConfig) -> RunReport:
    SEEN.append(config)
    start = time.perf_counter()
    assert config.partition is not None and len(config.partition) == config.parties
    blocks = [config.train.columns_of(group) for group in config.partition]
    assert sorted(sum(blocks, ())) == list(range(config.train.d))
    names = [f"party{k}" for k in range(config.parties)]
    counts = {name: np.array([len(block)], dtype=np.int64) for name, block in zip(names, blocks, strict=True)}
    run = run_protocol({name: secure_sum_role(counts[name]) for name in names}, rng=config.rng.spawn("sum"))
    assert int(run.results[names[0]][0]) == config.train.d
    w = _least_squares(config.train.X, config.train.y)
    accuracy = float(np.mean((_predict(w, config.test.X) > 0.5) == config.test.y))
    curve = [0.5]
    for _ in progress_bar(range(3), desc="toy", enabled=config.progress):
        curve.append(0.5 * (curve[-1] + accuracy))
    return RunReport(
        algorithm="toy-vertical", dataset=config.train.name, parties=config.parties, epsilon=config.epsilon,
        delta=config.delta, epsilon_spent=config.epsilon, delta_spent=0.0,
        per_party_epsilon={name: config.epsilon for name in names}, metric=Metric("accuracy", accuracy),
        non_private=Metric("accuracy", accuracy), seconds=time.perf_counter() - start,
        communication=run.communication(),
        curves=[Curve("test accuracy", tuple(float(i) for i in range(4)), tuple(curve), "step", "accuracy")],
    )


def run_horizontal(config: RunConfig) -> RunReport:
    SEEN.append(config)
    steps = int(config.options.get("steps", 1))
    parts = config.party_data()
    assert len(parts) == config.parties and sum(p.n for p in parts) == config.train.n
    w = np.mean([_least_squares(p.X, p.y) for p in parts], axis=0)
    mse = float(np.mean((_predict(w, config.test.X) - config.test.y) ** 2)) * steps
    return RunReport(
        algorithm="toy-horizontal", dataset=config.train.name, parties=config.parties, epsilon=config.epsilon,
        delta=config.delta, epsilon_spent=config.epsilon, delta_spent=config.delta, per_party_epsilon=None,
        metric=Metric("mse", mse), non_private=None, seconds=0.0,
        communication={"bytes": 0, "messages": 0, "rounds": 0},
    )


def run_table(options: ReproOptions) -> ReproTable:
    reps = options.repetitions or (2 if options.quick else 10)
    rows = []
    for eps, paper in ((0.1, 0.64), (1.0, 0.73), (10.0, 0.81)):
        draws = options.rng.spawn(f"eps={eps}").random(reps)
        ours = paper + 0.01 * (draws - 0.5)
        rows.append(ReproRow({"epsilon": eps, "K": 2}, "accuracy", paper, float(ours.mean()), float(ours.std()), reps))
    return ReproTable("toy-table1", "Toy accuracy against epsilon", rows, notes=["toy data, for tests"])


@dataclass(frozen=True)
class NoSettings(Settings):
    pass


@dataclass(frozen=True)
class StepSettings(Settings):
    steps: int = option(1, "a multiplier, to check that options arrive typed", low=1)


SPECS = (
    AlgorithmSpec("toy-vertical", "test-only vertical classifier", "toy", "vertical", "classification", NoSettings,
                  Ref("tests.cli.toy_algorithms:run_vertical"), backends=("shares", "paillier")),
    AlgorithmSpec("toy-horizontal", "test-only horizontal regressor", "toy", "horizontal", "regression",
                  StepSettings, Ref("tests.cli.toy_algorithms:run_horizontal")),
)
REPRODUCTIONS = (Reproduction("toy-table1", "Toy accuracy against epsilon", run_table),)
