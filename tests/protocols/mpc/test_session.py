"""Session-level behaviour: the documented example runs, scalars work, inputs are checked."""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest

import mpdp.protocols.mpc.session as session_module
from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.errors import EncodingOverflowError, KeyMismatchError, MalformedMessageError, ParameterError
from mpdp.protocols.mpc import MPCSession
from tests.protocols.mpc.harness import first, run_mpc


def test_docstring_example_runs() -> None:
    result = doctest.testmod(session_module)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("fmt", [None, HIGH_PRECISION])
def test_zero_dimensional_values(fmt) -> None:
    def program(s: MPCSession) -> float:
        a = s.input("alice", 3.0 if s.comm.name == "alice" else None, bound=4.0, fmt=fmt)
        b = s.input("bob", -0.5 if s.comm.name == "bob" else None, bound=4.0, fmt=fmt)
        return float((a * b + a.square() - 2).reveal())

    assert first(run_mpc(program)) == 5.5


def test_inputs_are_checked() -> None:
    def program(s: MPCSession) -> None:
        with pytest.raises(ParameterError, match="owner"):
            s.input("zoe", None)
        if s.comm.name == "alice":
            with pytest.raises(EncodingOverflowError, match="finite"):
                s.input("alice", np.array([np.nan]))
            with pytest.raises(ParameterError, match="bound"):
                s.input("alice", np.ones(2), bound=-1.0)
        else:
            with pytest.raises(ParameterError, match="only alice"):
                s.input("alice", np.ones(2))

    run_mpc(program)


def test_inputs_with_ids_allocated_beforehand_travel_in_one_round() -> None:
    data = {"alice": np.array([1.5, -2.0]), "bob": np.array([0.25, 4.0])}

    def program(s: MPCSession, together: bool) -> list[float]:
        other = next(p for p in s.parties if p != s.comm.name)
        s.public(np.zeros(1)).reveal()  # an exchange first: both parties' round clocks agree
        if together:
            ids = {p: s.new_id() for p in s.parties}  # the same order everywhere
            mine = s.input(s.comm.name, data[s.comm.name], bound=8.0, sharing_id=ids[s.comm.name])
            theirs = s.input(other, None, bound=8.0, sharing_id=ids[other])
            a, b = (mine, theirs) if s.comm.name == "alice" else (theirs, mine)
        else:
            a, b = (s.input(p, data[p] if p == s.comm.name else None, bound=8.0) for p in ("alice", "bob"))
        return (a + b).reveal().tolist()

    one, two = (run_mpc(lambda s, t=t: program(s, t)) for t in (True, False))
    assert first(one) == first(two) == [1.75, 2.0]
    assert one.rounds == two.rounds - 1


def test_openings_of_another_sharing_shape_or_dtype_are_refused() -> None:
    # A peer's opening is checked before it is added: its sharing id, the shape of each share (numpy would
    # broadcast a (2, 1) share over a (2, 3) one into a wrong sum) and its dtype.
    def program(s: MPCSession, tamper: str) -> Any:
        ring = s.fmt.ring
        mine = [ring.zeros((3,))]
        sharing_id = s.new_id()
        if s.comm.name == "bob":
            if tamper == "id":
                sharing_id = bytes(16)
            elif tamper == "shape":
                mine = [ring.zeros((1,))]
        if s.comm.name == "bob" and tamper == "dtype":
            s.comm.send("alice", {"id": sharing_id, "v": [np.zeros(ring.zeros((3,)).shape)]}, label="mpc.open")
            return s.comm.recv("alice", label="mpc.open")
        return s.open(ring, mine, sharing_id=sharing_id, label="mpc.open")

    expected = {"id": KeyMismatchError, "shape": MalformedMessageError, "dtype": ParameterError}
    for tamper, error in expected.items():
        with pytest.raises(error):
            run_mpc(lambda s, t=tamper: program(s, t))
    (total,) = first(run_mpc(lambda s: program(s, "none")))
    assert total.shape[-1] == 3 and not total.any()
