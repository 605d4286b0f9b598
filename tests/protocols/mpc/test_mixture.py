"""Secure responsibilities from renormalized factors match float64 (paper 002's use case)."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.crypto.renormalization import RenormalizationParams, renormalize
from mpdp.errors import DomainError
from mpdp.protocols.mpc import MPCSession
from mpdp.protocols.mpc.mixture import responsibilities, responsibility_error_bound
from tests.protocols.mpc.harness import first, run_mpc


def test_responsibilities_with_tiny_densities() -> None:
    # log-densities near -700: exp() of them underflows any fixed point; renormalized they work
    rng = np.random.default_rng(5)
    logs = {"alice": -700 + rng.normal(0, 3, size=(8, 3)), "bob": -650 + rng.normal(0, 3, size=(8, 3))}
    pi = np.array([0.5, 0.3, 0.2])
    params = RenormalizationParams(parties=2)

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        e, _m = renormalize(logs[s.comm.name], params)
        fa = s.input("alice", e if s.comm.name == "alice" else None, bound=1.0, fmt=HIGH_PRECISION)
        fb = s.input("bob", e if s.comm.name == "bob" else None, bound=1.0, fmt=HIGH_PRECISION)
        r, total = responsibilities([fa, fb], pi, params)
        return {"r": r.reveal(), "s": total.reveal()}

    out = first(run_mpc(program, fmt=HIGH_PRECISION))
    joint = logs["alice"] + logs["bob"] + np.log(pi)
    ref = np.exp(joint - joint.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    tol = 4 * HIGH_PRECISION.resolution / out["s"][:, None] + 1e-9
    assert np.all(np.abs(out["r"] - ref) <= tol)
    assert np.all(out["s"] > 0)


def test_products_that_vanish_are_refused_not_divided() -> None:
    # alice rates component 0 best, bob component 1, and each rates the other's at exp(-60)
    logs = {"alice": np.array([[0.0, -60.0]]), "bob": np.array([[-60.0, 0.0]])}
    params = RenormalizationParams(parties=2)

    def program(s: MPCSession) -> None:
        e, _m = renormalize(logs[s.comm.name], params)
        fa = s.input("alice", e if s.comm.name == "alice" else None, bound=1.0, fmt=HIGH_PRECISION)
        fb = s.input("bob", e if s.comm.name == "bob" else None, bound=1.0, fmt=HIGH_PRECISION)
        responsibilities([fa, fb], np.array([0.5, 0.5]), params)

    with pytest.raises(DomainError, match="values in"):
        run_mpc(program, fmt=HIGH_PRECISION)


def test_algorithm_4_floor_keeps_the_computation_going() -> None:
    logs = {"alice": np.array([[0.0, -60.0]]), "bob": np.array([[-60.0, 0.0]])}
    params = RenormalizationParams(parties=2, floor_log2=-24)

    def program(s: MPCSession) -> np.ndarray:
        e, _m = renormalize(logs[s.comm.name], params)
        fa = s.input("alice", e if s.comm.name == "alice" else None, bound=1.0, fmt=HIGH_PRECISION)
        fb = s.input("bob", e if s.comm.name == "bob" else None, bound=1.0, fmt=HIGH_PRECISION)
        return responsibilities([fa, fb], np.array([0.5, 0.5]), params)[0].reveal()

    out = first(run_mpc(program, fmt=HIGH_PRECISION))
    assert np.allclose(out, [[0.5, 0.5]], atol=1e-6)  # the symmetric truth, through floored factors


def test_floored_factors_with_an_unchecked_reciprocal() -> None:
    # the floor guarantees S >= 2^floor_log2, so the caller may skip the secure domain check
    from mpdp.crypto.approximations import ReciprocalParams

    rng = np.random.default_rng(7)
    logs = {"alice": rng.normal(0, 30, size=(12, 4)), "bob": rng.normal(0, 30, size=(12, 4))}
    pi = np.array([0.4, 0.3, 0.2, 0.1])
    params = RenormalizationParams(parties=2, min_log2=-36, floor_log2=-36)
    recip = ReciprocalParams(low_exp=-37, high_exp=1, iterations=2, strict=False)

    def program(s: MPCSession) -> dict[str, np.ndarray]:
        e, _m = renormalize(logs[s.comm.name], params)
        fa = s.input("alice", e if s.comm.name == "alice" else None, bound=1.0, fmt=HIGH_PRECISION)
        fb = s.input("bob", e if s.comm.name == "bob" else None, bound=1.0, fmt=HIGH_PRECISION)
        r, total = responsibilities([fa, fb], pi, params, reciprocal_params=recip)
        return {"r": r.reveal(), "s": total.reveal()}

    out = first(run_mpc(program, fmt=HIGH_PRECISION))
    floored = {p: renormalize(v, params)[0] for p, v in logs.items()}
    q = floored["alice"] * floored["bob"] * pi
    ref = q / q.sum(axis=1, keepdims=True)
    assert np.all(out["s"] >= 2.0**-36 * (1 - 1e-9))
    tol = responsibility_error_bound(recip, HIGH_PRECISION) + 4 * HIGH_PRECISION.resolution / out["s"][:, None]
    assert np.all(np.abs(out["r"] - ref) <= tol)
