"""Distributed and in-MPC noise: the right distributions (statistical tests with stated error rates), pricing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mpdp.crypto.fixed_point import FAST
from mpdp.errors import ParameterError
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.protocols.noise import (
    MIN_GAUSSIAN_UNITS,
    MPC_GAUSSIAN_TV,
    add_distributed_gaussian,
    distributed_gaussian_rho,
    gaussian_acceptance,
    geometric_bit_probabilities,
    mpc_discrete_gaussian,
    mpc_discrete_laplace,
    mpc_gaussian_tv,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

PARTIES = ("a", "b", "c")


def run_mpc(sample) -> np.ndarray:  # type: ignore[no-untyped-def]
    def party(comm):  # type: ignore[no-untyped-def]
        with MPCSession.with_dealer(comm, parties=PARTIES) as session:
            return sample(session).reveal()

    results = run_protocol({**dict.fromkeys(PARTIES, party), "dealer": TrustedDealer()},
                           rng=RandomSource.seeded(17)).results
    assert np.array_equal(results["a"], results["b"])
    return results["a"]  # type: ignore[no-any-return]


def test_distributed_gaussian_sum_has_the_full_variance() -> None:
    """Three holders each add N_Z(0, sigma^2/3): the revealed sum has variance sigma^2 (chi-square variance
    test on 20,000 draws at alpha = 1e-4, false-failure probability 1e-4)."""
    sigma, n = 0.01, 20_000
    ring = FAST.ring
    shares = [add_distributed_gaussian(ring.zeros((n,)), sigma=sigma, parties=3, fmt=FAST,
                                       rng=RandomSource.seeded(f"holder{i}")) for i in range(3)]
    total = FAST.decode(ring.add(ring.add(shares[0], shares[1]), shares[2]))
    assert np.all(total * 2**20 == np.rint(total * 2**20))  # exactly on the grid
    statistic = (n - 1) * total.var(ddof=1) / sigma**2
    assert stats.chi2.sf(statistic, n - 1) > 5e-5 and stats.chi2.cdf(statistic, n - 1) > 5e-5
    one = FAST.decode(shares[0])
    assert one.std() == pytest.approx(sigma / math.sqrt(3), rel=0.05)


def test_kls_pricing_towards_outsiders_holders_and_coalitions() -> None:
    base = dict(sensitivity=1.0, sigma=4.0, parties=3, dim=10, frac_bits=10)
    outsider = distributed_gaussian_rho(**base)
    holder = distributed_gaussian_rho(**base, known_shares=1)
    pair = distributed_gaussian_rho(**base, known_shares=2)
    delta_units = 2**10 + math.sqrt(10)
    assert outsider == pytest.approx(delta_units**2 / (2 * (4.0 * 2**10) ** 2), rel=1e-9)  # tau negligible here
    assert holder == pytest.approx(outsider * 3 / 2, rel=1e-9) and pair == pytest.approx(outsider * 3, rel=1e-9)
    with pytest.raises(ParameterError, match="knows the noise"):
        distributed_gaussian_rho(**base, known_shares=3)


def test_geometric_digit_probabilities_reproduce_the_geometric_pmf() -> None:
    b = 5.0
    probs = geometric_bit_probabilities(b)
    q = math.exp(-1 / b)
    for k in (0, 1, 7, 30):
        pmf = math.prod(p if (k >> j) & 1 else 1 - p for j, p in enumerate(probs))
        assert pmf == pytest.approx((1 - q) * q**k, rel=1e-12)


def test_in_mpc_laplace_has_the_discrete_laplace_distribution() -> None:
    """3,000 joint samples of Laplace(0.004) on the 2^-20 grid vs the exact continuous-limit CDF (KS test at
    alpha = 1e-4; the discrete-vs-continuous gap at 4,000 grid units per scale is below 1e-3 in CDF)."""
    scale = 0.004
    x = run_mpc(lambda s: mpc_discrete_laplace(s, (3000,), scale=scale))
    assert np.all(x * 2**20 == np.rint(x * 2**20))
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > 1e-4
    assert x.var() == pytest.approx(2 * scale**2, rel=0.1)


def test_in_mpc_gaussian_has_the_discrete_gaussian_distribution() -> None:
    """1,500 joint samples of N(0, 0.002^2) on the 2^-20 grid: KS test at alpha = 1e-4 and the variance."""
    sigma = 0.002
    x = run_mpc(lambda s: mpc_discrete_gaussian(s, (1500,), sigma=sigma))
    assert np.all(x * 2**20 == np.rint(x * 2**20))
    assert stats.kstest(x, stats.norm(scale=sigma).cdf).pvalue > 1e-4
    assert x.std() == pytest.approx(sigma, rel=0.08)


def test_no_party_knows_the_in_mpc_noise() -> None:
    """A party's own contribution (its share) is uncorrelated with the revealed noise."""
    def party(comm):  # type: ignore[no-untyped-def]
        with MPCSession.with_dealer(comm, parties=PARTIES) as session:
            noise = mpc_discrete_laplace(session, (2000,), scale=0.01)
            return FAST.decode(noise.share), noise.reveal()

    results = run_protocol({**dict.fromkeys(PARTIES, party), "dealer": TrustedDealer()},
                           rng=RandomSource.seeded(3)).results
    own, revealed = results["b"]
    assert abs(np.corrcoef(own, revealed)[0, 1]) < 0.1


@pytest.mark.parametrize("weighted", [False, True])
def test_noisy_aggregation_opens_sum_plus_in_mpc_noise_to_the_server(weighted: bool) -> None:
    from mpdp.protocols.aggregation import AggregationSpec, aggregation_client
    from mpdp.protocols.noisy_aggregation import MpcNoise, noisy_aggregation_aggregator, noisy_aggregation_server

    spec = AggregationSpec(server="server", aggregators=("server", "agg"), clients={"g": 500}, dim=400, bound=1.0,
                           reveal=False, weighted=weighted, weight_bound=10.0)
    noise = MpcNoise("laplace", 0.05)
    rng = RandomSource.seeded(8)
    x = 2 * rng.random((500, 400)) - 1
    w = np.ones(500) * 2 if weighted else None
    roles = {"server": lambda c: noisy_aggregation_server(c, spec, noise),
             "agg": lambda c: noisy_aggregation_aggregator(c, spec, noise),
             "g": lambda c: aggregation_client(c, spec, x, w),
             "dealer": TrustedDealer("dealer", parties=spec.aggregators)}
    result = run_protocol(roles, rng=rng).results["server"]
    exact = (x * (2 if weighted else 1)).sum(0)
    residual = result.total - exact
    assert residual.std() == pytest.approx(math.sqrt(2) * 0.05, rel=0.2)  # Laplace(0.05) per entry
    assert abs(residual.mean()) < 0.02
    if weighted:
        assert result.weight_total == pytest.approx(1000.0, abs=1e-3)


def test_the_exp_behind_mpc_gaussian_tv_is_within_its_absolute_error_bound() -> None:
    """MPC_GAUSSIAN_TV rests on the FAST-format ``exp`` (ExpParams(low=-16, high=1), as mpc_discrete_gaussian
    calls it) being within ``absolute_error_bound(FAST)`` of e^x on [-16, 0]: checked on a dense grid with both
    ends (the bound is a worst case over the roundings, so no seed can fail it), then the constant's arithmetic."""
    from mpdp.crypto.approximations import ExpParams
    from mpdp.protocols.mpc.functions import exp

    params = ExpParams(low=-16.0, high=1.0)
    grid = np.concatenate([np.linspace(-16.0, 0.0, 4001), [-1e-6, -15.999999]])

    def sample(session: MPCSession):  # type: ignore[no-untyped-def]
        x = session.input("a", grid if session.comm.name == "a" else None, bound=16.0)
        return exp(x, params)

    error = float(np.max(np.abs(run_mpc(sample) - np.exp(FAST.decode(FAST.encode(grid))))))
    bound = params.absolute_error_bound(FAST)
    assert error <= bound < 1e-3
    eta = bound + 2.0**-20
    assert MPC_GAUSSIAN_TV == mpc_gaussian_tv(FAST) == eta / (0.7 - eta) + 2 * math.exp(-16)
    assert mpc_gaussian_tv(FAST) > (error + 2.0**-20) / 0.7  # the old, measured-error form is covered


def test_the_sampler_accepts_at_least_the_rate_its_tv_bound_assumes() -> None:
    """mpc_gaussian_tv assumes an acceptance rate >= 0.7: exact rates from MIN_GAUSSIAN_UNITS grid units up (the
    dips sit at integers, where t steps), the limit, and the refusal below."""
    sigmas = np.concatenate([np.arange(MIN_GAUSSIAN_UNITS, 40, 0.25), np.geomspace(40, 2e4, 40)])
    rates = np.array([gaussian_acceptance(float(s)) for s in sigmas])
    assert rates.min() >= 0.7 and gaussian_acceptance(2e4) == pytest.approx(0.760, abs=2e-3)
    assert gaussian_acceptance(3.0) < 0.7  # below the floor the assumption would fail: hence the refusal
    with pytest.raises(ParameterError, match="grid units"):
        run_mpc(lambda s: mpc_discrete_gaussian(s, (4,), sigma=7 * 2.0**-20))
