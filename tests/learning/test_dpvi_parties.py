"""A data party's local work per step: its own copy of the public agreement and what it contributes."""

from __future__ import annotations

import numpy as np

from mpdp.crypto.renormalization import renormalize
from mpdp.datasets.synthetic import standard_normal
from mpdp.learning.dpvi_parties import DataParty, VerticalSetup
from mpdp.learning.dpvi_training import DPVISettings
from mpdp.learning.mixture_model import BetaFeature, CategoricalFeature, MixtureModel
from mpdp.randomness import RandomSource

FEATURES = (BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z")), BetaFeature("b", (-1.0, 1.0)),
            CategoricalFeature("d", ("u", "v")))


def test_local_input_is_the_blocks_computation_on_its_minibatch() -> None:
    model = MixtureModel(FEATURES, components=3)
    rng = RandomSource.seeded(1)
    n = 20
    values = np.column_stack([10 * rng.random(n), rng.integers(0, 3, n), 2 * rng.random(n) - 1, rng.integers(0, 2, n)])
    setup = VerticalSetup(model, ("alice", "bob"), (("a", "c"), ("b", "d")), n,
                          DPVISettings(epochs=1, batch_size=4, clip=1.0, noise_multiplier=0.0))
    party = DataParty("bob", setup, values[:, 2:])
    # the party's own copy of the agreement: equal, with its own model (and so its own theta-derived tables)
    assert party.setup == setup and party.setup.model is not setup.model
    batch = np.array([3, 7, 7, 19])
    for scale in (0.5, 2.0):  # a new theta each step: nothing stale from the last
        theta = scale * standard_normal(model.dim, rng=rng.spawn(f"theta{scale}"))
        public = party.setup.step_plan(theta, batch.size)
        reference = setup.step_plan(theta, batch.size)
        assert public.clip == reference.clip and public.sq_norm_bounds == reference.sq_norm_bounds
        mine = party.local_input(theta, batch, public)
        block = setup.blocks()[1]
        rows = block.encode(values[batch][:, 2:])
        np.testing.assert_array_equal(mine.factors,
                                      renormalize(block.log_densities(theta, rows), party.renorm)[0])
        np.testing.assert_array_equal(mine.sq_norms, block.sq_norms(theta, rows) / public.clip**2)
        np.testing.assert_array_equal(mine.stats, block.stats(rows))
