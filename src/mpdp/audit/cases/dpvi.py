"""Paper 002: one DPVI step's noisy gradient sum, with the noise made by the parties.

The clipped sum is :class:`~mpdp.learning.dpvi.training.FloatStep` without noise (per-example gradients of a
one-component Beta mixture, each clipped to L2 norm ``C``, summed: the float-level step). It is then put on the
shares' grid ``2^-f`` and each of ``P = 3`` parties adds its own ``N_Z(0, (z C 2^f)^2 / P)`` to its additive share
with :func:`mpdp.protocols.noise.add_distributed_gaussian`, as the vertical step's parties do; the shares are
summed and decoded. ``z`` is calibrated by :func:`mpdp.learning.dpvi.privacy.calibrate_noise_multiplier` for one
full-batch release towards the analyst (``noise_contributors = P``, the distributed discrete Gaussian
accountant), and that epsilon is the claim. ``n`` runs are ``n`` stacked copies of the sum (independent noise
per coordinate).

Neighbours (add/remove, :func:`mpdp.dp.sensitivities.dpvi.clipped_sum_sensitivity`): the extra record ``0.0``
has a gradient of norm ~6, clipped to ``C = 1``. The broken variant skips the clipping.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.neighbours import check_add_remove
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.sensitivities.dpvi import clipped_sum_sensitivity
from mpdp.learning.dpvi.features import BetaFeature
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.privacy import analyst_epsilon, calibrate_noise_multiplier
from mpdp.learning.dpvi.training import BatchPlan, FloatStep
from mpdp.protocols.noise import add_distributed_gaussian
from mpdp.randomness import RandomSource

__all__ = ["dpvi_step_case"]

D1 = np.array([[0.4], [0.5], [0.6]])
D0 = np.vstack([D1, [[0.0]]])
CLIP, PARTIES = 1.0, 3
FMT = FixedPointFormat(ring_bits=64, frac_bits=16)


def dpvi_step_case(broken: bool = False, *, epsilon: float = 2.0, delta: float = 1e-3) -> AuditCase:
    """Power: with 10^5 samples per side the real step's bound stays below the claim (the accountant's
    conversion is loose); skipping the clipping is flagged by a wide margin."""
    check_add_remove(D0, D1)
    model = MixtureModel((BetaFeature("a", (0.0, 1.0)),), components=1)
    sensitivity = clipped_sum_sensitivity(CLIP)
    plan = BatchPlan(n=D1.shape[0], batch_size=D1.shape[0], epochs=1, batching="disjoint")
    common: dict[str, Any] = {"delta": delta, "plan": plan, "dim": model.dim, "clip": sensitivity,
                              "grid_bits": FMT.frac_bits, "noise_contributors": PARTIES, "snapped": True}
    z = calibrate_noise_multiplier(epsilon=epsilon, **common)
    claim = analyst_epsilon(noise_multiplier=z, **common)
    theta = np.zeros(model.dim)

    def sampler(data: Any, n: int, rng: RandomSource) -> Any:
        step = FloatStep(model, data, clip=None if broken else CLIP, noise_multiplier=0.0, rng=rng)
        total = step(theta, np.arange(data.shape[0]))
        ring = FMT.ring
        shares = [FMT.encode(np.tile(total, n))] + [ring.zeros((n * model.dim,)) for _ in range(PARTIES - 1)]
        noisy = [add_distributed_gaussian(s, sigma=z * CLIP, parties=PARTIES, fmt=FMT, rng=rng.spawn(f"party{j}"))
                 for j, s in enumerate(shares)]
        opened = noisy[0]
        for s in noisy[1:]:
            opened = ring.add(opened, s)
        return FMT.decode(opened).reshape(n, model.dim)

    return AuditCase("dpvi-step" + ("-broken" if broken else ""), sampler, D0, D1, claim, delta, 100_000,
                     description="DPVI step: clipped gradient sum, distributed discrete Gaussian")
