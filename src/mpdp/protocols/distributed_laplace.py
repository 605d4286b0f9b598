"""Distributed discrete Laplace for pure-DP releases: each share holder adds a Pólya difference to its share.

Deliverable 3(c) of the protocols issue, the integer analogue of ``Lap(b) = sum_i (G_i - G'_i)`` with
``G ~ Gamma(1/P, b)``. Every one of the ``P`` holders of an additive (ring) sharing adds, locally, to its own
share ``X_i - Y_i`` grid units with ``X_i, Y_i ~ NB(1/(P - c), exp(-1/b_units))`` (exact Pólya draws,
:func:`mpdp.dp.polya.laplace_share`), where ``b_units = b 2^f`` is the Laplace scale on the fixed-point grid
and ``c`` is the number of holders the release must stay private against (``collusion``).

* ``collusion = 0``: the revealed sum carries ``NB(1) - NB(1)``, *exactly* the discrete Laplace
  ``DLap(b_units)``, and the release is ``epsilon = Delta_units / b_units`` pure DP towards anyone who knows
  none of the shares (e.g. the party the result is revealed to, when it holds no share).
* ``collusion = c >= 1``: any ``P - c`` honest holders' shares alone sum to ``NB((P - c)/(P - c)) - NB(1)``,
  an exact discrete Laplace, so towards any coalition of up to ``c`` holders (in particular a holder, who knows
  its own share: ``c = 1``) the release is the same ``epsilon = Delta_units / b_units``: DLap plus noise
  independent of the data, which is post-processing. The revealed sum then carries ``P / (P - c)`` times the
  variance of one discrete Laplace (Goryczka, Xiong, Sunderam 2013 scale the shares the same way).

Accounting (:func:`distributed_laplace_epsilon`)
------------------------------------------------
An observer who knows ``k`` shares faces the other ``P - k``, whose sum is ``X - Y`` with
``X, Y ~ NB(s)``, ``s = (P - k)/(P - c)``. For ``s >= 1`` this is DLap(b_units) plus independent noise:
``epsilon = Delta_units / b_units`` exactly. For ``s < 1`` (an observer knowing more shares than the design
tolerates) the noise is no longer a discrete Laplace; we use this bound, proved here because we found none
published: mapping each pair ``(x, y)`` to ``(x + delta, y)`` is injective and the Pólya pmf ``pi`` satisfies
``pi(x + delta) / pi(x) >= q^delta Γ(delta + s) / (Γ(s) Γ(delta + 1))`` (each factor ``(x + j + s)/(x + j + 1)``
grows with ``x``), so the pmf of ``X - Y`` changes by at most ``exp(delta / b_units + L_s(delta))`` under a shift
``delta``, ``L_s(delta) = ln(Γ(s) Γ(delta + 1) / Γ(delta + s)) <= ln Γ(s) + (1 - s) ln(delta + 1)`` (Gautschi).
Summed over coordinates with ``sum |delta_i| <= Delta_units`` (the right side is concave and increasing; it is
largest spread evenly over ``m = min(dim, Delta_units)`` coordinates):
``epsilon <= Delta_units / b_units + m (ln Γ(s) + (1 - s) ln(Delta_units / m + 1))``. It grows with the grid
resolution and is loose (it ignores the smoothing by ``Y``): choose ``collusion`` to cover the observers you
care about instead of relying on it.

Secure aggregation with it (:func:`laplace_aggregation_server`, :func:`laplace_aggregation_aggregator`): the
aggregators of an :class:`~mpdp.protocols.aggregation.AggregationSpec` with ``reveal=False`` each add their
Pólya share to their additive share of the aggregate and send the noisy share to the server, which sums them.
No MPC session and no dealer: one message per aggregator. The server is an aggregator and knows its own
share, hence ``collusion >= 1`` by default.

``Delta_units`` is the L1 sensitivity on the grid, inflated by rounding (:func:`mpdp.dp.grid.grid_l1_sensitivity`:
``floor(Delta 2^f) + dim``) for a query whose inputs were rounded to the grid before sharing.

Security
--------
Semi-honest share holders; up to ``collusion`` of them may pool their shares and noise. Each holder's noise comes
from its own ``rng``; an honest holder's noise is never sent anywhere.

Accuracy
--------
Exact: the noise is exactly the stated sum of Pólya differences in grid units; each holder's noise is below
``2^62`` units (checked), and the result must fit the format's capacity (checked, ``PrecisionError``).

References
----------
S. Goryczka, L. Xiong, V. Sunderam, EDBT/ICDT Workshops 2013; B. Balle, J. Bell, A. Gascón, K. Nissim, CCS 2020
(section 4, Pólya mechanism); W. Gautschi, "Some elementary inequalities relating to the gamma and incomplete
gamma function", J. Math. Phys. 38 (1959).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import RingArray
from mpdp.dp._exact import as_rational
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.grid import grid_l1_sensitivity
from mpdp.dp.polya import laplace_share
from mpdp.errors import MalformedMessageError, ParameterError, PrecisionError, explain
from mpdp.protocols.aggregation import (
    AggregateResult,
    AggregationSpec,
    AggregatorShare,
    aggregation_aggregator,
    aggregation_server,
)
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime.comm import Comm

__all__ = ["add_distributed_laplace", "distributed_laplace_cost", "distributed_laplace_epsilon",
           "laplace_aggregation_aggregator", "laplace_aggregation_server", "laplace_share_units",
           "polya_shift_epsilon"]


def _check_parties(parties: Any, collusion: Any) -> tuple[int, int]:
    if isinstance(parties, bool) or not isinstance(parties, int) or parties < 1:
        raise ParameterError(explain("parties", parties, "an int >= 1", "pass the number of share holders"))
    if isinstance(collusion, bool) or not isinstance(collusion, int) or not 0 <= collusion < parties:
        raise ParameterError(explain("collusion", collusion, f"an int in [0, parties) = [0, {parties})",
                                     "pass how many holders may pool their shares (1: each knows its own)"))
    return parties, collusion


def laplace_share_units(scale: Any, fmt: FixedPointFormat) -> Fraction:
    """The Laplace scale in grid units, ``scale 2^f`` (exact rational)."""
    return as_rational(scale, "scale") * Fraction(2) ** fmt.frac_bits


def add_distributed_laplace(share: RingArray, *, scale: Any, parties: int, fmt: FixedPointFormat,
                            collusion: int = 0, rng: RandomSource | None = None) -> RingArray:
    """This holder's ring share plus its part of a distributed discrete Laplace of ``scale`` (reals).

    Parameters
    ----------
    share : RingArray
        This holder's additive share, at scale ``2^f`` of ``fmt``.
    scale : float, Fraction or str
        Laplace scale ``b`` in real units; the noise is ``DLap(b 2^f)`` grid units (see the module docstring).
    parties : int
        Number of holders, each calling this with the same ``scale``, ``parties`` and ``collusion``.
    collusion : int
        How many holders may pool what they know (``1`` covers each holder knowing its own share); the
        release is ``Delta_units / b_units``-DP towards any such coalition, at ``parties / (parties -
        collusion)`` times the variance.
    rng : RandomSource, optional
        This holder's own source (default: fresh OS entropy).
    """
    p, c = _check_parties(parties, collusion)
    if not isinstance(fmt, FixedPointFormat):
        raise ParameterError(explain("fmt", fmt, "a FixedPointFormat", "pass the shares' format"))
    share = fmt.ring.check(share, "share")
    b_units = laplace_share_units(scale, fmt)
    # 60 scales is beyond any share a holder draws with probability > 2^-80.
    if 60 * b_units >= 2**fmt.raw_capacity_bits:
        raise PrecisionError(explain("scale", scale, f"Laplace noise that fits {fmt}",
                                     "use fewer fractional bits or a smaller scale"))
    ring = fmt.ring
    noise = np.asarray(laplace_share(b_units, p - c, ring.shape(share), rng=resolve(rng)), dtype=np.int64)
    return ring.add(share, ring.from_int(noise))


def distributed_laplace_epsilon(*, sensitivity: Any, scale: Any, parties: int, dim: int, frac_bits: int,
                                collusion: int = 0, known_shares: int = 0) -> float:
    """Pure-DP epsilon of a release carrying the shares of :func:`add_distributed_laplace`, per observer.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity of the (real-valued) query.
    scale : float
        The Laplace scale passed to :func:`add_distributed_laplace`.
    parties, collusion : int
        As passed to :func:`add_distributed_laplace`.
    dim : int
        Number of released coordinates (for the grid-rounding inflation of the sensitivity).
    frac_bits : int
        Fractional bits ``f`` of the shares' fixed-point format.
    known_shares : int
        How many shares the observer knows: 0 for an outsider, 1 for a holder towards itself, ``k`` for a
        coalition of ``k`` holders. At most ``collusion`` gives exactly ``Delta_units / b_units``; more gives
        the (loose) bound of the module docstring.
    """
    p, c = _check_parties(parties, collusion)
    if isinstance(known_shares, bool) or not isinstance(known_shares, int) or not 0 <= known_shares < p:
        raise ParameterError(explain("known_shares", known_shares, f"0 <= known_shares < parties = {p}",
                                     "an observer who knows every share knows the noise: no privacy"))
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ParameterError(explain("dim", dim, "an int >= 1", "pass the number of released coordinates"))
    delta = grid_l1_sensitivity(sensitivity, frac_bits, dim)
    b_units = as_rational(scale, "scale") * Fraction(2) ** frac_bits
    return polya_shift_epsilon(delta, b_units, Fraction(p - known_shares, p - c), dim)


def polya_shift_epsilon(delta_units: int, b_units: Any, s: Fraction, dim: int) -> float:
    """Pure-DP epsilon of ``dim`` coordinates of ``NB(s) - NB(s)`` noise (``q = exp(-1/b_units)``) against an
    integer shift of L1 norm ``delta_units``: exact for ``s >= 1``, the module docstring's bound for ``s < 1``."""
    b = as_rational(b_units, "b_units")
    ratio = Fraction(delta_units) / b
    base = float(ratio) if ratio < 1 << 1000 else math.inf  # an epsilon beyond any float: no privacy
    if s >= 1 or delta_units == 0:
        return math.nextafter(base, math.inf)
    m = min(dim, delta_units)
    sf = float(s)
    extra = m * (math.lgamma(sf) + (1 - sf) * math.log1p(delta_units / m))
    return math.nextafter((base + extra) * (1 + 1e-12), math.inf)


def distributed_laplace_cost(*, sensitivity: Any, scale: Any, parties: int, dim: int, frac_bits: int,
                             collusion: int = 0, known_shares: int = 0) -> PrivacyCost:
    """:class:`~mpdp.dp.accounting.cost.PrivacyCost` (pure DP) of :func:`distributed_laplace_epsilon`."""
    eps = distributed_laplace_epsilon(sensitivity=sensitivity, scale=scale, parties=parties, dim=dim,
                                      frac_bits=frac_bits, collusion=collusion, known_shares=known_shares)
    return PrivacyCost(epsilon=eps, rho=eps * eps / 2, mechanism="distributed_laplace")


# -- secure aggregation with distributed Laplace noise -------------------------------------------------------
def _check_spec(spec: AggregationSpec) -> None:
    if spec.reveal or spec.server not in spec.aggregators or spec.threshold is not None:
        raise ParameterError(explain("spec", "reveal=True, a Shamir threshold or a server that does not aggregate",
                                     "additive shares (reveal=False, threshold=None), the server an aggregator",
                                     "build AggregationSpec(..., reveal=False, aggregators=(server, ...))"))


def _noisy_share(spec: AggregationSpec, mine: AggregatorShare, scale: Any, collusion: int,
                 rng: RandomSource) -> RingArray:
    ring = spec.fmt.ring
    entries = ring.apply(mine.share, lambda a: a[: spec.dim])
    noisy = add_distributed_laplace(entries, scale=scale, parties=len(spec.aggregators), fmt=spec.fmt,
                                    collusion=collusion, rng=rng)
    if not spec.weighted:
        return noisy
    weight = ring.apply(mine.share, lambda a: a[spec.dim:])
    return ring.combine([noisy, weight], lambda xs: np.concatenate(xs))


def laplace_aggregation_aggregator(comm: Comm, spec: AggregationSpec, *, scale: Any, collusion: int = 1) -> None:
    """An aggregator's side (not the server): aggregate, add this aggregator's Pólya share, send to the server."""
    _check_spec(spec)
    _check_parties(len(spec.aggregators), collusion)
    mine = aggregation_aggregator(comm, spec)
    if not isinstance(mine, AggregatorShare):  # pragma: no cover - reveal=False always returns a share
        raise ParameterError("the aggregation returned no share")
    comm.send(spec.server, _noisy_share(spec, mine, scale, collusion, comm.rng), label="laplace.share")


def laplace_aggregation_server(comm: Comm, spec: AggregationSpec, *, scale: Any,
                               collusion: int = 1) -> AggregateResult:
    """The server's side: the aggregate plus a distributed discrete Laplace of ``scale`` (``total``).

    The release is priced by :func:`distributed_laplace_cost` with ``parties=len(spec.aggregators)``,
    ``frac_bits=spec.fmt.frac_bits``, the same ``collusion``, and ``known_shares=1`` towards the server.
    """
    _check_spec(spec)
    _check_parties(len(spec.aggregators), collusion)
    mine = aggregation_server(comm, spec)
    if not isinstance(mine, AggregatorShare):  # pragma: no cover - reveal=False
        raise ParameterError("the aggregation returned no share")
    ring = spec.fmt.ring
    total = _noisy_share(spec, mine, scale, collusion, comm.rng)
    for agg in spec.aggregators:
        if agg == spec.server:
            continue
        part = ring.check(comm.recv(agg, label="laplace.share"), f"noisy share from {agg}", received=True)
        if ring.shape(part) != (spec.width,):
            raise MalformedMessageError(explain(f"noisy share from {agg}", ring.shape(part), f"({spec.width},)",
                                                f"check {agg}"))
        total = ring.add(total, part)
    values = spec.fmt.decode(total)
    return mine.opened(spec, values)
