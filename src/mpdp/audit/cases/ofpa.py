"""Paper 001: OFPA's objective-perturbation release, by :class:`DataOwner` (``draw_noise`` then ``local_fit``).

One owner, one attribute with the intercept folded in (:func:`prepare_rows`, ``row_bound = 1``,
``normalise=True``), calibrated by :func:`mpdp.dp.sensitivities.ofpa_ofaa.ofpa_plan` (which raises ``lam`` until
the Jacobian term costs at most ``eps / 2``). The release is the minimiser of the perturbed objective (the
objective itself is never published). Neighbours replace the last record ``(x, y) = (20, +1)`` by ``(20, -1)``;
the broken variant skips the projection onto the unit ball, so the perturbed gradient term moves up to ~10 times
its sensitivity. The event is a threshold on the attribute's weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.cases.owner import DIM, owner_rows
from mpdp.audit.core import batched
from mpdp.audit.neighbours import check_replace
from mpdp.dp.sensitivities.ofpa_ofaa import ofpa_plan, unit_ball_row_l1
from mpdp.learning.ofpa_ofaa.parties import DataOwner
from mpdp.randomness import RandomSource

__all__ = ["ofpa_case"]

D0 = np.array([[0.5, 1.0], [-0.25, -1.0], [20.0, 1.0]])
D1 = np.array([[0.5, 1.0], [-0.25, -1.0], [20.0, -1.0]])
ROW_BOUND = 1.0


def ofpa_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: with 2,000 samples per side the bound is ~0 for the real release and ~2 when broken (the real
    minimiser sits in the loss's flat tails, far inside its bound)."""
    check_replace(D0, D1)
    plan = ofpa_plan(epsilon, D0.shape[0], 1e-3, unit_ball_row_l1(DIM, ROW_BOUND))

    def run(data: Any, rng: RandomSource) -> Any:
        owner = DataOwner("owner", owner_rows(data, row_bound=ROW_BOUND, broken=broken), "ofpa", plan.lam,
                          plan.scale, rng)
        owner.draw_noise("audit")
        return owner.local_fit(np.zeros(DIM))

    return AuditCase("ofpa-minimiser" + ("-broken" if broken else ""), batched(run), D0, D1, epsilon, 0.0, 6_000,
                     score=lambda x: x[:, 0], description="OFPA, minimiser of the perturbed objective")
