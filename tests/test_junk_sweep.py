"""The junk-input sweep (issue 42): every public entry point a user calls in ``crypto/``, ``dp/``, ``protocols/``
(and the codec's ``decode``) answers junk with an :class:`~mpdp.errors.MpdpError`, never a raw Python exception.

Each entry below puts one hypothesis-drawn junk value (wrong types, NaN, infinities, huge ints, empty and ragged
arrays, wrong dtypes: :data:`tests.strategies.junk`) into one argument of one call, the other arguments valid.
The call may succeed (junk that happens to be valid input, e.g. an int array where ints are expected) or raise
an ``MpdpError``; anything else fails the test with the call and the value. What a successful call returns is
checked by each module's own tests.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.errors import MpdpError
from mpdp.randomness import RandomSource
from tests.strategies import junk

Call = Callable[[Any], Any]


def _rng() -> RandomSource:
    return RandomSource.seeded("junk")


@functools.cache
def _paillier() -> Any:
    from mpdp.crypto.paillier import generate_keypair

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return generate_keypair(512, rng=_rng(), insecure_for_tests=True)


@functools.cache
def _ckks() -> Any:
    from mpdp.crypto.ckks import CkksContext, parameters_for_depth

    return CkksContext.generate(parameters_for_depth(1))


def _crypto() -> dict[str, Call]:
    from mpdp.crypto import additive
    from mpdp.crypto.ckks import CkksContext, CkksParameters, CkksVector, parameters_for_depth
    from mpdp.crypto.ckks.dots import PlainColumns, masked_dots
    from mpdp.crypto.correlations import CorrelationSpec
    from mpdp.crypto.fixed_point import FAST, FixedPointFormat
    from mpdp.crypto.paillier import EncryptedArray, FixedPoint, Packing, PaillierPublicKey, decrypt, encrypt
    from mpdp.crypto.paillier.threshold import PartialDecryption
    from mpdp.crypto.prg import AesCtrPrg
    from mpdp.crypto.ring import Z2_128, Z2k, ring_for_bits
    from mpdp.crypto.ristretto import exponentiate, split_elements, validate
    from mpdp.crypto.shamir import MERSENNE_61, MERSENNE_127, PrimeField, ShamirScheme

    codec = FixedPoint(frac_bits=16, max_abs=1.0)
    r64, r128 = Z2k(64), Z2_128()
    one64 = r64.from_int(np.array([1, 2], dtype=np.int64))
    scheme = ShamirScheme(MERSENNE_61, 3, 1)
    return {
        "PrimeField(p)": lambda j: PrimeField(j),
        "PrimeField.array m61": lambda j: MERSENNE_61.array(j),
        "PrimeField.array m127": lambda j: MERSENNE_127.array(j),
        "PrimeField.inverse": lambda j: MERSENNE_61.inverse(j),
        "ShamirScheme(n)": lambda j: ShamirScheme(MERSENNE_61, j, 1),
        "ShamirScheme(t)": lambda j: ShamirScheme(MERSENNE_61, 3, j),
        "ShamirScheme.share": lambda j: scheme.share(j, rng=_rng()),
        "ShamirScheme.reconstruct": lambda j: scheme.reconstruct(j),
        "additive.share secret": lambda j: additive.share(j, r64, 3, rng=_rng()),
        "additive.share parties": lambda j: additive.share(one64, r64, j, rng=_rng()),
        "additive.reconstruct": lambda j: additive.reconstruct(j),
        "ring_for_bits": lambda j: ring_for_bits(j),
        "Z2k(bits)": lambda j: Z2k(j),
        "Z2k.from_int": lambda j: r64.from_int(j),
        "Z2_128.from_int": lambda j: r128.from_int(j),
        "Z2k.check": lambda j: r64.check(j, "x"),
        "Z2_128.check": lambda j: r128.check(j, "x"),
        "Z2k.add_int": lambda j: r64.add_int(one64, j),
        "Z2k.mul_int": lambda j: r64.mul_int(one64, j),
        "Z2_128.mul_int": lambda j: r128.mul_int(r128.from_int(np.array([3])), j),
        "FixedPointFormat(ring_bits)": lambda j: FixedPointFormat(j, 20),
        "FixedPointFormat(frac_bits)": lambda j: FixedPointFormat(64, j),
        "FixedPointFormat.encode": lambda j: FAST.encode(j),
        "FixedPointFormat.encode_constant": lambda j: FAST.encode_constant(j),
        "paillier.FixedPoint(frac_bits)": lambda j: FixedPoint(j, 1.0),
        "paillier.FixedPoint(max_abs)": lambda j: FixedPoint(16, j),
        "paillier.FixedPoint.encode": lambda j: codec.encode(j),
        "paillier.encrypt": lambda j: encrypt(_paillier()[0], j, codec, rng=_rng()),
        "paillier.Packing(slot_bits)": lambda j: Packing(j, 2),
        "paillier.Packing(slots)": lambda j: Packing(20, j),
        "PaillierPublicKey(n)": lambda j: PaillierPublicKey(j),
        "PaillierPublicKey.from_wire": lambda j: PaillierPublicKey.from_wire(j),
        "EncryptedArray.from_wire": lambda j: EncryptedArray.from_wire(j, _paillier()[0]),
        "EncryptedArray.from_wire field": lambda j: EncryptedArray.from_wire(
            dict(encrypt(_paillier()[0], [0.5], codec, rng=_rng()).to_wire(), frac_bits=j), _paillier()[0]),
        "EncryptedArray.from_wire ciphertexts": lambda j: EncryptedArray.from_wire(
            dict(encrypt(_paillier()[0], [0.5], codec, rng=_rng()).to_wire(), ciphertexts=j), _paillier()[0]),
        "EncryptedArray.add_plain": lambda j: encrypt(_paillier()[0], [0.5], codec, rng=_rng()).add_plain(j, codec),
        "EncryptedArray.mul": lambda j: encrypt(_paillier()[0], [0.5], codec, rng=_rng()).mul(j, codec),
        "EncryptedArray.dot": lambda j: encrypt(_paillier()[0], [0.5, 0.25], codec, rng=_rng()).dot(j, codec),
        "paillier.decrypt": lambda j: decrypt(_paillier()[1], j),
        "PartialDecryption.from_wire": lambda j: PartialDecryption.from_wire(j, _paillier()[0]),
        "parameters_for_depth": lambda j: parameters_for_depth(j),
        "CkksParameters.from_wire": lambda j: CkksParameters.from_wire(j),
        "CkksContext.from_wire": lambda j: CkksContext.from_wire(j),
        "CkksContext.from_wire context": lambda j: CkksContext.from_wire(dict(_ckks().to_wire(), context=j)),
        "CkksContext.from_private_bytes": lambda j: CkksContext.from_private_bytes(j, _ckks().params),
        "CkksVector.encrypt": lambda j: CkksVector.encrypt(_ckks(), j),
        "CkksVector.from_wire": lambda j: CkksVector.from_wire(j, _ckks()),
        "CkksVector.from_wire chunks": lambda j: CkksVector.from_wire(
            dict(CkksVector.encrypt(_ckks(), [0.5]).to_wire(), chunks=j), _ckks()),
        "CkksVector.mul_plain": lambda j: CkksVector.encrypt(_ckks(), [0.5, 0.5]).mul_plain(j),
        "CkksVector.dot": lambda j: CkksVector.encrypt(_ckks(), [0.5, 0.5]).dot(j),
        "CkksVector.add_plain": lambda j: CkksVector.encrypt(_ckks(), [0.5, 0.5]).add_plain(j),
        "CkksVector.mul_scalar": lambda j: CkksVector.encrypt(_ckks(), [0.5, 0.5]).mul_scalar(j),
        "ckks PlainColumns": lambda j: PlainColumns(_ckks(), j),
        "ckks masked_dots masks": lambda j: masked_dots(CkksVector.encrypt(_ckks(), [0.5, 0.5]),
                                                        PlainColumns(_ckks(), np.ones((2, 1))), j),
        "AesCtrPrg(key)": lambda j: AesCtrPrg(j),
        "ristretto.validate": lambda j: validate(j),
        "ristretto.split_elements": lambda j: split_elements(j),
        "ristretto.exponentiate scalar": lambda j: exponentiate(bytes(32), j),
        "CorrelationSpec.from_wire": lambda j: CorrelationSpec.from_wire(j),
    }


def _dp() -> dict[str, Call]:
    from mpdp.dp import (
        DiscreteGaussianMechanism,
        DiscreteLaplaceMechanism,
        ExponentialMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        ObjectivePerturbation,
        PrivacyCost,
        bernoulli_exp,
        discrete_gaussian,
        discrete_laplace,
        gamma_norm_noise,
        gaussian_on_grid,
        geometric,
        laplace_on_grid,
    )
    from mpdp.dp.accounting import compose, compose_rho, gaussian_zcdp, pure_dp_to_zcdp, zcdp_epsilon, zcdp_rho_for
    from mpdp.dp.calibration import (
        analytic_gaussian_sigma,
        classic_gaussian_sigma,
        gaussian_delta,
        gaussian_epsilon,
        laplace_scale,
    )
    from mpdp.dp.grid import default_grid_bits, grid_l1_sensitivity, grid_l2_sensitivity, snap_to_grid
    from mpdp.dp.polya import laplace_share, negative_binomial

    rng = _rng
    lap = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    gauss = GaussianMechanism(sensitivity=1.0, sigma=1.0, delta=1e-5, dim=4)
    dlap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1)
    dgauss = DiscreteGaussianMechanism(sensitivity=1.0, sigma=1.0, delta=1e-5)
    return {
        "bernoulli_exp gamma": lambda j: bernoulli_exp(j, 2, rng=rng()),
        "geometric gamma": lambda j: geometric(j, 2, rng=rng()),
        "geometric size": lambda j: geometric(Fraction(1, 3), j, rng=rng()),
        "discrete_laplace scale": lambda j: discrete_laplace(j, 2, rng=rng()),
        "discrete_laplace size": lambda j: discrete_laplace(2, j, rng=rng()),
        "discrete_gaussian sigma2": lambda j: discrete_gaussian(j, 2, rng=rng()),
        "laplace_share scale": lambda j: laplace_share(j, 3, 2, rng=rng()),
        "laplace_share parts": lambda j: laplace_share(2, j, 2, rng=rng()),
        "negative_binomial r": lambda j: negative_binomial(j, Fraction(1, 2), 2, rng=rng()),
        "laplace_on_grid scale": lambda j: laplace_on_grid(j, 2, grid_bits=10, rng=rng()),
        "laplace_on_grid bits": lambda j: laplace_on_grid(1.0, 2, grid_bits=j, rng=rng()),
        "gaussian_on_grid sigma": lambda j: gaussian_on_grid(j, 2, grid_bits=10, rng=rng()),
        "snap_to_grid": lambda j: snap_to_grid(j, 10),
        "default_grid_bits": lambda j: default_grid_bits(j),
        "grid_l1_sensitivity": lambda j: grid_l1_sensitivity(j, 10, 2),
        "grid_l2_sensitivity bits": lambda j: grid_l2_sensitivity(1.0, j, 2),
        "LaplaceMechanism(epsilon)": lambda j: LaplaceMechanism(epsilon=j, sensitivity=1.0),
        "LaplaceMechanism(sensitivity)": lambda j: LaplaceMechanism(epsilon=1.0, sensitivity=j),
        "LaplaceMechanism(grid_bits)": lambda j: LaplaceMechanism(epsilon=1.0, sensitivity=1.0, grid_bits=j),
        "LaplaceMechanism.release": lambda j: lap.release(j, rng=rng()),
        "LaplaceMechanism.release label": lambda j: lap.release(1.0, rng=rng(), label=j),
        "GaussianMechanism(sigma)": lambda j: GaussianMechanism(sensitivity=1.0, sigma=j, delta=1e-5),
        "GaussianMechanism(delta)": lambda j: GaussianMechanism(sensitivity=1.0, sigma=1.0, delta=j),
        "GaussianMechanism(dim)": lambda j: GaussianMechanism(sensitivity=1.0, sigma=1.0, delta=1e-5, dim=j),
        "GaussianMechanism.calibrated epsilon": lambda j: GaussianMechanism.calibrated(epsilon=j, delta=1e-5,
                                                                                       sensitivity=1.0),
        "GaussianMechanism.calibrated method": lambda j: GaussianMechanism.calibrated(epsilon=1.0, delta=1e-5,
                                                                                      sensitivity=1.0, method=j),
        "GaussianMechanism.release": lambda j: gauss.release(j, rng=rng()),
        "DiscreteLaplaceMechanism(sensitivity)": lambda j: DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=j),
        "DiscreteLaplaceMechanism.release": lambda j: dlap.release(j, rng=rng()),
        "DiscreteGaussianMechanism(sigma)": lambda j: DiscreteGaussianMechanism(sensitivity=1.0, sigma=j, delta=1e-5),
        "DiscreteGaussianMechanism.calibrated": lambda j: DiscreteGaussianMechanism.calibrated(
            epsilon=j, delta=1e-5, sensitivity=1.0),
        "DiscreteGaussianMechanism.release": lambda j: dgauss.release(j, rng=rng()),
        "ExponentialMechanism(epsilon)": lambda j: ExponentialMechanism(epsilon=j, sensitivity=1.0),
        "ExponentialMechanism.select": lambda j: ExponentialMechanism(epsilon=1.0, sensitivity=1.0).select(
            j, rng=rng()),
        "ObjectivePerturbation(n_samples)": lambda j: ObjectivePerturbation(epsilon=1.0, n_samples=j,
                                                                            regularization=0.1, smoothness=0.25),
        "gamma_norm_noise dim": lambda j: gamma_norm_noise(j, 1.0, rng=rng()),
        "gamma_norm_noise beta": lambda j: gamma_norm_noise(3, j, rng=rng()),
        "PrivacyCost(epsilon)": lambda j: PrivacyCost(epsilon=j),
        "PrivacyCost(delta)": lambda j: PrivacyCost(epsilon=1.0, delta=j),
        "compose": lambda j: compose(j),
        "compose method": lambda j: compose([PrivacyCost(epsilon=1.0)], method=j),
        "compose_rho": lambda j: compose_rho(j),
        "gaussian_zcdp": lambda j: gaussian_zcdp(sensitivity=1.0, sigma=j),
        "pure_dp_to_zcdp": lambda j: pure_dp_to_zcdp(j),
        "zcdp_epsilon rho": lambda j: zcdp_epsilon(j, 1e-5),
        "zcdp_epsilon delta": lambda j: zcdp_epsilon(0.1, j),
        "zcdp_rho_for": lambda j: zcdp_rho_for(epsilon=j, delta=1e-5),
        "laplace_scale": lambda j: laplace_scale(sensitivity=j, epsilon=1.0),
        "classic_gaussian_sigma": lambda j: classic_gaussian_sigma(sensitivity=1.0, epsilon=j, delta=1e-5),
        "analytic_gaussian_sigma epsilon": lambda j: analytic_gaussian_sigma(sensitivity=1.0, epsilon=j, delta=1e-5),
        "analytic_gaussian_sigma delta": lambda j: analytic_gaussian_sigma(sensitivity=1.0, epsilon=1.0, delta=j),
        "gaussian_delta": lambda j: gaussian_delta(sigma=1.0, sensitivity=1.0, epsilon=j),
        "gaussian_epsilon": lambda j: gaussian_epsilon(sigma=j, sensitivity=1.0, delta=1e-5),
    }


def _protocols() -> dict[str, Call]:
    from mpdp.protocols.aggregation import AggregationSpec, simulate_aggregation
    from mpdp.protocols.alignment import AlignmentSpec, simulate_alignment
    from mpdp.protocols.catalog import PartySetup, build_role, load_input
    from mpdp.protocols.inner_product import CrossProductSpec, simulate_cross_product
    from mpdp.protocols.toy_sum import secure_sum_role
    from mpdp.runtime import decode, run_protocol

    def aggregation(**changes: Any) -> AggregationSpec:
        return AggregationSpec(**{"server": "s", "aggregators": ("s", "a"), "clients": {"c": 1}, "dim": 2,
                                  "bound": 1.0, **changes})

    def cross(**changes: Any) -> CrossProductSpec:
        return CrossProductSpec(**{"left": "l", "right": "r", "rows": 2, "left_cols": 1, "right_cols": 1,
                                   **changes})

    def secure_sum(values: Any) -> Any:
        roles = {p: secure_sum_role(values if p == "a" else np.array([1, 2]), party=p) for p in ("a", "b")}
        return run_protocol(roles, rng=_rng(), timeout=20)

    def party(protocol: str, params: dict[str, Any], data: Any = None) -> Any:
        return build_role(protocol, PartySetup("alice", ("alice", "bob", "carol"), params, data))

    agg_params = {"server": "alice", "aggregators": ["alice", "bob"], "clients": {"carol": 1}, "dim": 2}
    ip_params = {"left": "alice", "right": "bob", "rows": 3, "dealer": "carol"}
    return {
        "AggregationSpec(dim)": lambda j: aggregation(dim=j),
        "AggregationSpec(bound)": lambda j: aggregation(bound=j),
        "AggregationSpec(clients)": lambda j: aggregation(clients=j),
        "AggregationSpec(aggregators)": lambda j: aggregation(aggregators=j),
        "AggregationSpec(threshold)": lambda j: aggregation(aggregators=("s", "a", "b"), threshold=j),
        "AggregationSpec(max_dropouts)": lambda j: aggregation(max_dropouts=j),
        "AggregationSpec(phase_timeout)": lambda j: aggregation(phase_timeout=j),
        "simulate_aggregation inputs": lambda j: simulate_aggregation(aggregation(), {"c": j}, rng=_rng()),
        "CrossProductSpec(rows)": lambda j: cross(rows=j),
        "CrossProductSpec(bound)": lambda j: cross(bound=j),
        "CrossProductSpec(reveal_to)": lambda j: cross(reveal_to=j),
        "simulate_cross_product X": lambda j: simulate_cross_product(j, np.ones((2, 1)), cross(), rng=_rng(),
                                                                     timeout=20),
        "AlignmentSpec(parties)": lambda j: AlignmentSpec(parties=j),
        "AlignmentSpec(min_intersection)": lambda j: AlignmentSpec(parties=("a", "b"), min_intersection=j),
        "simulate_alignment ids": lambda j: simulate_alignment({"a": j, "b": ["x", "y"]}, min_intersection=1,
                                                               rng=_rng()),
        "secure-sum values": secure_sum,
        "catalog secure-sum data": lambda j: party("secure-sum", {}, j),
        "catalog aggregation dim": lambda j: party("aggregation", dict(agg_params, dim=j)),
        "catalog aggregation bound": lambda j: party("aggregation", dict(agg_params, bound=j)),
        "catalog aggregation clients": lambda j: party("aggregation", dict(agg_params, clients=j)),
        "catalog aggregation aggregators": lambda j: party("aggregation", dict(agg_params, aggregators=j)),
        "catalog aggregation data": lambda j: build_role("aggregation", PartySetup(
            "carol", ("alice", "bob", "carol"), agg_params, j)),
        "catalog inner-product rows": lambda j: party("inner-product", dict(ip_params, rows=j), np.ones((3, 1))),
        "catalog inner-product backend": lambda j: party("inner-product", dict(ip_params, backend=j),
                                                         np.ones((3, 1))),
        "catalog inner-product key_bits": lambda j: party("inner-product", dict(ip_params, backend="paillier",
                                                                                key_bits=j), np.ones((3, 1))),
        "catalog alignment data": lambda j: party("alignment", {}, j),
        "catalog protocol name": lambda j: build_role(j, PartySetup("alice", ("alice", "bob"))),
        "catalog load_input": lambda j: load_input(j, "alice"),
        "catalog load_input synthetic": lambda j: load_input({"synthetic": j}, "alice"),
        "codec decode": lambda j: decode(j),
    }


def _more() -> dict[str, Call]:
    """Named sensitivities, accountants and the distributed-noise helpers: pure functions of numbers."""
    from mpdp.crypto.correlations import spec as correlation_spec
    from mpdp.crypto.fixed_point import FAST
    from mpdp.crypto.ristretto import hash_to_group
    from mpdp.dp.accounting import ddg_epsilon, dpsgd_epsilon, dpsgd_noise_multiplier, vpdp_epsilon
    from mpdp.dp.sensitivities.erm import gradient_sensitivity, minimizer_sensitivity, mpc_gradp_sigma
    from mpdp.dp.sensitivities.general import (
        bounded_mean_sensitivity,
        clipped_gradient_sum_sensitivity,
        count_sensitivity,
        histogram_sensitivity,
        l1_from_l2,
    )
    from mpdp.dp.sensitivities.ofpa_ofaa import ofpa_plan, output_laplace_scale, unit_ball_row_l1
    from mpdp.protocols.distributed_laplace import (
        add_distributed_laplace,
        distributed_laplace_epsilon,
        laplace_share_units,
    )
    from mpdp.protocols.noise import (
        add_distributed_gaussian,
        distributed_gaussian_rho,
        gaussian_acceptance,
        geometric_bit_probabilities,
    )

    share = FAST.encode(np.zeros(3))
    return {
        "count_sensitivity": lambda j: count_sensitivity(j),
        "histogram_sensitivity": lambda j: histogram_sensitivity(norm=j),
        "bounded_mean_sensitivity": lambda j: bounded_mean_sensitivity(lower=0.0, upper=1.0, n=j),
        "clipped_gradient_sum_sensitivity": lambda j: clipped_gradient_sum_sensitivity(clip_norm=j),
        "l1_from_l2": lambda j: l1_from_l2(1.0, j),
        "erm gradient_sensitivity": lambda j: gradient_sensitivity(1.0, j),
        "erm minimizer_sensitivity": lambda j: minimizer_sensitivity(1.0, 10, j),
        "erm mpc_gradp_sigma": lambda j: mpc_gradp_sigma(1.0, 3, 10, j, 5),
        "ofpa_plan": lambda j: ofpa_plan(j, 100, 0.1, 1.0),
        "output_laplace_scale": lambda j: output_laplace_scale(1.0, j, 0.1, 3),
        "unit_ball_row_l1": lambda j: unit_ball_row_l1(j),
        "dpsgd_epsilon": lambda j: dpsgd_epsilon(noise_multiplier=j, steps=10, delta=1e-5),
        "dpsgd_noise_multiplier": lambda j: dpsgd_noise_multiplier(epsilon=j, delta=1e-5, steps=10),
        "ddg_epsilon": lambda j: ddg_epsilon(local_sigma=j, n_parties=3, l2_sensitivity=1.0, dim=4, delta=1e-5),
        "vpdp_epsilon": lambda j: vpdp_epsilon(noise_multiplier=1.0, sampling_rate=j, steps=10, delta=1e-5,
                                                n_parties=3),
        "distributed_laplace_epsilon": lambda j: distributed_laplace_epsilon(sensitivity=1.0, scale=j, parties=3,
                                                                             dim=2, frac_bits=20),
        "laplace_share_units": lambda j: laplace_share_units(j, FAST),
        "add_distributed_laplace": lambda j: add_distributed_laplace(share, scale=j, parties=3, fmt=FAST,
                                                                     rng=_rng()),
        "add_distributed_laplace share": lambda j: add_distributed_laplace(j, scale=1.0, parties=3, fmt=FAST,
                                                                           rng=_rng()),
        "add_distributed_gaussian": lambda j: add_distributed_gaussian(share, sigma=j, parties=3, fmt=FAST,
                                                                       rng=_rng()),
        "distributed_gaussian_rho": lambda j: distributed_gaussian_rho(sensitivity=1.0, sigma=j, parties=3, dim=2,
                                                                       frac_bits=20),
        "gaussian_acceptance": lambda j: gaussian_acceptance(j),
        "geometric_bit_probabilities": lambda j: geometric_bit_probabilities(j),
        "ristretto.hash_to_group": lambda j: hash_to_group(j, domain=b"junk"),
        "correlations.spec kind": lambda j: correlation_spec(j, 64, (2,)),
        "correlations.spec shape": lambda j: correlation_spec("beaver", 64, j),
    }


ENTRIES: dict[str, Call] = {}
for _group in (_crypto, _dp, _protocols, _more):
    ENTRIES.update(_group())

# Bytes built to look like the codec's messages, for the decoder: a valid message with bytes changed or cut.
_codec_junk = st.builds(
    lambda body, cut, flip: (lambda raw: raw[:cut] + bytes([raw[cut] ^ flip]) + raw[cut + 1:]
                             if cut < len(raw) else raw[:cut])(_encode(body)),
    st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=3)),
    st.integers(0, 40), st.integers(1, 255))


def _encode(value: Any) -> bytes:
    from mpdp.runtime import encode

    return encode(value)


SLOW = {name for name in ENTRIES if name.startswith(("simulate_", "secure-sum", "Ckks", "ckks", "paillier.",
                                                      "EncryptedArray", "catalog"))}


def _sweep(name: str, data: st.DataObject) -> None:
    call = ENTRIES[name]
    value = data.draw(st.one_of(junk, _codec_junk) if name == "codec decode" else junk, label="junk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(value)
        except MpdpError:
            pass
        except Exception as exc:  # the point of the sweep: name what escaped
            pytest.fail(f"{name}({value!r:.200}) raised {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("name", sorted(set(ENTRIES) - SLOW))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_public_entry_points_answer_junk_with_mpdp_errors(name: str, data: st.DataObject) -> None:
    _sweep(name, data)


@pytest.mark.parametrize("name", sorted(SLOW))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_slow_entry_points_answer_junk_with_mpdp_errors(name: str, data: st.DataObject) -> None:
    """Entry points that encrypt, run parties or load keys: fewer examples each."""
    _sweep(name, data)
