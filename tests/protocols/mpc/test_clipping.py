"""clip_factor: 1/sqrt(max(x, 1)) within its documented relative error bound, with no comparison."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.errors import DomainError, ParameterError
from mpdp.protocols.mpc import MPCSession
from mpdp.protocols.mpc.clipping import ClipFactorParams, clip_factor
from tests.protocols.mpc.harness import first, run_mpc

HP = HIGH_PRECISION


@settings(max_examples=3, deadline=None)
@given(exponents=st.lists(st.floats(-30, 24), min_size=20, max_size=20), iterations=st.sampled_from([2, 3]))
def test_clip_factor_within_bound(exponents: list[float], iterations: int) -> None:
    # the edges always: zero, just around 1, the top of the domain, a tiny negative (truncation residue)
    x = np.concatenate([2.0 ** np.array(exponents), [0.0, 1.0, 1 - 2.0**-40, 1 + 2.0**-40, 2.0**24, -2.0**-45]])
    params = ClipFactorParams(high_exp=24, iterations=iterations)

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**24, fmt=HP)
        return clip_factor(v, params).reveal()

    out = first(run_mpc(program, fmt=HP))
    ref = 1 / np.sqrt(np.maximum(HP.decode(HP.encode(x)), 1.0))
    assert np.max(np.abs(out - ref) / ref) <= params.relative_error_bound(HP)
    assert np.all(out <= 1.0 + params.relative_error_bound(HP))


def test_exact_buckets_at_the_powers_of_two() -> None:
    # H + f <= 61: the normalisation compares the raw integers, so one unit either side of a power of two
    # (1 included: where clipping starts) lands in the right bucket; the bound has no edge term
    u = HP.resolution
    x = np.array([1 - u, 1.0, 1 + u, 2 - u, 2.0, 2**8 - u, 2.0**8, 0.5, 0.0, -u])
    params = ClipFactorParams(high_exp=8, iterations=2)
    assert params.exact_buckets(HP) and not ClipFactorParams(high_exp=24).exact_buckets(HP)

    def program(s: MPCSession) -> np.ndarray:
        v = s.input("alice", x if s.comm.name == "alice" else None, bound=2.0**8, fmt=HP)
        return clip_factor(v, params).reveal()

    out = first(run_mpc(program, fmt=HP))
    ref = 1 / np.sqrt(np.maximum(HP.decode(HP.encode(x)), 1.0))
    assert np.max(np.abs(out - ref) / ref) <= params.relative_error_bound(HP) < 1e-6


def test_bound_shrinks_with_iterations() -> None:
    two, three = (ClipFactorParams(high_exp=30, iterations=i).relative_error_bound(HP) for i in (2, 3))
    assert three < two < 1e-6
    assert ClipFactorParams.for_bound(1e6).high_exp == 20


def test_refuses_bad_parameters_and_bounds() -> None:
    with pytest.raises(ParameterError, match="high_exp"):
        ClipFactorParams(high_exp=0)
    with pytest.raises(ParameterError, match="iterations"):
        ClipFactorParams(iterations=9)

    def program(s: MPCSession) -> None:
        v = s.input("alice", np.ones(3) if s.comm.name == "alice" else None, bound=2.0**10, fmt=HP)
        clip_factor(v, ClipFactorParams(high_exp=4))

    with pytest.raises(DomainError, match=r"x\.bound"):
        run_mpc(program, fmt=HP)
