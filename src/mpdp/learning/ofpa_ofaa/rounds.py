"""Paper 001's rounds, written once: who does what in each round, the random-source labels and the stop rule.

Parties: the data owners (``party0`` ..), the aggregation ``server`` and two ``aggregator`` parties
(:data:`SERVER`, :data:`AGGREGATORS`). Round ``k`` (from 0) is two protocol runs under the root
``root.spawn(round_label(k))``:

1. the secure weighted averaging (:mod:`mpdp.protocols.aggregation`): every owner uploads its local minimiser
   from the current global parameters, clipped to the public bound, with its record count as weight; the server
   learns the record-weighted average and nothing else. An owner draws its perturbation first when
   :func:`draws_noise` says (round 0, or every round with fresh noise), from its own source under
   :func:`noise_label`;
2. the server hands the new global parameters to every other party (``counted=False``: a process holding every
   party would not send it; reported apart from the algorithm's communication).

Every party then applies :func:`stop_after` to the same numbers, so all stop after the same round.
:func:`run_rounds` is one party's part. The in-memory fit (:func:`mpdp.learning.ofpa_ofaa.model.fit`), the
deployed party (:mod:`mpdp.learning.ofpa_ofaa.deployment`) and the Flower app use these definitions, so a seeded
run draws the same noise in every engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mpdp.learning.ofpa_ofaa.parties import DataOwner, Method, upload
from mpdp.protocols.aggregation import (
    AggregationSpec,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm

__all__ = ["AGGREGATORS", "SERVER", "RoundsOutcome", "draws_noise", "noise_label", "order", "release_of",
           "round_label", "run_rounds", "stop_after"]

FloatArray = npt.NDArray[np.float64]
SERVER, AGGREGATORS = "server", ("aggregator0", "aggregator1")
_MODEL = "ofpa.model"


class RoundSettings(Protocol):
    """What the rounds read of a run's settings (:class:`~mpdp.learning.ofpa_ofaa.model.OfpaOfaaSettings`)."""

    @property
    def method(self) -> str: ...
    @property
    def eta(self) -> float: ...
    @property
    def max_rounds(self) -> int: ...
    @property
    def noise(self) -> str: ...
    @property
    def bound(self) -> float: ...


class Runner(Protocol):
    def run(self, role: Callable[[Comm], Any], root: RandomSource, parties: Sequence[str], *,
            counted: bool = True) -> Any: ...


def order(owners: Sequence[str]) -> tuple[str, ...]:
    """The parties in the aggregation's canonical order: the server, the aggregators, the owners sorted."""
    return (SERVER, *AGGREGATORS, *sorted(owners))


def round_label(rnd: int) -> str:
    """Round ``rnd``'s protocol root: ``root.spawn(round_label(rnd))``."""
    return f"aggregate/{rnd}"


def noise_label(rnd: int) -> str:
    """An owner's perturbation of round ``rnd``: drawn from ``owner_source.spawn(noise_label(rnd))``."""
    return f"round/{rnd}"


def draws_noise(settings: RoundSettings, rnd: int) -> bool:
    """Whether owners draw a new perturbation before round ``rnd``."""
    return settings.method != Method.NONE and (rnd == 0 or settings.noise == "fresh")


def release_of(settings: RoundSettings, rnd: int) -> int:
    """The round whose perturbation an owner uses in round ``rnd``: 0 with noise drawn once, else ``rnd``."""
    return rnd if settings.noise == "fresh" else 0


def stop_after(rnd: int, change: float, settings: RoundSettings) -> bool:
    """The stopping rule: round ``rnd`` (from 0) moved the global parameters by ``change`` < ``eta`` (not the
    first round)."""
    return rnd > 0 and change < settings.eta


@dataclass
class RoundsOutcome:
    """One party's view of the run: the global parameters after every round, and whether the rule stopped it."""

    thetas: list[FloatArray] = field(default_factory=list)
    converged: bool = False

    @property
    def theta(self) -> FloatArray:
        return self.thetas[-1]

    @property
    def changes(self) -> list[float]:
        previous = [np.zeros_like(self.thetas[0]), *self.thetas[:-1]] if self.thetas else []
        return [float(np.linalg.norm(new - old)) for new, old in zip(self.thetas, previous, strict=True)]


def run_rounds(session: Runner, name: str, owners: Sequence[str], spec: AggregationSpec, settings: RoundSettings,
               root: RandomSource, dim: int, owner: DataOwner | None = None) -> RoundsOutcome:
    """Party ``name``'s rounds (module docstring); ``owner`` is its :class:`DataOwner` when it is a data owner."""
    parties = order(owners)
    theta: FloatArray = np.zeros(dim)
    outcome = RoundsOutcome()
    for rnd in range(settings.max_rounds):
        step = root.spawn(round_label(rnd))
        result: Any
        if owner is not None:
            if draws_noise(settings, rnd):
                owner.draw_noise(noise_label(rnd))
            result = session.run(_client(spec, upload(owner.local_fit(theta), settings.bound), owner.n), step, parties)
        elif name == SERVER:
            result = session.run(lambda c: aggregation_server(c, spec), step, parties)
        else:
            result = session.run(lambda c: aggregation_aggregator(c, spec), step, parties)
        new: FloatArray = session.run(_hand_out(result), step, parties, counted=False)
        change = float(np.linalg.norm(new - theta))
        theta = new
        outcome.thetas.append(new)
        if stop_after(rnd, change, settings):
            outcome.converged = True
            break
    return outcome


def _client(spec: AggregationSpec, values: FloatArray, records: int) -> Callable[[Comm], Any]:
    return lambda comm: aggregation_client(comm, spec, values, np.array([float(records)]))


def _hand_out(result: Any) -> Callable[[Comm], FloatArray]:
    def role(comm: Comm) -> FloatArray:
        if comm.name == SERVER:
            mean: FloatArray = np.asarray(result.mean, dtype=np.float64)
            comm.broadcast(mean, label=_MODEL, to=comm.peers)
            return mean
        received: FloatArray = np.asarray(comm.recv(SERVER, label=_MODEL), dtype=np.float64)
        return received

    return role
