"""The ``secure-sum`` protocol of ``mpdp party``: exact sums or typed errors naming the party and field, never
a truncated float, a wrapped int64 or a raw numpy broadcast error (issue 42)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.errors import DomainError, EncodingOverflowError, MpdpError, ShapeMismatchError
from mpdp.protocols.catalog import PartySetup, build_role
from mpdp.protocols.toy_sum import entry_bound
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from tests.strategies import int64_edges, non_integers


def _run(data: dict[str, Any]) -> dict[str, Any]:
    parties = tuple(data)
    roles = {p: build_role("secure-sum", PartySetup(p, parties, {}, np.asarray(d) if not isinstance(d, np.ndarray)
                                                    else d)) for p, d in data.items()}
    return dict(run_protocol(roles, rng=RandomSource.seeded(3), timeout=20).results)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(int64_edges, st.integers(-1000, 1000)), min_size=2, max_size=3))
def test_the_sum_is_exact_or_refused_before_it_could_wrap(values: list[int]) -> None:
    """[2^62] + [2^62] returned [-2^63]. Now: an entry beyond floor((2^63 - 1) / n) is refused naming the
    party and field (so no accepted sum can leave int64); every accepted sum is the exact sum."""
    data = {f"p{i}": np.array([v], dtype=object) for i, v in enumerate(values)}
    if any(abs(v) > entry_bound(len(values)) for v in values):
        with pytest.raises(MpdpError, match=r"inputs\.p\d"):
            _run(data)
        return
    for result in _run(data).values():
        assert result.dtype == np.int64 and int(result[0]) == sum(values)


@pytest.mark.parametrize("n", [2, 3])
def test_the_largest_halves_of_int64_are_refused(n: int) -> None:
    with pytest.raises(EncodingOverflowError, match=r"inputs\.p0.*fits int64"):
        _run({f"p{i}": [2**62] for i in range(n)})


@settings(max_examples=30, deadline=None)
@given(bad=non_integers)
def test_floats_and_nan_are_refused_naming_the_party(bad: float) -> None:
    with pytest.raises(DomainError, match=r"inputs\.b"):
        _run({"a": [1, 2], "b": [1.0, bad], "c": [3, 4]})


@pytest.mark.parametrize(("b", "c"), [((4,), (3,)), ((2, 2), (4,)), ((1,), (3,)), ((3,), (3, 1))])
def test_shapes_that_differ_across_parties_are_refused_in_the_protocol(b: tuple[int, ...],
                                                                       c: tuple[int, ...]) -> None:
    with pytest.raises(ShapeMismatchError, match=r"inputs\.(a|b|c).*shape"):
        _run({"a": np.ones(c, dtype=np.int64), "b": np.ones(b, dtype=np.int64), "c": np.ones(c, dtype=np.int64)})


def test_integral_floats_and_unsigned_ints_are_summed_exactly() -> None:
    result = _run({"a": np.array([2.0, -3.0]), "b": np.array([5, 7], dtype=np.uint8), "c": [1, 1]})
    assert result["a"].tolist() == [8, 5]
