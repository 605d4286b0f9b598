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
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.dp.accounting import BudgetSpender, zcdp_epsilon
from mpdp.dp.grid import grid_l1_sensitivity
from mpdp.dp.sensitivities.erm import averaged_gradient_sensitivity, gradient_sensitivity, minimizer_sensitivity
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.learning.distributed_erm.common import (
    Cohort,
    DistributedFit,
    GaussianCalibration,
    GradientPerturbation,
    OutputPerturbation,
    PrivacySpent,
    calibrate_gradient_noise,
    charge,
    cohorts,
    gd_step,
    laplace_cost,
    per_size_class,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties, PartyGroup
from mpdp.protocols.aggregation import (
    AggregationSpec,
    AggregatorShare,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
)
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.protocols.noise import (
    MPC_LAPLACE_TV,
    add_distributed_gaussian,
    distributed_gaussian_rho,
    mpc_discrete_laplace,
)
from mpdp.protocols.noisy_aggregation import MpcNoise, noisy_aggregation_aggregator, noisy_aggregation_server
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import Comm, run_protocol

__all__ = [
    "DEALER",
    "InMPCNoise",
    "MPCSetup",
    "NoiseFamily",
    "fit_mpc_gradp",
    "fit_mpc_outp",
    "fit_pathak",
    "gradp_aggregator_role",
    "gradp_party_role",
    "in_mpc_laplace_scale",
    "mpc_noise_samples",
    "open_with_noise",
    "outp_aggregator_role",
    "outp_party_role",
    "output_noise_scale",
    "output_spec",
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
    own = add_distributed_gaussian(share.share, sigma=noise.scale * math.sqrt(setup.aggregators),
                                   parties=setup.aggregators, fmt=fmt, rng=comm.rng)
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


def in_mpc_laplace_scale(l1_sensitivity: float, epsilon: float, fmt: FixedPointFormat, dim: int) -> float:
    """Laplace scale (real units) for an l1 sensitivity once ``dim`` entries are rounded to the grid ``2^-f``."""
    return grid_l1_sensitivity(l1_sensitivity, fmt.frac_bits, dim) * fmt.resolution / epsilon


# -- one-shot: MPC Out P and Pathak -----------------------------------------------------------------------------
def _fit_output(method: str, problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation,
                sum_l1_sensitivity: float, *, rng: RandomSource | None, ledger: BudgetSpender | None,
                cohort_size: int | None, setup: MPCSetup) -> DistributedFit:
    d, eps, m = parties.d, settings.epsilon, parties.m
    fmt = setup.fmt
    noise = InMPCNoise("laplace", in_mpc_laplace_scale(sum_l1_sensitivity, eps, fmt, d))
    tv = d * MPC_LAPLACE_TV  # the in-MPC sampler's distance from the exact discrete Laplace, added to delta
    charge(ledger, replace(laplace_cost(eps, noise.scale, sum_l1_sensitivity), delta=tv), f"003/{method}")
    groups = cohorts(parties, cohort_size)
    names = [c.name for c in groups]
    spec = output_spec(setup, groups, d, problem)
    roles: dict[str, Any] = {c.name: outp_party_role(problem, spec, c.group) for c in groups}
    roles.update({a: outp_aggregator_role(spec, noise.scale, names) for a in setup.names})
    roles[DEALER] = TrustedDealer(DEALER, parties=setup.names)
    start = time.perf_counter()
    run = run_protocol(roles, rng=resolve(rng))
    theta = np.asarray(run.results[spec.server], dtype=np.float64)
    b_mean = noise.scale / m
    privacy = PrivacySpent(
        epsilon=eps, delta=tv,
        per_party=per_size_class(parties.sizes, lambda n: eps * parties.n_min / n),
        details={"laplace_scale_of_average": b_mean, "laplace_scale_paper_scalar": b_mean / math.sqrt(d),
                 "l1_factor_sqrt_d": math.sqrt(d), "frac_bits": fmt.frac_bits, "aggregators": setup.aggregators},
    )
    return DistributedFit(method, theta, (), theta[None, :], privacy, run.communication(),
                          time.perf_counter() - start)


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


def output_l1(method: str, problem: ERMProblem, m: int, n_min: int, d: int) -> float:
    """The l1 sensitivity of the sum of minimisers MPC Out P (``"mpc-outp"``) or Pathak (``"pathak"``) assumes."""
    one = math.sqrt(d) * minimizer_sensitivity(problem.G, n_min, problem.lam)
    return one if method == "mpc-outp" else m * one


def output_noise_scale(method: str, problem: ERMProblem, m: int, n_min: int, d: int, epsilon: float,
                       setup: MPCSetup) -> float:
    """The Laplace scale (sum's units) the aggregators add for MPC Out P or Pathak."""
    return in_mpc_laplace_scale(output_l1(method, problem, m, n_min, d), epsilon, setup.fmt, d)


def fit_mpc_outp(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
                 rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                 cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """MPC Out P: securely averaged local minimisers + in-MPC Laplace noise for ``2G/(m n(1) lam)``, one reveal.

    The sum of the m minimisers has l2 sensitivity ``2G / (n(1) lam)`` (one party's minimiser moves that much,
    Chaudhuri et al. Corollary 8); the noise on the sum is calibrated to ``sqrt(d)`` times that in l1, hence
    ``sqrt(d) 2G / (m n(1) lam eps)`` on the average (module docstring). Per party, records of a party with
    ``n_j`` records are ``eps n(1) / n_j``-DP.
    """
    l1 = output_l1("mpc-outp", problem, parties.m, parties.n_min, parties.d)
    return _fit_output("mpc-outp", problem, parties, settings, l1, rng=rng, ledger=ledger,
                       cohort_size=cohort_size, setup=setup or MPCSetup())


def fit_pathak(problem: ERMProblem, parties: HorizontalParties, settings: OutputPerturbation, *,
               rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
               cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """Pathak et al.: MPC Out P's pipeline with noise ``2G / (n(1) lam eps)`` on the average (m times more).

    Pathak et al. bound the average's sensitivity by one party's, ``2G / (n(1) lam)``, forgetting the 1/m; the
    sum is therefore treated as ``m`` times as sensitive (and, as everywhere, ``sqrt(d)`` for the l1 bound).
    """
    l1 = output_l1("pathak", problem, parties.m, parties.n_min, parties.d)
    return _fit_output("pathak", problem, parties, settings, l1, rng=rng, ledger=ledger,
                       cohort_size=cohort_size, setup=setup or MPCSetup())


# -- iterative: MPC Grad P --------------------------------------------------------------------------------------
def fit_mpc_gradp(problem: ERMProblem, parties: HorizontalParties, settings: GradientPerturbation, *,
                  rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                  cohort_size: int | None = None, setup: MPCSetup | None = None) -> DistributedFit:
    """MPC Grad P: T rounds of securely averaged gradients + Gaussian noise added inside the secure computation.

    The sum of the parties' mean gradients has l2 sensitivity ``2G / n(1)`` (``2G / (m n(1))`` for the average);
    ``sigma`` is calibrated for it over T rounds by ``settings.accountant`` (the rounding to the shares' grid is
    added to the sensitivity). Each round every aggregator adds an exact discrete Gaussian ``N_Z(0, sigma^2)``
    (on the grid ``2^-f``) to its additive share of the sum before the shares are combined, so the opened sum
    carries ``A`` independent copies and every coalition of up to ``A - 1`` aggregators, with any number of data
    parties, still faces one copy it does not know: the claimed (eps, delta) holds against all of them, and
    outsiders (who know none) get more privacy (``details["epsilon_outsiders"]``). The price is ``sqrt(A)`` in
    the noise's std (``details["sigma_of_average"]``) compared with a single copy.

    Why not a single copy from the in-MPC rejection sampler (:func:`mpdp.protocols.noise.mpc_discrete_gaussian`):
    its fixed-point ``exp`` makes each coordinate only approximately discrete-Gaussian, priced at ``+2e-5`` in
    epsilon and ``+2.3e-7`` in delta per coordinate and release; over T = 1,500 releases of d = 100 coordinates
    that is ``+0.03`` in epsilon and ``+0.03`` in delta, far beyond the paper's delta = 1e-3. The per-aggregator
    exact Gaussians cost ``sqrt(2)`` in std (two aggregators) and nothing in the guarantee.
    """
    setup = setup or MPCSetup()
    settings.check_step(problem)
    d, m, fmt = parties.d, parties.m, setup.fmt
    calibration = calibrate_gradient_noise(gradient_sensitivity(problem.G, parties.n_min), d, settings,
                                           grid_bits=fmt.frac_bits)
    noise = InMPCNoise("gaussian", calibration.sigma)
    charge(ledger, calibration.step_cost(), "003/mpc-gradp")
    groups = cohorts(parties, cohort_size)
    names = [c.name for c in groups]
    spec = setup.spec(groups, d, problem.G)
    roles: dict[str, Any] = {c.name: gradp_party_role(problem, spec, c.group, settings) for c in groups}
    roles.update({a: gradp_aggregator_role(problem, spec, setup, noise, settings, m, names) for a in setup.names})
    start = time.perf_counter()
    run = run_protocol(roles, rng=resolve(rng))
    final, iterates = run.results[names[0]]
    mean_sensitivity = averaged_gradient_sensitivity(problem.G, m, parties.n_min)
    privacy = PrivacySpent(
        epsilon=calibration.epsilon, delta=settings.delta,
        per_party=per_size_class(parties.sizes, lambda n: _epsilon_for(calibration, problem, n, d)),
        details={**calibration.as_dict(), "sigma_per_aggregator_of_average": calibration.sigma / m,
                 "sigma_of_average": calibration.sigma * math.sqrt(setup.aggregators) / m,
                 "epsilon_outsiders": _outsider_epsilon(calibration, setup, d),
                 "sensitivity_of_average": mean_sensitivity, "frac_bits": fmt.frac_bits,
                 "aggregators": setup.aggregators},
    )
    return DistributedFit("mpc-gradp", final, settings.recorded, iterates, privacy, run.communication(),
                          time.perf_counter() - start)


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


def _outsider_epsilon(calibration: GaussianCalibration, setup: MPCSetup, d: int) -> float:
    """Epsilon towards observers who know none of the aggregators' noise shares (all A copies protect)."""
    per_round = distributed_gaussian_rho(sensitivity=calibration.sensitivity,
                                         sigma=calibration.sigma * math.sqrt(setup.aggregators),
                                         parties=setup.aggregators, dim=d, frac_bits=setup.frac_bits)
    return zcdp_epsilon(per_round * calibration.T, calibration.delta, conversion="bun_steinke")


def _epsilon_for(calibration: GaussianCalibration, problem: ERMProblem, n: int, d: int) -> float:
    return calibration.epsilon_for(gradient_sensitivity(problem.G, n), d)


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
