"""Integer APIs take integers at their exact value: no float is truncated, no value wraps (issue 42).

``ShamirScheme(MERSENNE_61, 3, 1).share([1.7, 2.5])`` reconstructed [1, 2] and ``MERSENNE_61.array([0.9])``
was [0]; NaN and infinity gave raw ``ValueError``/``OverflowError``. The same class in the rings: a float
constant or an object array of floats became its integer part.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.additive import share as additive_share
from mpdp.crypto.fixed_point import FAST, HIGH_PRECISION
from mpdp.crypto.ring import Z2_128, Z2k
from mpdp.crypto.shamir import MERSENNE_61, MERSENNE_127, ShamirScheme, ShamirShare
from mpdp.errors import DomainError, MpdpError, ParameterError
from mpdp.randomness import RandomSource
from tests.strategies import big_ints, int64_edges, non_integers

FIELDS = [MERSENNE_61, MERSENNE_127]


@settings(max_examples=50, deadline=None)
@given(bad=non_integers, field=st.sampled_from(FIELDS), as_array=st.booleans())
def test_fields_and_shamir_refuse_non_integers(bad: float, field: Any, as_array: bool) -> None:
    values: Any = np.array([3.0, bad]) if as_array else [3, bad]
    with pytest.raises(DomainError):
        field.array(values)
    with pytest.raises(DomainError):
        ShamirScheme(field, 3, 1).share(values, rng=RandomSource.seeded(0))


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.one_of(big_ints, int64_edges), min_size=1, max_size=6), field=st.sampled_from(FIELDS))
def test_shamir_reconstructs_integers_exactly_modulo_p(values: list[int], field: Any) -> None:
    scheme = ShamirScheme(field, 3, 1)
    shares = scheme.share(np.array(values, dtype=object), rng=RandomSource.seeded(1))
    assert [int(v) for v in scheme.reconstruct(shares[1:]).tolist()] == [v % field.p for v in values]


@pytest.mark.parametrize("junk", [["abc"], [None], [1j], [[1, 2], [3]], {"a": 1}])
def test_fields_refuse_non_numbers_with_typed_errors(junk: Any) -> None:
    with pytest.raises(ParameterError):
        MERSENNE_61.array(junk)


def test_a_forged_share_is_refused_on_construction() -> None:
    scheme = ShamirScheme(MERSENNE_61, 3, 1)
    with pytest.raises(ParameterError, match="residues"):
        ShamirShare(scheme, 1, b"x" * 16, np.array([1.5]))
    with pytest.raises(ParameterError, match="residues"):
        ShamirShare(scheme, 1, b"x" * 16, np.array([MERSENNE_61.p], dtype=np.uint64))
    with pytest.raises(ParameterError, match="point"):
        ShamirShare(scheme, 4, b"x" * 16, np.array([1], dtype=np.uint64))


@settings(max_examples=40, deadline=None)
@given(bad=non_integers, ring=st.sampled_from([Z2k(64), Z2k(16), Z2_128()]))
def test_rings_refuse_float_constants(bad: float, ring: Any) -> None:
    a = ring.from_int(np.array([1, 2], dtype=np.int64))
    for call in (lambda: ring.add_int(a, bad), lambda: ring.mul_int(a, bad), lambda: ring.mul_int(a, np.array(bad)),
                 lambda: ring.from_int(np.array([1, bad], dtype=object)), lambda: ring.from_int(np.array([bad]))):
        with pytest.raises(MpdpError):
            call()


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(big_ints, int64_edges), min_size=1, max_size=5), ring=st.sampled_from(
    [Z2k(64), Z2k(16), Z2_128()]))
def test_ring_residues_of_any_int_are_exact(values: list[int], ring: Any) -> None:
    """Public ints of any size are reduced modulo 2^l (the ring's arithmetic), exactly: signed read-back is
    the two's-complement residue."""
    got = ring.to_object(ring.from_int(np.array(values, dtype=object)), signed=False)
    assert [int(v) for v in got.tolist()] == [v % ring.modulus for v in values]


@pytest.mark.parametrize("fmt", [FAST, HIGH_PRECISION])
@pytest.mark.parametrize("bad", [["abc"], [None], [1j], [[1.0], [2.0, 3.0]], [np.nan], [np.inf], [2.0**80]])
def test_fixed_point_encoding_refuses_junk_with_typed_errors(fmt: Any, bad: Any) -> None:
    with pytest.raises(MpdpError):
        fmt.encode(bad)


def test_additive_sharing_refuses_floats() -> None:
    with pytest.raises(ParameterError):
        additive_share(np.array([1.7]), Z2k(64), 3, rng=RandomSource.seeded(0))
