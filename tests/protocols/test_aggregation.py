"""Secure aggregation: exact within the fixed-point bound, dropout tolerant, uniform views, typed failures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import (
    DomainError,
    MalformedMessageError,
    ParameterError,
    PrecisionError,
    ProtocolAbortError,
    ShapeMismatchError,
)
from mpdp.protocols.aggregation import (
    AggregationSpec,
    aggregation_aggregator,
    aggregation_client,
    aggregation_server,
    simulate_aggregation,
)
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol


def spec_for(clients: dict[str, int], dim: int = 4, **kw) -> AggregationSpec:  # type: ignore[no-untyped-def]
    kw.setdefault("aggregators", ("server", "agg1", "agg2"))
    return AggregationSpec(server="server", clients=clients, dim=dim, bound=1.0, **kw)


def inputs_for(spec: AggregationSpec, rng: RandomSource) -> dict[str, np.ndarray]:
    return {p: 2 * rng.spawn(p).random((k, spec.dim)) - 1 for p, k in spec.clients.items()}


@given(groups=st.lists(st.integers(1, 6), min_size=1, max_size=3), dim=st.integers(1, 5), seed=st.integers(0, 99),
       weighted=st.booleans(), server_aggregates=st.booleans())
@settings(max_examples=25)
def test_sum_equals_plaintext_within_the_fixed_point_bound(groups, dim, seed, weighted, server_aggregates) -> None:  # type: ignore[no-untyped-def]
    rng = RandomSource.seeded(seed)
    aggregators = ("server", "agg1") if server_aggregates else ("agg1", "agg2")
    spec = AggregationSpec(server="server", aggregators=aggregators, clients={f"c{i}": k for i, k in enumerate(groups)},
                           dim=dim, bound=1.0, weighted=weighted, weight_bound=50.0)
    x = inputs_for(spec, rng)
    w = {p: np.floor(rng.spawn("w" + p).random(k) * 50) for p, k in spec.clients.items()} if weighted else None
    result = simulate_aggregation(spec, x, w, rng=rng).results["server"]
    if weighted:
        assert w is not None
        exact = sum((x[p] * w[p][:, None]).sum(0) for p in x)
        assert result.weight_total == pytest.approx(sum(v.sum() for v in w.values()), abs=spec.error_bound)
    else:
        exact = sum(v.sum(0) for v in x.values())
    assert np.max(np.abs(result.total - exact)) <= spec.error_bound
    assert result.count == spec.total_clients and result.dropped == {}


def test_weighted_average_is_the_record_weighted_mean(rng: RandomSource) -> None:
    spec = spec_for({"a": 1, "b": 1, "c": 1}, dim=3, weighted=True, weight_bound=10_000.0)
    x = {"a": np.array([0.1, 0.2, 0.3]), "b": np.array([-0.5, 0.0, 1.0]), "c": np.array([1.0, 1.0, -1.0])}
    n = {"a": [4000.0], "b": [3000.0], "c": [1000.0]}
    result = simulate_aggregation(spec, x, n, rng=rng).results["server"]
    expected = (4000 * x["a"] + 3000 * x["b"] + 1000 * x["c"]) / 8000
    assert np.allclose(result.mean, expected, atol=spec.error_bound / 8000 * 2)


@pytest.mark.parametrize("case", ["none", "one", "max"])
def test_dropouts_up_to_the_threshold_leave_the_survivors_sum(case: str, rng: RandomSource) -> None:
    spec = spec_for({"g": 20, "solo": 1, "late": 1}, max_dropouts=4)
    x = inputs_for(spec, rng)
    lost: dict[str, dict[str, list[int]]] = {}
    absent: tuple[str, ...] = ()
    if case == "one":
        lost = {"g": {"agg2": [7]}}                       # reached server and agg1, not agg2
    elif case == "max":
        lost = {"g": {"agg1": [0, 3], "agg2": [3, 19]}}    # rows 0, 3, 19 of g
        absent = ("solo",)                                  # a whole party never shows up
    result = simulate_aggregation(spec, x, rng=rng, lost=lost, absent=absent).results["server"]
    gone = {"none": {}, "one": {"g": [7]}, "max": {"g": [0, 3, 19], "solo": [0]}}[case]
    assert result.dropped == gone
    keep = np.setdiff1d(np.arange(20), gone.get("g", []))
    exact = x["g"][keep].sum(0) + x["late"].sum(0) + (0 if "solo" in gone else x["solo"].sum(0))
    assert result.count == 22 - sum(len(v) for v in gone.values())
    assert np.max(np.abs(result.total - exact)) <= spec.error_bound


def test_one_dropout_beyond_the_threshold_aborts_with_a_typed_error(rng: RandomSource) -> None:
    spec = spec_for({"g": 20, "solo": 1}, max_dropouts=4)
    with pytest.raises(ProtocolAbortError, match=r"5 of 21 clients dropped out \(g: 4, solo: 1\), more than the 4"):
        simulate_aggregation(spec, inputs_for(spec, rng), rng=rng, lost={"g": {"agg1": [1, 2, 3, 4]}},
                             absent=("solo",))


def test_shares_stay_with_the_aggregators_when_not_revealed(rng: RandomSource) -> None:
    spec = spec_for({"g": 5}, reveal=False, aggregators=("server", "agg1"))
    x = inputs_for(spec, rng)
    run = simulate_aggregation(spec, x, rng=rng)
    ring = spec.fmt.ring
    total = ring.add(run.results["server"].share, run.results["agg1"].share)
    assert np.max(np.abs(spec.fmt.decode(total) - x["g"].sum(0))) <= spec.error_bound
    assert run.results["agg1"].count == 5


def test_an_aggregators_view_is_uniform_whatever_the_inputs() -> None:
    """Each aggregator's shares are uniform in Z_2^64 for extreme and for zero inputs alike.

    Chi-square test of the top byte of 4,000 x 8 share words against uniform, and a two-sample test between
    the views for x = +bound and x = 0; each at alpha = 1e-4, so a false failure has probability < 1e-3.
    """
    spec = spec_for({"g": 4000}, dim=8, aggregators=("server", "agg1"))
    views = {}
    for label, value in (("max", 1.0), ("zero", 0.0)):
        def capture(comm):  # type: ignore[no-untyped-def]
            return comm.recv("g", label="agg.share")["shares"]

        x = np.full((4000, 8), value)
        run = run_protocol({"g": lambda c, x=x: aggregation_client(c, spec, x), "server": capture, "agg1": capture},
                           rng=RandomSource.seeded(label))
        views[label] = run.results
    for label, view in views.items():
        for agg, shares in view.items():
            if agg == "g":
                continue
            top = (shares >> np.uint64(56)).astype(np.int64).ravel()
            counts = np.bincount(top, minlength=256)
            assert stats.chisquare(counts).pvalue > 1e-4, (label, agg)
    for agg in ("server", "agg1"):
        a = (views["max"][agg] >> np.uint64(40)).astype(np.float64).ravel()
        b = (views["zero"][agg] >> np.uint64(40)).astype(np.float64).ravel()
        assert stats.ks_2samp(a, b).pvalue > 1e-4


def test_bad_inputs_are_refused_with_typed_errors(rng: RandomSource) -> None:
    spec = spec_for({"g": 2})
    with pytest.raises(DomainError, match="bound = 1"):
        simulate_aggregation(spec, {"g": np.full((2, 4), 1.5)}, rng=rng)
    with pytest.raises(ShapeMismatchError, match=r"\(2, 4\)"):
        simulate_aggregation(spec, {"g": np.zeros((2, 3))}, rng=rng)
    with pytest.raises(PrecisionError, match="aggregate capacity"):
        AggregationSpec(server="s", aggregators=("s", "a"), clients={"g": 50_000}, dim=2, bound=2.0**30)
    with pytest.raises(ParameterError, match="two or more distinct"):
        AggregationSpec(server="s", aggregators=("s",), clients={"g": 1}, dim=2, bound=1.0)
    with pytest.raises(ParameterError, match="max_dropouts"):
        AggregationSpec(server="s", aggregators=("s", "a"), clients={"g": 3}, dim=2, bound=1.0, max_dropouts=3)
    with pytest.raises(ParameterError, match="not server or aggregator"):
        AggregationSpec(server="s", aggregators=("s", "a"), clients={"a": 3}, dim=2, bound=1.0)
    high = AggregationSpec(server="s", aggregators=("s", "a"), clients={"g": 50_000}, dim=2, bound=2.0**30,
                           fmt=FixedPointFormat(128, 40))
    assert high.total_clients == 50_000


def test_a_malformed_share_message_names_its_sender(rng: RandomSource) -> None:
    spec = spec_for({"g": 2}, aggregators=("server", "agg1"))

    def bad_client(comm):  # type: ignore[no-untyped-def]
        for agg in spec.aggregators:
            comm.send(agg, {"rows": np.arange(2, dtype=np.int64), "shares": np.zeros((2, 9), np.uint64)},
                      label="agg.share")

    roles = {"server": lambda c: aggregation_server(c, spec), "agg1": lambda c: aggregation_aggregator(c, spec),
             "g": bad_client}
    with pytest.raises(MalformedMessageError, match="shares from g"):
        run_protocol(roles, rng=rng)


def test_an_aggregator_that_drops_out_aborts_the_round_naming_it(rng: RandomSource) -> None:
    spec = spec_for({"g": 3})
    x = inputs_for(spec, rng)
    roles = {"server": lambda c: aggregation_server(c, spec), "agg1": lambda c: aggregation_aggregator(c, spec),
             "agg2": lambda c: None, "g": lambda c: aggregation_client(c, spec, x["g"])}
    with pytest.raises(ProtocolAbortError, match="aggregator agg2 dropped out"):
        run_protocol(roles, rng=rng)


@pytest.mark.parametrize("gone", [(), ("agg2",), ("agg1", "agg2")])
def test_shamir_aggregation_survives_aggregator_dropouts_up_to_the_threshold(gone: tuple[str, ...]) -> None:
    """t = 1 of A = 3 aggregators: any two finish the round; with one left the round aborts by name."""
    rng = RandomSource.seeded(31)
    spec = spec_for({"g": 30, "solo": 1}, threshold=1, max_dropouts=2)
    x = inputs_for(spec, rng)
    roles = {"server": lambda c: aggregation_server(c, spec),
             "g": lambda c: aggregation_client(c, spec, x["g"], lost={"agg1": [4]}),
             "solo": lambda c: aggregation_client(c, spec, x["solo"])}
    for agg in ("agg1", "agg2"):
        roles[agg] = (lambda c: None) if agg in gone else (lambda c: aggregation_aggregator(c, spec))
    if len(gone) == 2:
        with pytest.raises(ProtocolAbortError, match=r"fewer than the threshold \+ 1 = 2"):
            run_protocol(roles, rng=rng)
        return
    result = run_protocol(roles, rng=rng).results["server"]
    lost = [] if "agg1" in gone else [4]  # a share that never reached a dropped aggregator does not matter
    keep = np.setdiff1d(np.arange(30), lost)
    exact = x["g"][keep].sum(0) + x["solo"].sum(0)
    assert np.max(np.abs(result.total - exact)) <= spec.error_bound
    assert result.count == 31 - len(lost)


def test_shamir_threshold_is_validated() -> None:
    with pytest.raises(ParameterError, match="threshold"):
        spec_for({"g": 3}, threshold=3)
    with pytest.raises(ParameterError, match="reveal"):
        spec_for({"g": 3}, threshold=1, reveal=False)
