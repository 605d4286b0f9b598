"""Distributed discrete Laplace (deliverable 3(c)): holders' Pólya shares on ring shares, its pure-DP pricing and
secure aggregation with it. Statistical checks use fixed seeds and reject at ALPHA = 1e-4 (false-failure rate
1e-4 per check, see tests/dp/stats.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import ParameterError, PrecisionError
from mpdp.protocols.aggregation import AggregationSpec, aggregation_client
from mpdp.protocols.distributed_laplace import (
    add_distributed_laplace,
    distributed_laplace_cost,
    distributed_laplace_epsilon,
    laplace_aggregation_aggregator,
    laplace_aggregation_server,
    polya_shift_epsilon,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.dp.stats import ALPHA, chi_square_pvalue, discrete_laplace_pmf

COARSE = FixedPointFormat(64, 3)  # scale 1 -> 8 grid units: cheap draws, a pmf with few bins


def noise_shares(n: int, collusion: int) -> list[np.ndarray]:
    ring = COARSE.ring
    out = []
    for i in range(3):
        share = add_distributed_laplace(ring.zeros((n,)), scale=1.0, parties=3, fmt=COARSE, collusion=collusion,
                                        rng=RandomSource.seeded(f"dl-{collusion}-{i}"))
        out.append(np.rint(COARSE.decode(share) * 8).astype(np.int64))  # grid units
    return out


def test_revealed_sum_is_exactly_a_discrete_laplace_on_the_grid() -> None:
    shares = noise_shares(8000, collusion=0)
    support, pmf = discrete_laplace_pmf(8)
    assert chi_square_pvalue(shares[0] + shares[1] + shares[2], pmf, support) > ALPHA
    assert chi_square_pvalue(shares[0] + shares[1], pmf, support) < ALPHA  # two holders' noise is too little


def test_with_collusion_one_any_two_holders_already_give_the_full_laplace() -> None:
    shares = noise_shares(8000, collusion=1)
    support, pmf = discrete_laplace_pmf(8)
    assert chi_square_pvalue(shares[1] + shares[2], pmf, support) > ALPHA
    total = shares[0] + shares[1] + shares[2]  # variance 3/2 of a DLap(8): chi-square variance test
    q = math.exp(-1 / 8)
    statistic = total.size * total.var() / (1.5 * 2 * q / (1 - q) ** 2)
    assert stats.chi2.sf(statistic, total.size) > 1e-6 and stats.chi2.cdf(statistic, total.size) > 1e-6


def test_pure_dp_pricing_per_observer() -> None:
    base = dict(sensitivity=1.0, scale=2.0, parties=3, dim=4, frac_bits=10)
    exact = (2**10 + 4) / (2.0 * 2**10)
    assert distributed_laplace_epsilon(**base) == pytest.approx(exact, rel=1e-12)
    assert distributed_laplace_epsilon(**base, collusion=1, known_shares=1) == pytest.approx(exact, rel=1e-12)
    holder = distributed_laplace_epsilon(**base, known_shares=1)  # design for outsiders, priced for a holder
    assert holder > exact + 4 * math.lgamma(2 / 3)
    cost = distributed_laplace_cost(**base, collusion=2, known_shares=2)
    assert cost.is_pure and cost.epsilon == pytest.approx(exact, rel=1e-12)
    with pytest.raises(ParameterError, match="knows the noise"):
        distributed_laplace_epsilon(**base, known_shares=3)
    with pytest.raises(ParameterError, match="collusion"):
        distributed_laplace_epsilon(**base, collusion=3)


@pytest.mark.parametrize(("s", "b"), [(Fraction(2, 3), 3), (Fraction(1, 3), 2), (Fraction(1, 2), 6)])
def test_the_bound_for_fewer_honest_shares_holds_against_the_exact_pmf(s: Fraction, b: int) -> None:
    """The exact privacy loss of NB(s) - NB(s) under shifts 1..6 (computed from its pmf) is within the bound."""
    q = math.exp(-1 / b)
    x = stats.nbinom.pmf(np.arange(0, 3000), float(s), 1 - q)
    pz = np.convolve(x, x[::-1])
    mid = pz.size // 2
    window = pz[mid - 200: mid + 200]
    for delta in range(1, 7):
        loss = np.max(np.abs(np.log(window[delta:]) - np.log(window[:-delta])))
        bound = polya_shift_epsilon(delta, b, s, 1)
        assert loss <= bound
        assert loss > delta / b  # fewer shares than one Laplace's worth really do cost more
    assert polya_shift_epsilon(5, 2, Fraction(1), 3) == pytest.approx(2.5)


def test_noise_too_large_for_the_format_and_bad_parties_are_refused() -> None:
    ring = COARSE.ring
    with pytest.raises(PrecisionError, match="fits"):
        add_distributed_laplace(ring.zeros((2,)), scale=2.0**55, parties=2, fmt=COARSE)
    with pytest.raises(ParameterError, match="share holders"):
        add_distributed_laplace(ring.zeros((2,)), scale=1.0, parties=0, fmt=COARSE)


def test_secure_aggregation_with_distributed_laplace() -> None:
    """Three aggregators (the server among them) add Pólya shares; the server gets sum + noise, where the noise
    over 40 rounds' worth of coordinates is a DLap of the right variance (collusion 1: 3/2 of one Laplace)."""
    dim, scale = 400, 0.5
    spec = AggregationSpec(server="s", aggregators=("s", "a1", "a2"), clients={"c1": 3, "c2": 2}, dim=dim,
                           bound=1.0, reveal=False, fmt=COARSE)
    gen = RandomSource.seeded(3)
    data = {"c1": gen.random((3, dim)) * 2 - 1, "c2": gen.random((2, dim)) * 2 - 1}
    roles = {"s": lambda c: laplace_aggregation_server(c, spec, scale=scale),
             "a1": lambda c: laplace_aggregation_aggregator(c, spec, scale=scale),
             "a2": lambda c: laplace_aggregation_aggregator(c, spec, scale=scale),
             "c1": lambda c: aggregation_client(c, spec, data["c1"]),
             "c2": lambda c: aggregation_client(c, spec, data["c2"])}
    run = run_protocol(roles, rng=RandomSource.seeded(4))
    result = run.results["s"]
    exact = np.rint(data["c1"] * 8).sum(0) + np.rint(data["c2"] * 8).sum(0)  # the inputs on the grid
    noise = np.rint(result.total * 8) - exact
    assert np.array_equal(noise, np.rint(noise)) and result.count == 5
    q = math.exp(-1 / 4)
    statistic = dim * noise.var() / (1.5 * 2 * q / (1 - q) ** 2)
    assert stats.chi2.sf(statistic, dim) > 1e-6 and stats.chi2.cdf(statistic, dim) > 1e-6
    with pytest.raises(ParameterError, match="reveal=False"):
        laplace_aggregation_server(None, AggregationSpec(server="s", aggregators=("s", "a"), clients={"c": 1},  # type: ignore[arg-type]
                                                         dim=2, bound=1.0), scale=1.0)
