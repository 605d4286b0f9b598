"""A data party's local work per step: its own copy of the public agreement and what it contributes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mpdp.crypto.renormalization import renormalize
from mpdp.crypto.ring import ring_for_bits
from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import MalformedMessageError
from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.parties import DataParty, NoiseParty, VerticalSetup
from mpdp.learning.dpvi.training import DPVISettings
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

FEATURES = (BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z")), BetaFeature("b", (-1.0, 1.0)),
            CategoricalFeature("d", ("u", "v")))


def _two_parties(seed: int, n: int, batch_size: int) -> tuple[MixtureModel, RandomSource, np.ndarray, VerticalSetup]:
    """A K = 3 model of FEATURES, ``n`` random records, alice holding (a, c) and bob (b, d)."""
    model = MixtureModel(FEATURES, components=3)
    rng = RandomSource.seeded(seed)
    values = np.column_stack([10 * rng.random(n), rng.integers(0, 3, n), 2 * rng.random(n) - 1, rng.integers(0, 2, n)])
    setup = VerticalSetup(model, ("alice", "bob"), (("a", "c"), ("b", "d")), n,
                          DPVISettings(epochs=1, batch_size=batch_size, clip=1.0, noise_multiplier=0.0))
    return model, rng, values, setup


def test_local_input_is_the_blocks_computation_on_its_minibatch() -> None:
    model, rng, values, setup = _two_parties(1, 20, 4)
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


def test_the_noise_party_shares_in_the_steps_ring_and_refuses_malformed_requests() -> None:
    """The leader names the step's release ring (public: the plan's); the noise party's shares are ring elements
    of that ring summing to the noise, and a request naming no ring is refused, not served in a default one."""
    model = MixtureModel(FEATURES, components=2)
    setup = VerticalSetup(model, ("alice", "bob"), (("a", "c"), ("b", "d")), 10,
                          DPVISettings(epochs=1, batch_size=2, clip=1.0, noise_multiplier=1.0), noise="trusted")

    def leader(request: dict[str, int]) -> Any:
        def run(comm: Any) -> Any:
            comm.send("noise", request, label="dpvi.noise.request")
            share = comm.recv("noise", label="dpvi.noise.share")
            comm.send("noise", {"dim": 0, "bits": 64}, label="dpvi.noise.request")
            return share
        return run

    def other(comm: Any) -> Any:
        return comm.recv("noise", label="dpvi.noise.share")

    for bits in (64, 128):
        run = run_protocol({"alice": leader({"dim": 5, "bits": bits}), "bob": other, "noise": NoiseParty(setup)},
                           rng=RandomSource.seeded(bits))
        ring = ring_for_bits(bits)
        total = ring.to_float(ring.add(run.results["alice"], run.results["bob"]))
        assert ring.shape(run.results["alice"]) == (5,) and run.results["noise"] == 1
        # the shares are uniform in the ring, their sum the noise: z C 2^30 = 2^30 grid units per coordinate
        assert np.all(np.abs(total) < 2.0**40) and np.any(total != 0)
    for bad in ({"dim": 5, "bits": 96}, {"dim": 5, "bits": 1}, {"dim": 5, "bits": 64.0},
                {"dim": 5, "bits": 128.0}, {"dim": True, "bits": 64}, {"dim": 5},
                {"dim": -1, "bits": 64}, [5, 64]):
        with pytest.raises(MalformedMessageError, match="noise request"):
            run_protocol({"alice": leader(bad), "bob": other, "noise": NoiseParty(setup)}, rng=RandomSource.seeded(3))


def test_secure_steps_with_drifting_plans_leave_only_the_next_plan_queued() -> None:
    """Steps as training runs them: minibatch sizes that vary (one plan per size), thetas whose scale moves the
    public bounds (plans recorded earlier go stale), the next step's plan requested ahead. After every step the
    dealer client holds at most the correlations of the next step's plan, never the leftovers of stale ones
    (which once piled up over a training and made its steps 5x slower); the parties' queues stay equal."""
    from mpdp.protocols.mpc import TrustedDealer

    model, rng, values, setup = _two_parties(11, 30, 5)
    sizes = [5, 6, 5, 6, 5, 7, 5, 6, 5]
    scales = [0.1, 0.1, 3.0, 3.0, 0.1, 3.0, 3.0, 0.1, 0.1]  # bounds (hence plans) move with theta's scale
    thetas = [s * standard_normal(model.dim, rng=rng.spawn(f"theta{i}")) for i, s in enumerate(scales)]

    def role(name: str, columns: slice) -> Any:
        party = DataParty(name, setup, values[:, columns])

        def run(comm: Any) -> list[tuple[int, int]]:
            session, provider = party.open_session(comm)
            queued = []
            with session:
                for i, (size, theta) in enumerate(zip(sizes, thetas, strict=True)):
                    upcoming = sizes[i + 1] if i + 1 < len(sizes) else None
                    party.secure_step(session, provider, theta, np.arange(size, dtype=np.int64),
                                      next_batch_size=upcoming)
                    plan = provider.plans.get(("dpvi.step", upcoming), []) if upcoming is not None else []
                    queued.append((len(provider.inner._ready), len(plan)))  # type: ignore[attr-defined]
            return queued
        return run

    run = run_protocol({"alice": role("alice", slice(0, 2)), "bob": role("bob", slice(2, 4)),
                        "dealer": TrustedDealer(parties=("alice", "bob"))}, rng=RandomSource.seeded(12))
    queued = run.results["alice"]
    assert queued == run.results["bob"]
    assert all(held <= plan for held, plan in queued)
    assert queued[-1][0] == 0
    assert any(held > 0 for held, _ in queued)  # the ahead requests did queue the next plans
