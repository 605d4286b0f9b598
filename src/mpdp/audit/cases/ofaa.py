"""Paper 001: OFAA's released objective coefficients, by :meth:`DataOwner.ofaa_coefficients`.

One owner, one attribute with the intercept folded in (:func:`prepare_rows` with ``row_bound = 1``,
``normalise=True``: rows outside the unit ball are projected onto it), the budget split of
:func:`mpdp.dp.sensitivities.ofpa_ofaa.ofaa_budget` with the degree sensitivities of
:func:`~mpdp.dp.sensitivities.ofpa_ofaa.ofaa_degree_sensitivities`. Neighbours replace the last record ``(x, y) =
(6, +1)`` by ``(6, -1)``: after the projection the degree-1 coefficients differ by their full sensitivity (the
degree-2 ones not at all), a loss of ``eps_linear ~ 0.71 eps``. The broken variant skips the projection (the
augmented row is ``[x, 1] h`` unprojected): the difference grows 3.5 times, ``~2.5 eps``. The event is a threshold
on the attribute's degree-1 coefficient (the one that moves most; a single Laplace coordinate reaches its full
ratio at moderate tails).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.cases.owner import DIM, FIXED, owner_rows
from mpdp.audit.core import batched
from mpdp.audit.neighbours import check_replace
from mpdp.dp.sensitivities.ofpa_ofaa import intercept_weight, ofaa_budget, unit_ball_row_l1
from mpdp.learning.ofpa_ofaa.parties import DataOwner
from mpdp.randomness import RandomSource

__all__ = ["ofaa_case"]

D0 = np.array([[0.5, 1.0], [-0.25, -1.0], [6.0, 1.0]])
D1 = np.array([[0.5, 1.0], [-0.25, -1.0], [6.0, -1.0]])
ROW_BOUND = 1.0


def ofaa_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: with 2 10^4 samples per side the bound is ~0.3 for the real release and ~1.9 when broken."""
    check_replace(D0, D1)
    budget = ofaa_budget(epsilon, unit_ball_row_l1(DIM, ROW_BOUND), intercept_weight(ROW_BOUND), DIM,
                         int(np.count_nonzero(~FIXED)))

    def run(data: Any, rng: RandomSource) -> Any:
        owner = DataOwner("owner", owner_rows(data, row_bound=ROW_BOUND, broken=broken), "ofaa", 1e-3,
                          budget.scale_quadratic, rng, budget)
        lin, coef = owner.ofaa_coefficients(rng)
        return np.concatenate([lin, coef[~FIXED]])

    return AuditCase("ofaa-coefficients" + ("-broken" if broken else ""), batched(run), D0, D1, epsilon, 0.0,
                     20_000, score=lambda x: x[:, 0], description="OFAA, noisy Taylor coefficients of one owner")
