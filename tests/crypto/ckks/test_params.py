from __future__ import annotations

import pytest

from mpdp.crypto.ckks import PARAMETER_SETS, SEAL_MAX_COEFF_BITS_128, CkksParameters, parameters_for_depth
from mpdp.errors import MalformedMessageError, ParameterError, PrecisionError


def test_every_named_set_meets_the_128_bit_table() -> None:
    for params in PARAMETER_SETS.values():
        assert sum(params.coeff_mod_bit_sizes) <= SEAL_MAX_COEFF_BITS_128[params.poly_modulus_degree]
        assert params.depth == len(params.coeff_mod_bit_sizes) - 2 and params.slots == params.poly_modulus_degree // 2


def test_sets_are_chosen_by_depth() -> None:
    assert parameters_for_depth(0).name == parameters_for_depth(1).name == "ckks-8192-d1"
    assert parameters_for_depth(2).name == "ckks-8192-d2"
    assert parameters_for_depth(3).name == "ckks-16384-d4"
    assert parameters_for_depth(7).depth == 7
    with pytest.raises(PrecisionError, match="<= 7 for the vetted 128-bit sets"):
        parameters_for_depth(8)
    with pytest.raises(ParameterError, match="depth"):
        parameters_for_depth(-1)


@pytest.mark.parametrize(
    ("n", "bits", "match"),
    [
        (8192, (60, 40, 40, 40, 60), "<= 218 bits for 128-bit security"),
        (4096, (60, 40, 60), "<= 109 bits"),
        (1000, (60, 40, 60), "poly_modulus_degree"),
        (8192, (60, 30, 60), "middle primes"),
        (8192, (60, 40), "at least 3 primes"),
    ],
)
def test_insecure_or_inconsistent_sets_are_refused(n, bits, match) -> None:
    with pytest.raises(ParameterError, match=match):
        CkksParameters("custom", n, bits, 40, 1e-7, 1e-6, 1e-5, 1e-6)


def test_parameter_wire_form_names_a_vetted_set() -> None:
    params = PARAMETER_SETS["ckks-8192-d2"]
    assert CkksParameters.from_wire(params.to_wire()) is params
    altered = params.to_wire() | {"coeff_mod_bit_sizes": [60, 40, 60]}
    with pytest.raises(MalformedMessageError, match="named set"):
        CkksParameters.from_wire(altered)
    expected = params.dot_error_floor + params.dot_error_per_sqrt_term * 20
    assert params.dot_error_bound(400, 2.0, 0.5) == pytest.approx(expected)
