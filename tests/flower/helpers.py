"""Shared set-up of the Flower tests: a small synthetic logistic task and the in-process run of mpc-gradp."""

from __future__ import annotations

import numpy as np

from mpdp.datasets.splits import train_test_split
from mpdp.datasets.synthetic import logistic_with_optimum
from mpdp.learning.distributed_erm import HorizontalParties, Method
from mpdp.learning.distributed_erm.experiments import fit_method
from mpdp.learning.distributed_erm.mpc import MPCSetup
from mpdp.learning.distributed_erm.problem import Prepared, equal_parts, prepare
from mpdp.learning.distributed_erm.spec import ERMSettings
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

SEED = 7


def small_config(parties: int = 4, T: int = 2, n: int = 400, d: int = 5) -> RunConfig:
    data = logistic_with_optimum(n, d, rng=RandomSource.seeded(1)).data
    train, test = train_test_split(data, 0.25, rng=RandomSource.seeded(2))
    return RunConfig(train=train, test=test, parties=parties, epsilon=1.0, delta=1e-5,
                     rng=RandomSource.seeded(SEED).spawn("algorithm"), options={"T": T})


def prepared(config: RunConfig) -> Prepared:
    """The config's data as every party prepares it, at the spec's regulariser."""
    return prepare(config.train, config.test, lam=ERMSettings().lam)


def in_memory_iterates(config: RunConfig) -> np.ndarray:
    """mpdp's in-process MPC Grad P on the same split and randomness as ``mpdp run``: the model after each round."""
    T = int(config.options["T"])
    data = prepared(config)
    indices = equal_parts(config.train, config.parties, rng=config.rng.spawn("rows"))
    parties = HorizontalParties.from_rows(data.X, data.y, indices, task=data.problem.task)
    fit = fit_method(Method.MPC_GRADP, data, parties, epsilon=config.epsilon, delta=config.delta, T=T,
                     record=tuple(range(1, T + 1)), rng=config.rng.spawn(Method.MPC_GRADP),
                     setup=MPCSetup(aggregators=2))
    return np.asarray(fit.iterates)
