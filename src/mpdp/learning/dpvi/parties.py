"""The parties of vertically partitioned DPVI (paper 002, section 3.1): data holders, dealer, noise party.

* :class:`DataParty` holds some attributes of every record (the records are aligned across parties, as the
  paper assumes). It runs the DPVI loop of :mod:`.dpvi_training` in lockstep with the other data parties:
  the posterior, ``theta``, the minibatches and ``eta`` are public (derived from a seed the first party
  broadcasts), and the only private computation, the clipped noisy gradient sum, runs under MPC
  (:func:`mpdp.protocols.mixture_gradient.clipped_gradient_sum`) from what each party computes locally on its
  own attributes. Every party ends with the same posterior.
* The dealer (:class:`~mpdp.protocols.mpc.TrustedDealer`) supplies correlated randomness only.
* Noise: with ``noise="parties"`` each data party adds its share ``N_Z(0, (z C 2^b)^2 / P)`` of a distributed
  discrete Gaussian (grid ``2^-b``) to its share of the sum before the opening; with ``noise="trusted"`` a
  :class:`NoiseParty` (the paper's trusted third party, e.g. a TEE) draws ``N_Z(0, (z C 2^b)^2)`` and sends
  each data party an additive share of it. Either way no party sees the sum without the full noise, except
  that with ``"parties"`` each party knows its own share (see the per-party accounting).

What a data party sees: its own attributes, the public schema, every released noisy gradient sum (hence the
whole posterior trajectory), uniformly masked openings inside the MPC and, with ``"parties"``, its own noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property

import numpy as np
import numpy.typing as npt

from mpdp.crypto.renormalization import renormalize
from mpdp.crypto.ring import Ring, ring_for_bits
from mpdp.dp.samplers import discrete_gaussian
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError, explain
from mpdp.learning.dpvi.mixture import FeatureBlock, MixtureModel
from mpdp.learning.dpvi.training import BatchPlan, DPVISettings, Trace, train
from mpdp.learning.dpvi.variational import MeanFieldGaussian
from mpdp.progress import SILENT, Progress
from mpdp.protocols.mixture_gradient import (
    UNRENORMALIZED_SHIFT,
    GradientPrecision,
    PartyInput,
    StepPublic,
    gradient_sum,
    plan_step,
    release,
)
from mpdp.protocols.mpc import DealerProvider, MPCSession
from mpdp.protocols.mpc.planning import PlannedProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, Party

__all__ = ["NOISE_SOURCES", "DataParty", "NoiseParty", "PartyOutcome", "VerticalSetup", "roles"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

NOISE_SOURCES = ("parties", "trusted")
_SEED = "dpvi.seed"
_NOISE_REQUEST = "dpvi.noise.request"
_NOISE_SHARE = "dpvi.noise.share"


@dataclass(frozen=True)
class VerticalSetup:
    """The public agreement every party starts from.

    ``parties[j]`` holds the features ``features[j]`` of the ``n`` aligned records. ``comparisons``: how the
    sessions compare (:class:`~mpdp.protocols.mpc.MPCSession`'s option: ``"circuit"``, or ``"fss"`` for one-round
    comparisons with the dealer's DCF keys, two data parties). ``functions``: ``"masked"`` (default) runs the step
    on masked wires (:func:`~mpdp.protocols.mixture_gradient.masked_gradient_sum`: 10 rounds, two data parties,
    falling back to the circuit step where its parameters do not fit), ``"circuit"`` the circuit step (less CPU,
    34-36 rounds).
    """

    model: MixtureModel
    parties: tuple[str, ...]
    features: tuple[tuple[str, ...], ...]
    n: int
    settings: DPVISettings
    precision: GradientPrecision = field(default_factory=GradientPrecision)
    noise: str = "parties"
    dealer: str = "dealer"
    noise_party: str = "noise"
    public_seed: bytes | None = None
    comparisons: str = "circuit"
    functions: str = "masked"

    def __post_init__(self) -> None:
        if len(self.parties) < 2 or len(set(self.parties)) != len(self.parties):
            raise ParameterError(explain("parties", self.parties, "at least two distinct data parties",
                                         "vertical DPVI needs two or more attribute holders"))
        if len(self.features) != len(self.parties):
            raise ShapeMismatchError(explain("features", len(self.features), f"{len(self.parties)} groups",
                                             "give one feature group per party"))
        held = [f for group in self.features for f in group]
        if sorted(held) != sorted(self.model.names) or any(not g for g in self.features):
            raise ParameterError(explain("features", self.features, f"a partition of {list(self.model.names)}",
                                         "assign every modelled feature to exactly one party"))
        if self.functions not in ("circuit", "masked"):
            raise ParameterError(explain("functions", self.functions, "'circuit' or 'masked'",
                                         "pick how the MPC step computes"))
        if self.comparisons not in ("circuit", "fss"):
            raise ParameterError(explain("comparisons", self.comparisons, "'circuit' or 'fss'",
                                         "pick how the sessions compare"))
        if self.noise not in NOISE_SOURCES:
            raise ParameterError(explain("noise", self.noise, f"one of {NOISE_SOURCES}", "pass noise='parties'"))
        if self.dealer in self.parties or self.noise_party in self.parties or self.dealer == self.noise_party:
            raise ParameterError(explain("(dealer, noise_party)", (self.dealer, self.noise_party),
                                         "names distinct from the data parties and each other", "rename them"))
        BatchPlan.of(self.n, self.settings)  # validates the batch size against n
        if self.public_seed is not None and (not isinstance(self.public_seed, bytes) or len(self.public_seed) != 32):
            raise ParameterError(explain("public_seed", self.public_seed, "None or 32 bytes",
                                         "let the first party draw it (None)"))

    @property
    def plan(self) -> BatchPlan:
        return BatchPlan.of(self.n, self.settings)

    def blocks(self) -> tuple[FeatureBlock, ...]:
        return self._blocks

    @cached_property
    def _blocks(self) -> tuple[FeatureBlock, ...]:
        # built once: each block caches its layout (feature kinds, parameter indices, statistics map)
        return tuple(self.model.block(g) for g in self.features)

    @property
    def noise_std_units(self) -> Fraction:
        """Standard deviation of the total noise in grid units: ``z C 2^release_bits`` (exact rational)."""
        s = self.settings
        units: Fraction = Fraction(s.noise_multiplier) * Fraction(s.clip) * 2**self.precision.release_bits
        return units

    def step_plan(self, theta: FloatArray, batch: int) -> StepPublic:
        """The public plan of a step at ``theta`` (every party computes the same)."""
        blocks = self.blocks()
        return plan_step(weights=self.model.weights(theta), maps=[b.stat_map(theta) for b in blocks],
                         stat_counts=[b.n_stats for b in blocks], stat_bounds=[b.stat_bound for b in blocks],
                         sq_norm_bounds=[b.sq_norm_bound(theta) for b in blocks], clip=self.settings.clip,
                         batch=max(batch, 1), precision=self.precision,
                         noise_std=self.settings.noise_multiplier * self.settings.clip)

    def release_order(self) -> IntArray:
        """The model-order index of each released coordinate (weights, then each party's block)."""
        return self._release_order.copy()

    @cached_property
    def _release_order(self) -> IntArray:
        K = self.model.components
        return np.concatenate([np.arange(K - 1)] + [b.indices for b in self.blocks()]).astype(np.int64)

    def scatter(self, released: FloatArray) -> FloatArray:
        """The released vector (weights, then each party's block) in the model's parameter order."""
        out = np.zeros(self.model.dim)
        out[self._release_order] = released
        return out


@dataclass
class PartyOutcome:
    """What a data party ends with: the (public) posterior and the training trace.

    :meth:`to_wire` / :meth:`from_wire` carry it through the wire codec (a party run as its own process,
    ``run_protocol(..., processes=True)``, returns it that way), bit for bit.
    """

    posterior: MeanFieldGaussian
    trace: Trace

    def to_wire(self) -> dict[str, object]:
        return {"posterior": _gaussian_wire(self.posterior),
                "epochs": [_gaussian_wire(q) for q in self.trace.epochs],
                "step_seconds": np.asarray(self.trace.step_seconds, dtype=np.float64),
                "batch_sizes": np.asarray(self.trace.batch_sizes, dtype=np.int64)}

    @classmethod
    def from_wire(cls, wire: object) -> PartyOutcome:
        """Rebuild from :meth:`to_wire`'s form (decoded plain data); malformed input is a MalformedMessageError."""
        if not isinstance(wire, dict) or set(wire) != {"posterior", "epochs", "step_seconds", "batch_sizes"} \
                or not isinstance(wire["epochs"], list):
            raise MalformedMessageError(explain("PartyOutcome wire form", type(wire).__name__,
                                                "the dict PartyOutcome.to_wire() returns", "pass that, decoded"))
        seconds, sizes = wire["step_seconds"], wire["batch_sizes"]
        if not (isinstance(seconds, np.ndarray) and seconds.dtype == np.float64 and isinstance(sizes, np.ndarray)
                and sizes.dtype == np.int64 and seconds.ndim == sizes.ndim == 1):
            raise MalformedMessageError(explain("PartyOutcome step_seconds/batch_sizes", (seconds, sizes),
                                                "float64 and int64 vectors", "pass PartyOutcome.to_wire()'s form"))
        trace = Trace(epochs=[_gaussian_from_wire(q) for q in wire["epochs"]],
                      step_seconds=[float(x) for x in seconds], batch_sizes=[int(b) for b in sizes])
        return cls(_gaussian_from_wire(wire["posterior"]), trace)


def _gaussian_wire(q: MeanFieldGaussian) -> dict[str, FloatArray]:
    return {"mu": q.mu, "omega": q.omega}


def _gaussian_from_wire(wire: object) -> MeanFieldGaussian:
    if not (isinstance(wire, dict) and set(wire) == {"mu", "omega"}
            and all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in wire.values())):
        raise MalformedMessageError(explain("posterior wire form", wire, "{'mu', 'omega'}: float64 vectors",
                                            "pass PartyOutcome.to_wire()'s form"))
    return MeanFieldGaussian(wire["mu"], wire["omega"])


class DataParty(Party):
    """A holder of some attributes of every record; see the module docstring.

    Parameters
    ----------
    name:
        The party's name (one of ``setup.parties``).
    setup:
        The public agreement.
    values:
        This party's raw attribute values, ``(n, len(its features))``, in its feature order.
    progress:
        This party's terminal (:mod:`mpdp.progress`): a bar over the training steps.
    """

    def __init__(self, name: str, setup: VerticalSetup, values: npt.ArrayLike, *,
                 progress: Progress = SILENT) -> None:
        super().__init__(name)
        self.progress = progress
        if name not in setup.parties:
            raise ParameterError(explain("name", name, f"one of {setup.parties}", "name a data party of the setup"))
        # Its own copy of the public agreement (equal to ``setup``): the theta-derived tables the model caches
        # per step (shared by step_plan and local_input) are this party's own, as on separate machines.
        self.setup = replace(setup, model=replace(setup.model))
        self.index = setup.parties.index(name)
        self.block = self.setup.blocks()[self.index]
        self.data = self.block.encode(values)
        if self.data.n != setup.n:
            raise ShapeMismatchError(explain(f"{name}'s records", self.data.n, f"{setup.n} (aligned records)",
                                             "every party must hold the same records in the same order"))
        self.stats = self.block.stats(self.data)
        self.rows = self.block.prepare(self.data)  # theta-independent, once: each step gathers its minibatch
        self.renorm = setup.precision.renormalization(len(setup.parties))

    def run(self, comm: Comm) -> PartyOutcome:
        setup = self.setup
        public = self._public_seed(comm)
        session, provider = self.open_session(comm)
        with session:
            following: list[int | None] = [None]  # the next minibatch's size, told by train before each step

            def tell(size: int | None) -> None:
                following[0] = size

            def step(theta: FloatArray, batch: IntArray) -> FloatArray:
                # the next step's correlations are requested during this one (no dealer round trip at its start;
                # a dealer in its own process computes them while the parties compute this step)
                return self.secure_step(session, provider, theta, batch, next_batch_size=following[0])

            posterior, trace = train(setup.model, setup.settings, setup.plan, step, rng=public, ahead=tell,
                                     progress=self.progress)
        if setup.noise == "trusted" and self.index == 0 and setup.settings.noise_multiplier > 0:
            comm.send(setup.noise_party, {"dim": 0, "bits": 64}, label=_NOISE_REQUEST)  # tell the noise party to stop
        return PartyOutcome(posterior, trace)

    def open_session(self, comm: Comm) -> tuple[MPCSession, PlannedProvider]:
        """This party's MPC session with the dealer. A step's correlations are fetched in one request (from the
        second step of each minibatch size on): every step runs the same program."""
        setup = self.setup
        provider = PlannedProvider(DealerProvider(comm, dealer=setup.dealer, parties=setup.parties))
        return MPCSession(comm, provider=provider, parties=setup.parties, fmt=setup.precision.fmt,
                          comparisons=setup.comparisons, functions=setup.functions), provider

    def secure_step(self, session: MPCSession, provider: PlannedProvider, theta: FloatArray,
                    batch: IntArray, *, next_batch_size: int | None = None) -> FloatArray:
        """One DP-SGD step's noisy gradient sum, in the model's parameter order (all parties call it together).

        ``next_batch_size``, when the next step's minibatch size is known (the same at every party), has that
        step's correlations requested at the end of this one (:meth:`PlannedProvider.planned`'s ``ahead``).
        """
        ahead = None if next_batch_size is None else ("dpvi.step", int(next_batch_size))
        with provider.planned(("dpvi.step", int(batch.size)), ahead=ahead):
            return self._step(session, theta, batch)

    def _public_seed(self, comm: Comm) -> RandomSource:
        leader = self.setup.parties[0]
        if self.setup.public_seed is not None:  # agreed in advance (experiments comparing runs)
            return RandomSource.seeded(self.setup.public_seed)
        if comm.name == leader:
            seed = comm.rng.bytes(32)
            comm.broadcast(seed, label=_SEED, to=self.setup.parties[1:])
        else:
            seed = comm.recv(leader, label=_SEED)
            if not isinstance(seed, bytes) or len(seed) != 32:
                raise MalformedMessageError(explain("public seed", type(seed).__name__, "32 bytes", "check the leader"))
        # Public randomness (initialisation, minibatches, eta): every party derives the same stream.
        return RandomSource.seeded(seed)

    def local_input(self, theta: FloatArray, batch: IntArray, public: StepPublic) -> PartyInput:
        """What this party contributes to a step, computed on its own attributes only."""
        logs, sq_norms = self.block.local_terms(theta, self.rows.rows(batch))
        if self.setup.precision.renormalize:
            factors, _ = renormalize(logs, self.renorm)
        else:  # paper 002's Figure 2: no per-record constants (a public scale only, see GradientPrecision)
            factors = np.minimum(np.exp(logs - UNRENORMALIZED_SHIFT * np.log(2.0)), 1.0)
        norms = sq_norms / public.clip**2
        return PartyInput(factors=factors, sq_norms=norms, stats=self.stats[batch])

    def _noise(self, session: MPCSession, dim: int, ring: Ring) -> npt.NDArray[np.uint64] | None:
        """This party's share of the step's noise in ``ring`` (the step's release ring), in grid units."""
        setup = self.setup
        if setup.settings.noise_multiplier == 0:
            return None
        if setup.noise == "parties":
            variance = setup.noise_std_units**2 / len(setup.parties)
            draws = np.asarray(discrete_gaussian(variance, (dim,), rng=session.comm.rng), dtype=np.int64)
            return ring.from_int(draws)
        share = session.comm.recv(setup.noise_party, label=_NOISE_SHARE)
        if ring.shape(share) != (dim,):
            _bad_noise(share, dim)
        return ring.check(share, "noise share", received=True)

    def _step(self, session: MPCSession, theta: FloatArray, batch: IntArray) -> FloatArray:
        setup = self.setup
        public = setup.step_plan(theta, int(batch.size))
        if setup.noise == "trusted" and self.index == 0 and setup.settings.noise_multiplier > 0:
            session.comm.send(setup.noise_party, {"dim": public.dim, "bits": public.release_fmt.ring_bits},
                              label=_NOISE_REQUEST)
        ring = public.release_fmt.ring
        if batch.size == 0:  # an empty Poisson minibatch still releases (noise only)
            total = session.from_shares(ring.zeros((public.dim,)), bound=0.0, fmt=public.release_fmt,
                                        scale=setup.precision.release_bits)
        else:
            total = gradient_sum(session, public, self.local_input(theta, batch, public), setup.precision)
        released = release(total, self._noise(session, public.dim, ring))
        return setup.scatter(released)


def _noise_request(msg: object) -> tuple[int, Ring] | None:
    """The dimension and release ring a well-formed noise request names (``ring_for_bits`` decides which bits
    name a ring), or None for a malformed request."""
    if not isinstance(msg, dict) or set(msg) != {"dim", "bits"} or type(msg["dim"]) is not int or msg["dim"] < 0 \
            or type(msg["bits"]) is not int:  # ints on the wire (ring_for_bits would take 128.0 for 128)
        return None
    try:
        return msg["dim"], ring_for_bits(msg["bits"])
    except ParameterError:
        return None


def _bad_noise(share: object, dim: int) -> npt.NDArray[np.uint64]:
    raise MalformedMessageError(explain("noise share", getattr(share, "shape", type(share).__name__),
                                        f"ring elements for {dim} coordinates", "check the noise party"))


class NoiseParty(Party):
    """The trusted noise party: per step, ``N_Z(0, (z C 2^b)^2)`` per coordinate, additively shared.

    It learns nothing but the step count and dimension (it receives no data-dependent message) and must not
    collude with any data party or with the analyst: it knows the total noise.
    """

    def __init__(self, setup: VerticalSetup) -> None:
        super().__init__(setup.noise_party)
        self.setup = setup

    def run(self, comm: Comm) -> int:
        setup = self.setup
        variance = setup.noise_std_units**2
        # separate streams: the noise itself (``dg``, the same stream a non-partitioned run seeded alike draws
        # from, see DPVI) and the masks that share it
        noise_rng, share_rng = comm.rng.spawn("dg"), comm.rng.spawn("shares")
        steps = 0
        while True:
            msg = comm.recv(setup.parties[0], label=_NOISE_REQUEST)
            request = _noise_request(msg)
            if request is None:
                raise MalformedMessageError(explain("noise request", msg,
                                                    "{'dim': int >= 0, 'bits': a ring's bits (2..64 or 128)}",
                                                    "check the leader"))
            dim, ring = request  # ring: the step's release ring (public: the leader's plan says it)
            if dim == 0:
                return steps
            # drawn in the model's parameter order (as a float run draws it), released in the parties' order
            draws = np.asarray(discrete_gaussian(variance, (dim,), rng=noise_rng), dtype=np.int64)
            if dim == self.setup.model.dim:
                draws = draws[self.setup.release_order()]
            noise = ring.from_int(draws)
            shares = [ring.random(share_rng, (dim,)) for _ in setup.parties[1:]]
            first = noise
            for s in shares:
                first = ring.sub(first, s)
            for party, share in zip(setup.parties, [first, *shares], strict=True):
                comm.send(party, share, label=_NOISE_SHARE)
            steps += 1


def roles(setup: VerticalSetup, values: Sequence[npt.ArrayLike], *,
          progress: Progress = SILENT) -> dict[str, Party]:
    """The protocol's roles: one :class:`DataParty` per holder (``values[j]`` its columns), the dealer and,
    for ``noise="trusted"``, the noise party. ``progress`` goes to the first data party (every party steps
    together)."""
    from mpdp.protocols.mpc import TrustedDealer

    if len(values) != len(setup.parties):
        raise ShapeMismatchError(explain("values", len(values), f"{len(setup.parties)} column blocks",
                                         "pass each party's attribute values"))
    out: dict[str, Party] = {name: DataParty(name, setup, v, progress=progress.scoped(name) if j == 0 else SILENT)
                             for j, (name, v) in enumerate(zip(setup.parties, values, strict=True))}
    out[setup.dealer] = TrustedDealer(setup.dealer, parties=setup.parties)
    if setup.noise == "trusted" and setup.settings.noise_multiplier > 0:
        out[setup.noise_party] = NoiseParty(setup)
    return out
