"""The secure DPVI step: equal to float64 within its documented bound, renormalization-invariant, clipping every
record's whole gradient to C, paper 002's Figure 2 failure without renormalization, and its refusals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import HIGH_PRECISION, FixedPointFormat
from mpdp.crypto.renormalization import renormalize
from mpdp.datasets.synthetic import standard_normal
from mpdp.errors import DomainError, ParameterError, PrecisionError
from mpdp.learning.dpvi.features import BetaFeature, CategoricalFeature
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.parties import DataParty, VerticalSetup
from mpdp.learning.dpvi.training import DPVISettings
from mpdp.protocols.mixture_gradient import (
    CLIP_EXP_STEP,
    NORM_LOW_EXP,
    TAIL_FORMAT,
    TAIL_MAX_CLIP_LOSS,
    UNRENORMALIZED_SHIFT,
    GradientPrecision,
    PartyInput,
    clipped_gradient_sum,
    gradient_error_bound,
    release,
)
from mpdp.protocols.mixture_gradient.bounds import grid_floor_of
from mpdp.protocols.mixture_gradient.plan import _release_format
from mpdp.protocols.mpc import MPCSession, TrustedDealer, WithTriplesFrom
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

FEATURES = (BetaFeature("a", (0.0, 10.0)), CategoricalFeature("c", ("x", "y", "z")), BetaFeature("b", (-1.0, 1.0)),
            CategoricalFeature("d", ("u", "v")))
GROUPS = (("a", "c"), ("b", "d"))


def _data(seed: int, n: int) -> np.ndarray:
    rng = RandomSource.seeded(seed)
    values = np.column_stack([10 * rng.random(n), rng.integers(0, 3, n), 2 * rng.random(n) - 1, rng.integers(0, 2, n)])
    values[0] = [0.0, 0.0, -1.0, 0.0]  # domain edges
    return values


def _setup(model: MixtureModel, n: int, clip: float, precision: GradientPrecision | None = None,
           groups: tuple[tuple[str, ...], ...] = GROUPS) -> VerticalSetup:
    settings = DPVISettings(epochs=1, batch_size=1, clip=clip, noise_multiplier=0.0)
    names = ("alice", "bob", "carol")[: len(groups)]
    return VerticalSetup(model, names, groups, n, settings, precision=precision or GradientPrecision())


def _columns(setup: VerticalSetup, values: np.ndarray) -> dict[str, np.ndarray]:
    """Each party's columns of ``values`` (in FEATURES order), by the features the setup gives it."""
    order = [f.name for f in FEATURES]
    return {name: values[:, [order.index(f) for f in group]]
            for name, group in zip(setup.parties, setup.features, strict=True)}


def _secure_sums(setup: VerticalSetup, values: np.ndarray, theta: np.ndarray,
                 batches: list[np.ndarray], *, lift_map: bool = False,
                 composed: bool = False) -> list[tuple[np.ndarray, Any]]:
    """The noise-free released sum of each batch, in the model's order, with each step's public plan (with
    ``lift_map``, the gradient map forced into the wide ring whatever the plan chose; with ``composed``, the
    dealer's correlations through a provider that deals no owned products, as triples from HE would)."""
    columns = _columns(setup, values)

    def role(name: str) -> Any:
        party = DataParty(name, setup, columns[name])

        def run(comm: Any) -> list[tuple[np.ndarray, Any]]:
            session, provider = party.open_session(comm)
            if composed:
                session = MPCSession(comm, provider=WithTriplesFrom(provider, rest=provider), parties=setup.parties,
                                     fmt=setup.precision.fmt)
            out = []
            with session:
                for batch in batches:
                    public = setup.step_plan(theta, int(batch.size))
                    if lift_map:
                        public = replace(public, release_fmt=setup.precision.release_fmt)
                    total = clipped_gradient_sum(session, public, party.local_input(theta, batch, public),
                                                 setup.precision)
                    out.append((setup.scatter(release(total, None)), public))
            return out
        return run

    roles: dict[str, Any] = {name: role(name) for name in setup.parties}
    roles["dealer"] = TrustedDealer(parties=setup.parties)
    run = run_protocol(roles, rng=RandomSource.seeded(9))
    return list(run.results["alice"])


def _float_sum(setup: VerticalSetup, values: np.ndarray, theta: np.ndarray, batch: np.ndarray, clip: float,
               *, floored: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """float64 reference on the same renormalized factors (floored with ``floor_factors``; records whose S_i lies
    below the normalisation's domain dropped): (clipped sum, per-record norms, min kept S_i)."""
    model = setup.model
    K = model.components
    pi = model.weights(theta)
    params = setup.precision.renormalization(len(setup.parties))
    blocks = setup.blocks()
    cols = list(_columns(setup, values[batch]).values())
    q = np.tile(pi, (batch.size, 1))
    for block, v in zip(blocks, cols, strict=True):
        logs = block.log_densities(theta, block.encode(v))
        q = q * (renormalize(logs, params)[0] if floored else np.exp(logs - logs.max(axis=1, keepdims=True)))
    sums = q.sum(axis=1)
    kept = sums >= 2.0 ** setup.precision.sum_low_exp() if floored else np.ones(batch.size, dtype=bool)
    r = q / np.maximum(sums, 1e-300)[:, None]
    min_sum = float(sums[kept].min()) if kept.any() else 1.0
    grads = np.zeros((batch.size, model.dim))
    grads[:, model.weights_slice] = (r - pi)[:, : K - 1]
    for block, v in zip(blocks, cols, strict=True):
        g = block.per_example_grads(theta, block.encode(v))
        offset = 0
        for f in block.features:
            width = model.features[f].n_params
            grads[:, model.slice(f)] = (r[:, :, None] * g[:, :, offset:offset + width]).reshape(batch.size, -1)
            offset += width
    norms = np.linalg.norm(grads, axis=1)
    clipped = grads * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
    return clipped[kept].sum(axis=0), norms, min_sum


@settings(max_examples=4)
@given(seed=st.integers(0, 10_000), components=st.sampled_from([2, 3]), batch=st.integers(1, 10),
       scale=st.sampled_from([0.3, 1.5]), all_wide=st.booleans())
# a clipping domain of 2^24, where the Z_2^64 tail would leave C' 1.1e-3 below C: plan_step runs it wide
@example(seed=166, components=3, batch=1, scale=1.5, all_wide=False)
def test_secure_gradient_equals_float_within_bound(seed: int, components: int, batch: int, scale: float,
                                                   all_wide: bool) -> None:
    # the default (Z_2^64 tail after the normalisation) and the all-Z_2^128 step (tail_fmt=None)
    model = MixtureModel(FEATURES, components=components)
    n = 12
    values = _data(seed, n)
    theta = scale * standard_normal(model.dim, rng=RandomSource.seeded(seed + 1))
    setup = _setup(model, n, clip=1.0, precision=GradientPrecision(tail_fmt=None) if all_wide else None)
    idx = np.sort(RandomSource.seeded(seed + 2).permutation(n)[:batch]).astype(np.int64)
    ((secure, public),) = _secure_sums(setup, values, theta, [idx])
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(components - 1)] + [b.indices for b in setup.blocks()])
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    assert np.all(np.abs(secure[order] - reference[order]) <= bound)
    assert np.all(bound <= gradient_error_bound(public, setup.precision))  # the floor is the worst case
    # the fixed-point margin is tiny at f = 48 (beyond the clipping factor's polynomial error) and small at f = 24
    eps_c = public.clip_params.max_error_bound(public.tail, NORM_LOW_EXP)
    assert public.clip <= 1.0 and public.clip > 1.0 - (eps_c + 1e-5 if all_wide else TAIL_MAX_CLIP_LOSS)


@pytest.mark.parametrize("all_wide", [False, True])
def test_providers_without_owned_products_give_the_step_within_the_same_bound(all_wide: bool) -> None:
    # the parties' factors and statistics then enter as trivially shared operands of ordinary products
    model = MixtureModel(FEATURES, components=3)
    values = _data(4, 12)
    theta = 0.3 * standard_normal(model.dim, rng=RandomSource.seeded(5))
    setup = _setup(model, 12, clip=1.0, precision=GradientPrecision(tail_fmt=None) if all_wide else None)
    idx = np.arange(0, 12, 2, dtype=np.int64)
    ((secure, public),) = _secure_sums(setup, values, theta, [idx], composed=True)
    ((owned, _),) = _secure_sums(setup, values, theta, [idx])
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(2)] + [b.indices for b in setup.blocks()])
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    assert np.all(np.abs(secure[order] - reference[order]) <= bound)
    assert np.all(np.abs(owned[order] - reference[order]) <= bound)
    assert not np.array_equal(secure, owned)  # other correlations: other roundings


@pytest.mark.parametrize("all_wide", [False, True])
def test_three_parties_chain_their_owned_factors_within_the_bound(all_wide: bool) -> None:
    # the factors' products chain through two owned products (carol's shared trivially, bob's then alice's
    # multiplied in) and the statistics' weighted sums take three owned blocks
    model = MixtureModel(FEATURES, components=3)
    values = _data(8, 12)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(9))
    setup = _setup(model, 12, clip=1.0, precision=GradientPrecision(tail_fmt=None) if all_wide else None,
                   groups=(("a",), ("c", "b"), ("d",)))
    idx = np.arange(1, 12, 2, dtype=np.int64)
    ((secure, public),) = _secure_sums(setup, values, theta, [idx])
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(2)] + [b.indices for b in setup.blocks()])
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    assert np.all(np.abs(secure[order] - reference[order]) <= bound)


@settings(max_examples=20)
@given(logs=st.lists(st.floats(-800, 50), min_size=12, max_size=12).map(lambda v: np.array(v).reshape(3, 4)),
       shift=st.lists(st.floats(-500, 500), min_size=3, max_size=3).map(np.array))
def test_renormalization_leaves_responsibilities_unchanged(logs: np.ndarray, shift: np.ndarray) -> None:
    # e = exp(a - max_k a): the constants cancel in r = pi e / sum_k pi e, whatever the records' offsets
    from mpdp.crypto.renormalization import RenormalizationParams

    pi = np.array([0.1, 0.2, 0.3, 0.4])
    params = RenormalizationParams(parties=1)
    e1, _ = renormalize(logs, params)
    e2, _ = renormalize(logs + shift[:, None], params)
    joint = logs + np.log(pi)
    ref = np.exp(joint - joint.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    for e in (e1, e2):
        r = e * pi / (e * pi).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(r, ref, rtol=1e-12, atol=1e-300)


def test_renormalized_secure_step_matches_unrenormalized_on_moderate_densities() -> None:
    # where nothing underflows, the MPC result is the same with and without the constants (within the bound)
    model = MixtureModel(FEATURES, components=3)
    values = _data(3, 8)
    theta = 0.2 * standard_normal(model.dim, rng=RandomSource.seeded(4))
    idx = np.arange(8, dtype=np.int64)
    setup = _setup(model, 8, 1.0)
    with_r = _secure_sums(setup, values, theta, [idx])[0]
    plain = GradientPrecision(renormalize=False)
    without = _secure_sums(_setup(model, 8, 1.0, plain), values, theta, [idx])[0]
    # each within its bound of the float step, for its own smallest S_i (without renormalization: the factors
    # min(exp(a) 2^-8, 1), so S_i is smaller by the records' density scale)
    _, _, low = _float_sum(setup, values, theta, idx, with_r[1].clip)
    cols = [values[idx][:, :2], values[idx][:, 2:]]
    q = np.tile(model.weights(theta), (idx.size, 1))
    for block, v in zip(setup.blocks(), cols, strict=True):
        q = q * np.minimum(np.exp(block.log_densities(theta, block.encode(v)) - UNRENORMALIZED_SHIFT * np.log(2)), 1)
    bound = gradient_error_bound(with_r[1], GradientPrecision(), min_sum=low) \
        + gradient_error_bound(without[1], plain, min_sum=float(q.sum(axis=1).min()))
    model_order = np.concatenate([np.arange(2)] + [b.indices for b in setup.blocks()])
    assert np.all(np.abs(with_r[0][model_order] - without[0][model_order]) <= bound)


@pytest.mark.parametrize("all_wide", [False, True])
def test_clipping_bounds_every_per_example_norm(all_wide: bool) -> None:
    # large Beta parameters make per-record gradients huge; each single-record release must stay within C
    model = MixtureModel(FEATURES, components=2)
    values = _data(5, 6)
    theta = standard_normal(model.dim, rng=RandomSource.seeded(6))
    for f in (0, 2):
        theta[model.slice(f)] = 3.0  # a = b = e^3: every record's gradient is over 14 C
    clip = 0.5
    setup = _setup(model, 6, clip, GradientPrecision(tail_fmt=None) if all_wide else None)
    batches = [np.array([i], dtype=np.int64) for i in range(6)]
    results = _secure_sums(setup, values, theta, batches)
    norms = [np.linalg.norm(secure) for secure, _ in results]
    _, raw, _ = _float_sum(setup, values, theta, np.arange(6), clip)
    assert np.min(raw) > 10 * clip  # every record is clipped ...
    assert max(norms) <= clip  # ... and no computed contribution exceeds C
    inner = results[0][1].clip
    assert results[0][1].tail.ring_bits == (128 if all_wide else 64)  # this clipping domain (2^20) keeps the tail
    assert min(norms) >= inner * (1 - 1e-4)  # ... but to C' (the computation's margin) closely
    # C' itself: within 1e-5 of C at f = 48 beyond the clipping factor's polynomial error (3.3e-5 with the
    # default cubic on half-power buckets); the f = 24 tail gives up ~3e-4 here (the weights' roundings times
    # gradients over 14 C, and the bucket constants' relative precision), below TAIL_MAX_CLIP_LOSS
    eps_c = results[0][1].clip_params.max_error_bound(results[0][1].tail, NORM_LOW_EXP)
    assert inner >= clip * (1 - (eps_c + 1e-5 if all_wide else TAIL_MAX_CLIP_LOSS))


def test_without_renormalization_underflowing_records_teach_nothing() -> None:
    # paper 002, Figure 2: exp(a) of each party rounds to 0 in fixed point, S_i = 0, the gradient vanishes
    model = MixtureModel(FEATURES, components=2)
    values = _data(7, 4)
    theta = np.zeros(model.dim)
    theta[model.slice(1)] = [-40.0, 0.0, -40.0, 0.0]  # log p(c = x) = -40-ish for both components
    theta[model.slice(3)] = [-40.0, -40.0]  # log p(d = u) ~ -40
    values[:, 1] = 0.0
    values[:, 3] = 0.0
    idx = np.arange(4, dtype=np.int64)
    plain = _secure_sums(_setup(model, 4, 1.0, GradientPrecision(renormalize=False)), values, theta, [idx])[0][0]
    renormalized = _secure_sums(_setup(model, 4, 1.0), values, theta, [idx])[0][0]
    components = np.concatenate([b.indices for b in _setup(model, 4, 1.0).blocks()])
    assert np.all(np.abs(plain[components]) < 1e-6)  # only the weights move (r = 0, so r - pi = -pi)
    assert np.linalg.norm(renormalized[components]) > 0.5


def test_tail_formats_that_cannot_hold_the_values_are_refused() -> None:
    assert GradientPrecision().tail == TAIL_FORMAT and GradientPrecision().release_fmt == HIGH_PRECISION
    assert GradientPrecision(tail_fmt=None).tail == HIGH_PRECISION
    with pytest.raises(ParameterError, match="tail_fmt"):
        GradientPrecision(tail_fmt=64)  # type: ignore[arg-type]
    with pytest.raises(PrecisionError, match="no larger than"):  # wider than the head
        GradientPrecision(fmt=FixedPointFormat(64, 30), floor_log2=-20.0, release_bits=20,
                          tail_fmt=FixedPointFormat(128, 24))
    with pytest.raises(PrecisionError, match="no larger than"):
        GradientPrecision(tail_fmt=FixedPointFormat(128, 50))
    with pytest.raises(PrecisionError, match="f >= 16"):
        GradientPrecision(tail_fmt=FixedPointFormat(64, 12), release_bits=20)
    with pytest.raises(PrecisionError, match="release_bits"):  # the grid at most 20 bits finer than the tail
        GradientPrecision(tail_fmt=FixedPointFormat(64, 16), release_bits=37)
    assert GradientPrecision(tail_fmt=FixedPointFormat(64, 16), release_bits=36).release_bits == 36
    # T^T w must fit the tail's products: B max|T| < 2^14 at f = 24
    model = MixtureModel(FEATURES, components=2)
    setup = _setup(model, 5000, 1.0)
    theta = np.zeros(model.dim)
    with pytest.raises(PrecisionError, match="smaller minibatches"):
        setup.step_plan(theta, 5000)
    wide = _setup(model, 5000, 1.0, GradientPrecision(tail_fmt=None))
    assert wide.step_plan(theta, 5000).batch == 5000


def test_tail_and_all_wide_steps_agree_and_the_tail_sends_less() -> None:
    model = MixtureModel(FEATURES, components=3)
    values = _data(11, 10)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(12))
    idx = np.arange(10, dtype=np.int64)
    tail_setup, wide_setup = _setup(model, 10, 1.0), _setup(model, 10, 1.0, GradientPrecision(tail_fmt=None))
    (tail, tail_public), = _secure_sums(tail_setup, values, theta, [idx])
    (wide, wide_public), = _secure_sums(wide_setup, values, theta, [idx])
    order = np.concatenate([np.arange(2)] + [b.indices for b in tail_setup.blocks()])
    bound = gradient_error_bound(tail_public, tail_setup.precision) + gradient_error_bound(wide_public,
                                                                                           wide_setup.precision)
    # both from their float references on nearly the same C' (the tail's is a little smaller)
    reference_gap = np.abs(_float_sum(tail_setup, values, theta, idx, tail_public.clip)[0]
                           - _float_sum(wide_setup, values, theta, idx, wide_public.clip)[0])
    assert np.all(np.abs(tail[order] - wide[order]) <= bound + reference_gap[order])
    assert 0 < wide_public.clip - tail_public.clip < 1e-4


def test_out_of_bound_contributions_are_refused_by_their_owner() -> None:
    model = MixtureModel(FEATURES, components=2)
    setup = _setup(model, 4, 1.0)
    theta = np.zeros(model.dim)
    public = setup.step_plan(theta, 2)

    def role(name: str) -> Any:
        def run(comm: Any) -> None:
            with MPCSession.with_dealer(comm, parties=setup.parties, fmt=setup.precision.fmt) as session:
                bad = PartyInput(factors=np.full((2, 2), 1.5), sq_norms=np.zeros((2, 2)),
                                 stats=np.zeros((2, public.stat_counts[session.index])))
                clipped_gradient_sum(session, public, bad, setup.precision)
        return run

    roles: dict[str, Any] = {name: role(name) for name in setup.parties}
    roles["dealer"] = TrustedDealer(parties=setup.parties)
    with pytest.raises(DomainError, match=r"factors"):
        run_protocol(roles, rng=RandomSource.seeded(1))


def test_sharp_models_keep_the_gradient_map_exact_in_the_wide_ring() -> None:
    """Concentrated Beta components (a, b ~ 150) give the gradient map constants in the hundreds: with a
    minibatch of 100, their products with the weighted sums exceed what the Z_2^64 tail can hold with 20
    fractional bits for the constants (Adult reaches this after about three epochs). The sums are lifted back
    into Z_2^128 for the map: the plan is accepted and the step still equals float64 within its bound. Sharper
    still, the tail itself runs in Z_2^128. The clipping domain's exponent moves on a coarse grid
    (CLIP_EXP_STEP), so nearby thetas share one plan."""
    model = MixtureModel(FEATURES, components=2)
    n = 100
    values = _data(21, n)
    theta = np.full(model.dim, 5.0)
    setup = _setup(model, n, clip=1.0)
    public = setup.step_plan(theta, n)
    assert public.clip_params.high_exp % CLIP_EXP_STEP == 0
    # the map's constants do not fit the Z_2^64 tail: the sums are lifted into Z_2^128 for the map, while the tail
    # itself stays in Z_2^64 (here it costs less than TAIL_MAX_CLIP_LOSS of C)
    assert public.tail == TAIL_FORMAT and public.release_fmt == HIGH_PRECISION
    assert 0 < 1.0 - public.clip <= TAIL_MAX_CLIP_LOSS
    # sharper still, the Z_2^64 tail would cost more than TAIL_MAX_CLIP_LOSS of C: the step runs wide
    sharper = setup.step_plan(np.full(model.dim, 7.0), n)
    assert sharper.tail == HIGH_PRECISION and sharper.clip >= 1.0 - TAIL_MAX_CLIP_LOSS
    assert setup.step_plan(np.zeros(model.dim), n).tail == TAIL_FORMAT  # a flat model keeps the tail
    assert setup.step_plan(theta * 1.01, n).clip_params.high_exp == public.clip_params.high_exp
    idx = np.arange(n, dtype=np.int64)
    ((secure, public),) = _secure_sums(setup, values, theta, [idx])
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(1)] + [b.indices for b in setup.blocks()])
    assert np.all(np.abs(secure[order] - reference[order]) <= gradient_error_bound(public, setup.precision,
                                                                                    min_sum=min_sum))


def test_the_gradient_map_runs_in_the_tail_while_it_fits() -> None:
    """Early in training the map's constants are small: the map, the noise and the opening run in the Z_2^64 tail
    (no lift into Z_2^128), and the release equals float64 within the same bound as the lifted map's. Large
    constants, a wide tail or noise that could wrap the tail's ring keep the map in the wide ring."""
    model = MixtureModel(FEATURES, components=3)
    n = 20
    values = _data(31, n)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(32))
    setup = _setup(model, n, clip=1.0)
    idx = np.arange(n, dtype=np.int64)
    ((in_tail, public),) = _secure_sums(setup, values, theta, [idx])
    ((lifted, lifted_public),) = _secure_sums(setup, values, theta, [idx], lift_map=True)
    assert public.release_fmt == TAIL_FORMAT and lifted_public.release_fmt == HIGH_PRECISION
    reference, _, min_sum = _float_sum(setup, values, theta, idx, public.clip)
    order = np.concatenate([np.arange(2)] + [b.indices for b in setup.blocks()])
    bound = gradient_error_bound(public, setup.precision, min_sum=min_sum)
    assert np.all(np.abs(in_tail[order] - reference[order]) <= bound)
    assert np.all(np.abs(lifted[order] - reference[order]) <= bound)
    # a wide tail, noise that could reach 2^62 grid units, constants without 20 fractional bits in the tail
    assert setup.step_plan(np.full(model.dim, 5.0), 100).release_fmt == HIGH_PRECISION
    noisy = VerticalSetup(model, ("alice", "bob"), GROUPS, n,
                          DPVISettings(epochs=1, batch_size=1, clip=1.0, noise_multiplier=2.0**27))
    assert noisy.step_plan(theta, 1).release_fmt == HIGH_PRECISION
    assert _setup(model, n, clip=1.0).step_plan(theta, 1).release_fmt == TAIL_FORMAT
    big = [replace(m, coef_stat=m.coef_stat * 1e6) for m in public.maps]
    fmt, extra = _release_format((public.weights, big, 1.0, 1), TAIL_FORMAT, setup.precision, 1.0, 0.0)
    assert fmt == HIGH_PRECISION and extra == grid_floor_of((public.weights, big, 1.0, 1), HIGH_PRECISION)


def test_a_worst_case_record_gets_the_right_clipping_factor() -> None:
    """One record whose parties report every N_ikj at its public bound, with all its mass on one component and
    the weights elsewhere: the largest n~ the plan admits. The computed clipping factor (read from the released
    weight coordinates) equals 1 / sqrt(n) within the factor's documented error, in both tails."""
    model = MixtureModel(FEATURES, components=3)
    theta = np.full(model.dim, 3.0)
    theta[model.weights_slice] = [-4.0, 4.0]  # pi concentrated on the last two components, the record on the first
    for wide in (False, True):
        setup = _setup(model, 4, 0.5, GradientPrecision(tail_fmt=None) if wide else None)
        public = setup.step_plan(theta, 1)
        pi = public.weights

        def role(name: str, public: Any = public, setup: VerticalSetup = setup) -> Any:
            def run(comm: Any) -> np.ndarray:
                with MPCSession.with_dealer(comm, parties=setup.parties, fmt=setup.precision.fmt) as session:
                    j = session.index
                    mine = PartyInput(factors=np.array([[1.0, 0.0, 0.0]]),
                                      sq_norms=np.full((1, 3), public.sq_norm_bounds[j]),
                                      stats=np.zeros((1, public.stat_counts[j])))
                    return release(clipped_gradient_sum(session, public, mine, setup.precision), None)
            return run

        roles: dict[str, Any] = {name: role(name) for name in setup.parties}
        roles["dealer"] = TrustedDealer(parties=setup.parties)
        out = run_protocol(roles, rng=RandomSource.seeded(3)).results["alice"]
        n = sum(public.sq_norm_bounds) + (float(np.sum((np.eye(3)[0] - pi)[:2] ** 2)) / public.clip**2)
        assert n <= 2.0**public.clip_params.high_exp
        expected = 1.0 / np.sqrt(max(1.0, n)) * (np.eye(3)[0] - pi)[:2]
        eps = public.clip_params.max_error_bound(public.tail, -3) + 1e-4
        assert np.allclose(out[:2], expected, rtol=eps, atol=2.0 ** -public.tail.frac_bits * 8)


def test_records_below_the_normalisation_domain_contribute_nothing_and_no_factor_is_floored() -> None:
    """By default no party floors its factors (paper 002's Algorithm 4 floor biases the model, see
    GradientPrecision.floor_factors); a record whose parties rate every component as impossible between them
    (S_i = 0 < 2^sum_low_exp) then contributes exactly nothing, in the MPC step as in the float reference."""
    assert GradientPrecision().renormalization(2).floor == 0.0
    assert GradientPrecision(floor_factors=True).renormalization(2).floor == 2.0**-18
    with pytest.raises(ParameterError, match="floor_factors"):
        GradientPrecision(floor_factors=1)  # type: ignore[arg-type]
    model = MixtureModel(FEATURES, components=2)
    theta = 0.5 * standard_normal(model.dim, rng=RandomSource.seeded(31))
    setup = _setup(model, 4, 1.0)
    public = setup.step_plan(theta, 2)
    rows = {"alice": [[1.0, 0.5], [1.0, 0.0]], "bob": [[0.25, 1.0], [0.0, 1.0]]}  # record 1: S = 0

    def role(name: str, batch: slice) -> Any:
        def run(comm: Any) -> np.ndarray:
            with MPCSession.with_dealer(comm, parties=setup.parties, fmt=setup.precision.fmt) as session:
                j = session.index
                plan = setup.step_plan(theta, batch.stop - batch.start)
                mine = PartyInput(factors=np.array(rows[name])[batch],
                                  sq_norms=np.full((batch.stop - batch.start, 2), 0.5 * plan.sq_norm_bounds[j]),
                                  stats=np.full((batch.stop - batch.start, plan.stat_counts[j]),
                                                0.5 * plan.stat_bounds[j]))
                return release(clipped_gradient_sum(session, plan, mine, setup.precision), None)
        return run

    def released(batch: slice) -> np.ndarray:
        roles: dict[str, Any] = {name: role(name, batch) for name in setup.parties}
        roles["dealer"] = TrustedDealer(parties=setup.parties)
        return np.asarray(run_protocol(roles, rng=RandomSource.seeded(4)).results["alice"])

    alone = released(slice(1, 2))
    assert np.all(alone == 0.0)  # w = c = 0 exactly: the bucket of a zero maximum is empty
    both, first = released(slice(0, 2)), released(slice(0, 1))
    assert np.all(np.abs(both - first) <= gradient_error_bound(public, setup.precision))
    assert np.linalg.norm(first) > 0.1
