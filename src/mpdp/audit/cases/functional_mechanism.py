"""Paper 000: the functional mechanism's noisy coefficients, by the release code ``centralized_fm`` runs.

One data holder, linear regression, ``d = 1``: the plan (:class:`FMPlan`, whose sensitivity is
:func:`mpdp.dp.sensitivities.functional_mechanism.global_sensitivity`), the exact objective of the rounded data,
the per-coefficient grid units and :func:`add_noise` with the column-keyed noise streams, assembled into the
released monomials (const, lambda, quadratic). The solve that follows is post-processing and is skipped.

Neighbours (replace one record): the last record is ``(x, y) = (4, 1)`` or ``(4, -1)``, outside the feature domain
``[-1, 1]``; the release clips features (``check_features(..., clip=True)``), after which the records are ``(1,
+-1)``: their linear coefficients ``-2xy`` differ by 4 of the bound ``Delta = 8``. The broken variant skips the
clipping, so they differ by 16 (a true epsilon of ``2 eps`` on these neighbours). The event is a threshold on the
linear coefficient, the one that moves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.core import batched
from mpdp.audit.neighbours import check_replace
from mpdp.learning.functional_mechanism.noise import (
    FMPlan,
    PartyNoise,
    add_noise,
    assemble_release,
    local_units,
)
from mpdp.learning.functional_mechanism.objective import ColumnPartition, check_features, exact_objective
from mpdp.randomness import RandomSource

__all__ = ["fm_case"]

D0 = np.array([[0.5, 0.25], [-0.25, -0.5], [4.0, 1.0]])
D1 = np.array([[0.5, 0.25], [-0.25, -0.5], [4.0, -1.0]])


def fm_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: with 2 10^4 samples per side the bound is ~0.45 for the real release and ~1.8 when broken."""
    check_replace(D0, D1)
    plan = FMPlan("linear", ColumnPartition(((0,),), 0), party_l1=(1.0,), epsilon=epsilon, records=D0.shape[0])

    def run(data: Any, rng: RandomSource) -> Any:
        X, y = data[:, :1], data[:, 1]
        Xc = X if broken else check_features(X, 1.0, clip=True)
        exact = exact_objective("linear", plan.round_features(Xc), plan.round_features(y))
        noise = PartyNoise(plan, rng)
        released = {}
        for block in plan.groups:
            value: Any = exact.constant if block[0] == "const" else exact.linear if block[0] == "lin" else exact.quad
            released[block] = add_noise(plan, 0, block, local_units(plan, block, value), noise)
        return assemble_release(plan, released).monomials()

    return AuditCase("fm-coefficients" + ("-broken" if broken else ""), batched(run), D0, D1, plan.total_epsilon,
                     0.0, 20_000, score=lambda x: -x[:, 1],
                     description="functional mechanism, noisy monomial coefficients")
