"""A function's table gives ``f(x)`` within its stated error for every mask, including the masks and inputs at which
``delta = x + lambda`` wraps around the view (``delta`` at 0, ``2^n - 1`` and at entry boundaries) and the domain's
ends; its partial sums stay within the bits its parameters bound; bad tables are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.crypto.masked.tables import FUNCTIONS, TableSpec
from mpdp.errors import MalformedMessageError, ParameterError
from mpdp.protocols.mpc.masked.functions import exp_table, root_table, sigmoid_table

SPECS = {"exp": exp_table(48, -16.0, 16.0), "sigmoid": sigmoid_table(48, -16.0, 16.0),
         "recip": root_table("recip"), "rsqrt": root_table("rsqrt"), "sqrt": root_table("sqrt")}
#: the tables' own errors, relative (before any output rounding)
BOUNDS = {"exp": 1e-10, "sigmoid": 2e-8, "recip": 1e-9, "rsqrt": 1e-9, "sqrt": 1e-9}


def _evaluate(spec: TableSpec, lam: int, raw: list[int]) -> tuple[np.ndarray, float]:
    """The table's value at raw inputs ``raw`` (scale ``2^F``) for the mask ``lam``, exactly as the parties combine
    it (Python integers), and the largest partial sum's bits."""
    coef = np.rint(spec.coefficients(np.array([lam], dtype=np.uint64)) * 2.0**spec.coef_frac)[0]
    delta = np.array([(x - spec.lo + lam) % (1 << spec.view_bits) for x in raw], dtype=np.uint64)
    j, low = spec.split(delta)
    basis = spec.basis_ints(low)
    out, top = [], 0
    for row, b in zip(j, basis, strict=True):
        total = 0
        for c, phi in zip(coef[row], b, strict=True):
            total += int(c) * int(phi)
            top = max(top, abs(total))
        out.append(total / 2.0**spec.out_frac)
    return np.array(out), math.log2(max(top, 1))


def _masks(spec: TableSpec, salt: int) -> list[int]:
    n, s = spec.view_bits, spec.entry_bits
    rng = np.random.default_rng(salt)
    return [0, 1, (1 << s) - 1, 1 << s, (1 << n) - 1, (1 << n) - (1 << s), (1 << (n - 1)) + 12345,
            int(rng.integers(0, 1 << 62)) % (1 << n)]


def _inputs(spec: TableSpec, lam: int, salt: int) -> list[int]:
    """The domain's ends and the inputs whose ``delta`` lands on the view's wrap and on entry boundaries."""
    n, s, lo, span = spec.view_bits, spec.entry_bits, spec.lo, spec.span
    raw = [lo, lo + 1, lo + span - 1, lo + span - 2]
    for target in (0, 1, (1 << n) - 1, (1 << s) - 1, 1 << s, 3 << s, (3 << s) - 1):
        x = lo + (target - lam) % (1 << n)
        if lo <= x < lo + span:
            raw.append(x)
    rng = np.random.default_rng(salt)
    raw += [lo + int(v) for v in rng.integers(0, span, 24)]
    return raw


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=4, deadline=None)
@given(salt=st.integers(0, 2**31))
def test_table_within_its_bound_at_wraps_and_ends(name: str, salt: int) -> None:
    spec = SPECS[name]
    f = FUNCTIONS[spec.function].values
    for lam in _masks(spec, salt):
        raw = _inputs(spec, lam, salt)
        got, bits = _evaluate(spec, lam, raw)
        x = np.array([r / 2.0**spec.in_frac for r in raw])
        ref = f(x)
        assert np.max(np.abs(got - ref) / np.abs(ref)) <= BOUNDS[name], (name, lam)
        assert bits <= spec.max_bits()


def test_every_table_stays_below_126_bits_from_its_parameters() -> None:
    for name, spec in SPECS.items():
        assert spec.max_bits() < 126, name


def test_table_spec_round_trips_and_refuses_bad_parameters() -> None:
    spec = SPECS["recip"]
    assert TableSpec.from_wire(spec.to_wire()) == spec
    with pytest.raises(MalformedMessageError):
        TableSpec.from_wire(spec.to_wire()[:-1])
    with pytest.raises(MalformedMessageError):
        TableSpec.from_wire(["recip", 60, 0, 1, 8, 9, 2, "cheb", 40, 40])  # s >= n
    with pytest.raises(ParameterError, match="2\\^n >= span"):
        TableSpec("exp", 48, 0, 1 << 54, 54, 50, 0, "exp", 60, 36)
    with pytest.raises(ParameterError, match="lo - w > 0"):
        TableSpec("recip", 60, 1 << 56, 1 << 59, 60, 57, 12, "cheb", 58, 58)  # entries reach below 0
    with pytest.raises(ParameterError, match="function"):
        TableSpec("log", 48, 0, 1, 8, 2, 1, "cheb", 40, 40)
