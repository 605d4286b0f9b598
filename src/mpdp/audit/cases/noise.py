"""The discrete Laplace and discrete Gaussian mechanisms on a count, through their ``release`` methods.

The dataset is a column of 0/1 records, the query their count (sensitivity from
:func:`~mpdp.dp.sensitivities.general.count_sensitivity`), and the neighbours add one record with value 1.
One ``release`` call on ``n`` copies of the count draws ``n`` independent noises: the batch sampler is the
mechanism's own vector release. The broken variants halve the noise scale (Laplace: the mechanism built at
``2 eps``; Gaussian: ``sigma / 2``) while the claim stays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.audit.case import AuditCase
from mpdp.audit.neighbours import check_add_remove, check_query_distance
from mpdp.dp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from mpdp.dp.sensitivities.general import count_sensitivity
from mpdp.randomness import RandomSource

__all__ = ["discrete_gaussian_case", "discrete_laplace_case"]

D0 = np.array([[1], [0], [1], [1], [0], [1]])
D1 = D0[:-1]


def _count(data: Any) -> int:
    return int(np.asarray(data).sum())


def _neighbours() -> tuple[Any, Any, int]:
    sensitivity = count_sensitivity("add_remove")
    check_add_remove(D0, D1)
    check_query_distance(_count(D0), _count(D1), sensitivity)
    return D0, D1, sensitivity


def discrete_laplace_case(broken: bool = False, *, epsilon: float = 1.0) -> AuditCase:
    """Power: at 10^5 samples per side the bound is ~0.97 for the real mechanism, ~1.9 when broken."""
    d0, d1, sensitivity = _neighbours()
    mech = DiscreteLaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
    used = DiscreteLaplaceMechanism(epsilon=2 * epsilon, sensitivity=sensitivity) if broken else mech

    def sampler(data: Any, n: int, rng: RandomSource) -> Any:
        return used.release(np.full(n, _count(data)), rng=rng)

    return AuditCase("discrete-laplace" + ("-broken" if broken else ""), sampler, d0, d1, mech.epsilon, 0.0,
                     100_000, score=lambda x: x[:, 0], description="DiscreteLaplaceMechanism on a count")


def discrete_gaussian_case(broken: bool = False, *, epsilon: float = 2.0, delta: float = 1e-3) -> AuditCase:
    """Power: the zCDP-converted claim is loose and Gaussian tails are thin, so the bound for the real
    mechanism stays well below the claim; halving sigma is flagged at 2 10^5 samples per side."""
    d0, d1, sensitivity = _neighbours()
    mech = DiscreteGaussianMechanism.calibrated(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    used = DiscreteGaussianMechanism(sensitivity=mech.sensitivity, sigma=mech.sigma / 2, delta=mech.delta) \
        if broken else mech

    def sampler(data: Any, n: int, rng: RandomSource) -> Any:
        return used.release(np.full(n, _count(data)), rng=rng)

    return AuditCase("discrete-gaussian" + ("-broken" if broken else ""), sampler, d0, d1, mech.epsilon,
                     mech.delta, 200_000, score=lambda x: x[:, 0],
                     description="DiscreteGaussianMechanism on a count")
