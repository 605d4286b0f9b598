"""Secure aggregation whose single opening carries noise generated inside the MPC (paper 003's MPC Out P/Grad P).

The clients run :func:`~mpdp.protocols.aggregation.aggregation_client` as usual. The aggregators (the server
among them) keep additive shares of the aggregate (``spec.reveal`` must be False), start an MPC session with a
dealer, draw Laplace or Gaussian noise jointly (:mod:`mpdp.protocols.noise`), add it to the shared aggregate and
open ``aggregate + noise`` to the server only. Nobody ever sees the aggregate without noise, and no coalition
short of all aggregators knows the noise.

Roles: the server calls :func:`noisy_aggregation_server`, every other aggregator
:func:`noisy_aggregation_aggregator`, the dealer ``TrustedDealer(dealer, parties=spec.aggregators).run(comm)``
(:class:`~mpdp.protocols.mpc.TrustedDealer`) once per round.

Security
--------
As :mod:`mpdp.protocols.aggregation` and :mod:`mpdp.protocols.noise` (b): semi-honest; the dealer deals
correlated randomness only and must not collude with the aggregators. The DP guarantee is that of the
mechanism with the full noise towards the server, every client and every coalition of fewer than all
aggregators. Noise is added to the ``dim`` aggregate entries; a weighted aggregation's total weight (usually
public record counts) is opened without noise.

Accuracy
--------
The opened value is the fixed-point aggregate (error ``spec.error_bound``) plus the sampled noise on the grid
2^-f; see :mod:`mpdp.protocols.noise` for how close the noise is to its target distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from mpdp.errors import ParameterError, explain
from mpdp.protocols.aggregation import (
    AggregateResult,
    AggregationSpec,
    AggregatorShare,
    aggregation_aggregator,
    aggregation_server,
)
from mpdp.protocols.noise import mpc_discrete_gaussian, mpc_discrete_laplace
from mpdp.runtime.comm import Comm

__all__ = ["MpcNoise", "noisy_aggregation_aggregator", "noisy_aggregation_server"]


@dataclass(frozen=True)
class MpcNoise:
    """Noise to generate inside the MPC: ``kind`` ``"laplace"`` (``scale`` b) or ``"gaussian"`` (``scale`` sigma),
    in the units of the aggregate; ``dealer`` names the dealer party."""

    kind: Literal["laplace", "gaussian"]
    scale: float
    dealer: str = "dealer"

    def __post_init__(self) -> None:
        if self.kind not in ("laplace", "gaussian"):
            raise ParameterError(explain("kind", self.kind, "'laplace' or 'gaussian'", "pick a mechanism"))
        if not isinstance(self.scale, (int, float)) or not np.isfinite(self.scale) or self.scale <= 0:
            raise ParameterError(explain("scale", self.scale, "a finite number > 0", "pass the noise scale"))


def _check(spec: AggregationSpec, noise: MpcNoise) -> None:
    if spec.reveal or spec.server not in spec.aggregators:
        raise ParameterError(explain("spec", "reveal=True or a server that does not aggregate",
                                     "reveal=False with the server among the aggregators",
                                     "build AggregationSpec(..., reveal=False, aggregators=(server, ...))"))
    if noise.dealer in spec.aggregators or noise.dealer in spec.clients:
        raise ParameterError(explain("dealer", noise.dealer, "a party that is neither aggregator nor client",
                                     "name a separate dealer party"))


def _noisy_open(comm: Comm, spec: AggregationSpec, noise: MpcNoise, mine: AggregatorShare) -> np.ndarray | None:
    from mpdp.protocols.mpc import MPCSession

    with MPCSession.with_dealer(comm, dealer=noise.dealer, parties=spec.aggregators, fmt=spec.fmt) as session:
        total = session.from_shares(mine.share, bound=spec.total_clients * spec.entry_bound)
        sample = _laplace if noise.kind == "laplace" else _gaussian
        drawn = sample(session, (spec.dim,), noise.scale)
        if spec.weighted:
            weight = total[spec.dim:]
            noisy = total[: spec.dim] + drawn
            opened = [noisy.reveal_to(spec.server), weight.reveal_to(spec.server)]
            if opened[0] is None or opened[1] is None:
                return None
            return np.concatenate([opened[0], opened[1]])
        return (total + drawn).reveal_to(spec.server)


def _laplace(session: object, shape: tuple[int, ...], scale: float) -> object:
    return mpc_discrete_laplace(session, shape, scale=scale)


def _gaussian(session: object, shape: tuple[int, ...], scale: float) -> object:
    return mpc_discrete_gaussian(session, shape, sigma=scale)


def noisy_aggregation_aggregator(comm: Comm, spec: AggregationSpec, noise: MpcNoise) -> None:
    """An aggregator's side (not the server)."""
    _check(spec, noise)
    mine = aggregation_aggregator(comm, spec)
    if mine is None:  # pragma: no cover - reveal=False always returns a share
        raise ParameterError("the aggregation returned no share")
    _noisy_open(comm, spec, noise, mine)


def noisy_aggregation_server(comm: Comm, spec: AggregationSpec, noise: MpcNoise) -> AggregateResult:
    """The server's side: returns the noisy aggregate (``total`` = sum + noise)."""
    _check(spec, noise)
    mine = aggregation_server(comm, spec)
    if not isinstance(mine, AggregatorShare):  # pragma: no cover - reveal=False
        raise ParameterError("the aggregation returned no share")
    values = _noisy_open(comm, spec, noise, mine)
    if values is None:  # pragma: no cover - the server receives the opening
        raise ParameterError("the noisy aggregate was not opened to the server")
    return mine.opened(spec, values)
