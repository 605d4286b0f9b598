"""Paper 003's MPC methods: MPC Out P, MPC Grad P, and Pathak et al.'s baseline, with noise added inside MPC.

All three aggregate the parties' vectors by secure aggregation (:mod:`mpdp.protocols.aggregation`) into
additive shares held by ``A >= 2`` non-colluding aggregators (``agg0`` also acts as the aggregation server),
add differential-privacy noise that the aggregators generate *inside* the secure computation from joint
randomness (:mod:`mpdp.protocols.noise`), and open only the noisy aggregate, which ``agg0`` sends to every
party. No party, and no coalition short of all aggregators, sees an individual vector or the noise.

* **MPC Out P** (003 Theorem 3.1): each party computes its local minimiser ``theta_j``; the parties securely
  average them and Laplace noise for the sensitivity ``2G / (m n(1) lam)`` of the average is added before
  the single reveal.
* **MPC Grad P** (003 Theorem 3.4): T rounds of gradient descent on ``(1/m) sum_j J_j``; each round the
  parties' mean gradients are securely averaged, Gaussian noise for the sensitivity ``2G / (m n(1))`` is added
  inside the MPC, and only the noisy average gradient is revealed; every party then takes the same step
  (the regulariser's gradient is public). Accounting: zCDP (Lemma 2.1-2.3, solved exactly) or the exact
  Gaussian curve (``accountant="tight"``), both reported
  (:class:`~mpdp.learning.distributed_erm.common.GaussianCalibration`).
* **Pathak et al.** (NIPS 2010): MPC Out P's pipeline with Pathak's noise ``2G / (n(1) lam eps)``, which
  ignores the 1/m of averaging (Table 1's first column).

Soundness notes
---------------
* Fixed point: each party's vector is rounded to the aggregation grid ``2^-f``, so a changed record moves the
  rounded sum by at most ``Delta 2^f + sqrt(d)`` grid units (l2) or ``Delta_1 2^f + d`` (l1); the noise is
  calibrated to these inflated sensitivities (:mod:`mpdp.dp.grid`).
* Laplace noise is coordinate-wise with the l1 bound ``sqrt(d)`` times the paper's l2 sensitivity (the paper's
  scalar ``Lap(2G/(m n(1) lam eps))`` is eps-DP only for d = 1; :mod:`mpdp.dp.sensitivities.erm`).
* Theorem 3.4's sigma slightly overshoots eps (it drops rho in Lemma 2.3); training solves it exactly.

Security
--------
Semi-honest parties. The aggregators' view is uniform shares; the opened value is the noisy aggregate, which
is (eps, delta)-DP for every record of every party even if all parties but one and all aggregators but one
collude (the noise comes from all aggregators' joint randomness). Colluding aggregators (all ``A``) learn the
inputs. Every party learns the same noisy aggregate(s), which is what the privacy guarantee covers.

Accuracy
--------
Besides the DP noise, the aggregate is exact up to the fixed-point rounding ``m 2^-(f+1)`` per coordinate of the
sum (``2^-(f+1)`` of the mean).

References
----------
Paper 003 (Jayaraman et al., NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`) sections 3.1-3.2, Table 1;
M. Pathak, S. Rane, B. Raj,
"Multiparty differential privacy via aggregation of locally trained classifiers", NIPS 2010.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.accounting import zcdp_epsilon
from mpdp.dp.grid import grid_l1_sensitivity
from mpdp.dp.sensitivities.erm import minimizer_sensitivity
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.learning.distributed_erm.common import Cohort, GaussianCalibration, GradientPerturbation, gd_step
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup
from mpdp.learning.distributed_erm.spec import Method
from mpdp.protocols.aggregation import (
    AggregationSpec,
    AggregatorShare,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
)
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.protocols.noise import add_distributed_gaussian, distributed_gaussian_rho, mpc_discrete_laplace
from mpdp.protocols.noisy_aggregation import MpcNoise, noisy_aggregation_aggregator, noisy_aggregation_server
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import Comm, run_protocol

__all__ = [
    "DEALER",
    "InMPCNoise",
    "MPCSetup",
    "NoiseFamily",
    "aggregator_gaussian",
    "gradp_aggregator_role",
    "gradp_party_role",
    "in_mpc_laplace_scale",
    "mpc_noise_samples",
    "open_with_noise",
    "outp_aggregator_role",
    "outp_party_role",
    "output_epsilon",
    "output_noise_scale",
    "output_spec",
    "outsider_epsilon",
]

FloatArray = npt.NDArray[np.float64]
NoiseFamily = Literal["laplace", "gaussian"]


@dataclass(frozen=True)
class MPCSetup:
    """How the secure computation is run.

    Parameters
    ----------
    aggregators:
        Number of non-colluding aggregators (>= 2); ``agg0`` is also the aggregation server.
    frac_bits:
        Fixed-point fractional bits of the shares (ring Z_2^64). 24 bits give a resolution of 6e-8, far below
        the DP noise of every setting of the paper, while 50,000 parties' vectors of entries up to 1,000 fit.
    max_dropouts:
        Parties that may drop out of a round without aborting it (the released aggregate then covers the
        others; the sensitivity is unchanged because it is per record).
    """

    aggregators: int = 2
    frac_bits: int = 24
    max_dropouts: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.aggregators, bool) or not isinstance(self.aggregators, int) or self.aggregators < 2:
            raise ParameterError(explain("aggregators", self.aggregators, "an int >= 2",
                                         "secure aggregation needs at least two non-colluding aggregators"))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"agg{i}" for i in range(self.aggregators))

    @property
    def fmt(self) -> FixedPointFormat:
        return FixedPointFormat(ring_bits=64, frac_bits=self.frac_bits)

    def spec(self, groups: list[Cohort], dim: int, bound: float) -> AggregationSpec:
        return self.spec_for({c.name: c.group.size for c in groups}, dim, bound)

    def spec_for(self, clients: dict[str, int], dim: int, bound: float) -> AggregationSpec:
        """The aggregation of ``clients`` (runtime party name -> data parties it stands for)."""
        return AggregationSpec(server=self.names[0], aggregators=self.names, clients=dict(clients), dim=dim,
                               bound=bound, max_dropouts=self.max_dropouts, reveal=False, fmt=self.fmt)


@dataclass(frozen=True)
class InMPCNoise:
    """Noise the aggregators add to the shared sum before opening it (``scale`` in the sum's real units).

    ``"laplace"``: Laplace of scale ``scale`` generated inside the MPC from the aggregators' joint randomness
    (:func:`mpdp.protocols.noise.mpc_discrete_laplace`: exact discrete Laplace on the grid up to a total
    variation of ``MPC_LAPLACE_TV`` per coordinate, added to delta). ``"gaussian"``: every aggregator adds an
    exact discrete Gaussian of std ``scale`` to its own share (:func:`mpdp.protocols.noise.add_distributed_gaussian`
    with the full variance per aggregator), so any coalition short of all aggregators faces at least one
    unknown ``N_Z(0, scale^2)``; see :func:`fit_mpc_gradp` for why not the in-MPC rejection sampler.
    """

    family: NoiseFamily
    scale: float


DEALER = "dealer"


def open_with_noise(comm: Comm, setup: MPCSetup, share: AggregatorShare, noise: InMPCNoise, *,
                     value_bound: float, dim: int) -> FloatArray:
    """Aggregator side: add the noise to the shared sum and open it to every aggregator."""
    fmt, ring = setup.fmt, setup.fmt.ring
    if noise.family == "laplace":
        with MPCSession.with_dealer(comm, dealer=DEALER, parties=setup.names, fmt=fmt) as session:
            shared_sum = session.from_shares(share.share, bound=max(value_bound, fmt.resolution))
            z = mpc_discrete_laplace(session, (dim,), scale=noise.scale)
            opened: FloatArray = np.asarray((shared_sum + z).reveal(), dtype=np.float64)
            return opened
    own = aggregator_gaussian(share.share, noise, setup, rng=comm.rng)
    others = [a for a in setup.names if a != comm.name]
    comm.broadcast(own, label="noisy-share", to=others)
    total = own
    for name, theirs in comm.gather(others, label="noisy-share").items():
        theirs = ring.check(theirs, f"noisy share from {name}", received=True)
        if ring.shape(theirs) != ring.shape(own):
            raise MalformedMessageError(explain(f"noisy share from {name}", ring.shape(theirs),
                                                str(ring.shape(own)), f"reject {name}"))
        total = ring.add(total, theirs)
    out: FloatArray = fmt.decode(total)
    return out


def aggregator_gaussian(share: Any, noise: InMPCNoise, setup: MPCSetup, *, rng: RandomSource) -> Any:
    """An aggregator's share plus its own exact discrete Gaussian of std ``noise.scale`` (the full sigma, see
    :class:`InMPCNoise`), drawn from ``rng``: one call per opening, so the draws of successive openings follow
    each other in ``rng``'s stream."""
    return add_distributed_gaussian(share, sigma=noise.scale * math.sqrt(setup.aggregators),
                                    parties=setup.aggregators, fmt=setup.fmt, rng=rng)


def in_mpc_laplace_scale(l1_sensitivity: float, epsilon: float, fmt: FixedPointFormat, dim: int) -> float:
    """Laplace scale (real units) for an l1 sensitivity once ``dim`` entries are rounded to the grid ``2^-f``."""
    return grid_l1_sensitivity(l1_sensitivity, fmt.frac_bits, dim) * fmt.resolution / epsilon


# -- one-shot: MPC Out P and Pathak -----------------------------------------------------------------------------
def output_spec(setup: MPCSetup, groups: list[Cohort], d: int, problem: ERMProblem) -> AggregationSpec:
    """The aggregation of the local minimisers: ``lam ||theta_j|| <= G``, so every entry is at most ``G / lam``."""
    return setup.spec(groups, d, problem.G / problem.lam)


def outp_party_role(problem: ERMProblem, spec: AggregationSpec, group: PartyGroup) -> Callable[[Comm], FloatArray]:
    """A data party (or cohort) of MPC Out P / Pathak: shares its local minimisers, receives the model."""
    def role(comm: Comm) -> FloatArray:
        aggregation_client(comm, spec, group.local_minimizers(problem))
        model: FloatArray = comm.recv(spec.server, label="model")
        return model

    return role


def outp_aggregator_role(spec: AggregationSpec, scale: float,
                         names: list[str]) -> Callable[[Comm], FloatArray | None]:
    """An aggregator of MPC Out P / Pathak: adds in-MPC Laplace noise of ``scale`` to the shared sum; the server
    opens the average and sends it to the data parties ``names``."""
    mpc_noise = MpcNoise("laplace", scale, dealer=DEALER)

    def role(comm: Comm) -> FloatArray | None:
        if comm.name != spec.server:
            noisy_aggregation_aggregator(comm, spec, mpc_noise)
            return None
        result = noisy_aggregation_server(comm, spec, mpc_noise)
        model: FloatArray = np.asarray(result.total, dtype=np.float64) / result.count
        comm.broadcast(model, label="model", to=names)
        return model

    return role


def output_l1(method: Method, problem: ERMProblem, m: int, n: int, d: int) -> float:
    """The l1 sensitivity of the sum of minimisers that MPC Out P or Pathak assumes for records of a party
    with ``n`` records (the calibration uses ``n = n(1)``): ``sqrt(d)`` times the l2 ``2G / (n lam)``, times
    ``m`` for Pathak (module docstring)."""
    one = math.sqrt(d) * minimizer_sensitivity(problem.G, n, problem.lam)
    return one if method == Method.MPC_OUTP else m * one


def output_noise_scale(method: Method, problem: ERMProblem, m: int, n_min: int, d: int, epsilon: float,
                       setup: MPCSetup) -> float:
    """The Laplace scale (sum's units) the aggregators add for MPC Out P or Pathak."""
    return in_mpc_laplace_scale(output_l1(method, problem, m, n_min, d), epsilon, setup.fmt, d)


def output_epsilon(method: Method, problem: ERMProblem, m: int, n: int, n_min: int, d: int, epsilon: float,
                   setup: MPCSetup) -> float:
    """The epsilon of a record of a party with ``n`` records under MPC Out P's or Pathak's noise (calibrated to
    ``n(1)``): the grid-inflated l1 sensitivities' ratio, ``epsilon`` for ``n = n(1)`` and a little above
    ``epsilon n(1) / n`` for larger parties (the grid adds ``d`` units to both)."""
    f = setup.fmt.frac_bits
    ratio = Fraction(grid_l1_sensitivity(output_l1(method, problem, m, n, d), f, d),
                     grid_l1_sensitivity(output_l1(method, problem, m, n_min, d), f, d))
    return epsilon if ratio == 1 else float(Fraction(epsilon) * ratio)


# -- iterative: MPC Grad P --------------------------------------------------------------------------------------
def gradp_party_role(problem: ERMProblem, spec: AggregationSpec, group: PartyGroup,
                     settings: GradientPerturbation) -> Callable[[Comm], tuple[FloatArray, FloatArray]]:
    """A data party (or cohort) of MPC Grad P: each iteration shares its gradients and steps on the noisy mean;
    returns the final model and the recorded iterates."""
    d = spec.dim
    recorded = set(settings.recorded)

    def role(comm: Comm) -> tuple[FloatArray, FloatArray]:
        theta = np.zeros(d)
        trace = []
        for t in range(1, settings.iterations + 1):
            aggregation_client(comm, spec, group.local_gradients(problem, theta))
            theta = gd_step(theta, comm.recv(spec.server, label="noisy-gradient"), problem, settings.eta)
            if t in recorded:
                trace.append(theta)
        return theta, np.array(trace).reshape(len(trace), d)

    return role


def gradp_aggregator_role(problem: ERMProblem, spec: AggregationSpec, setup: MPCSetup, noise: InMPCNoise,
                          settings: GradientPerturbation, m: int, names: list[str]) -> Callable[[Comm], None]:
    """An aggregator of MPC Grad P: each iteration adds its exact discrete Gaussian to its share of the sum and
    opens it; the server sends the noisy mean gradient to the data parties ``names``."""
    d = spec.dim

    def role(comm: Comm) -> None:
        server = spec.server
        for _ in range(settings.iterations):
            share = aggregation_server(comm, spec) if comm.name == server else aggregation_aggregator(comm, spec)
            if not isinstance(share, AggregatorShare):  # pragma: no cover - reveal=False always returns shares
                raise ParameterError(explain("aggregation", type(share).__name__, "shares", "use reveal=False"))
            noisy_sum = open_with_noise(comm, setup, share, noise, value_bound=m * problem.G, dim=d)
            if comm.name == server:
                comm.broadcast(noisy_sum / share.count, label="noisy-gradient", to=names)

    return role


def outsider_epsilon(calibration: GaussianCalibration, setup: MPCSetup, d: int) -> float:
    """Epsilon towards observers who know none of the aggregators' noise shares (all A copies protect)."""
    per_round = distributed_gaussian_rho(sensitivity=calibration.sensitivity,
                                         sigma=calibration.sigma * math.sqrt(setup.aggregators),
                                         parties=setup.aggregators, dim=d, frac_bits=setup.frac_bits)
    return zcdp_epsilon(per_round * calibration.T, calibration.delta, conversion="bun_steinke")


def mpc_noise_samples(family: NoiseFamily, scale: float, count: int, *, rng: RandomSource | None = None,
                      setup: MPCSetup | None = None) -> FloatArray:
    """``count`` draws of Laplace(``scale``) or Gaussian noise of std ``scale`` made by the aggregators and opened.

    Laplace: generated inside the MPC from joint randomness, exactly as MPC Out P does. Gaussian: the
    aggregators' exact discrete Gaussian shares, split so that their sum has std ``scale`` (Table 1 states the
    total noise; MPC Grad P's training gives each aggregator the full sigma, see :func:`fit_mpc_gradp`). The
    grid is about 2^20 steps per scale.
    """
    setup = setup or MPCSetup()
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ParameterError(explain("count", count, "an int >= 1", "pass e.g. count=1000"))
    frac_bits = max(0, min(28, 20 - math.frexp(scale)[1]))
    setup = replace(setup, frac_bits=frac_bits)
    fmt = setup.fmt
    zero = AggregatorShare(share=fmt.ring.zeros((count,)), count=1, survivors={})

    def aggregator(comm: Comm) -> FloatArray:
        if family == "laplace":
            return open_with_noise(comm, setup, zero, InMPCNoise("laplace", scale), value_bound=0.0, dim=count)
        per = InMPCNoise("gaussian", scale / math.sqrt(setup.aggregators))
        return open_with_noise(comm, setup, zero, per, value_bound=0.0, dim=count)

    roles: dict[str, Any] = {a: aggregator for a in setup.names}
    if family == "laplace":
        roles[DEALER] = TrustedDealer(DEALER, parties=setup.names)
    run = run_protocol(roles, rng=resolve(rng))
    out: FloatArray = np.asarray(run.results[setup.names[0]], dtype=np.float64)
    return out
