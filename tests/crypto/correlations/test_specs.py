"""Correlation specs validate their fields, are normalised frozen values, and travel on the wire."""

from __future__ import annotations

import pytest

from mpdp.crypto.correlations import CorrelationSpec, matmul_shape
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError


def test_specs_validate() -> None:
    with pytest.raises(ParameterError, match="kind"):
        CorrelationSpec("nope", 64, (3,))
    with pytest.raises(ShapeMismatchError, match="inner"):
        CorrelationSpec("matmul", 64, (3, 4), (5, 2))
    with pytest.raises(ParameterError, match="broadcastable"):
        CorrelationSpec("mul", 64, (3,), (4,))
    with pytest.raises(ParameterError, match="size"):
        CorrelationSpec("mul", 64, (1 << 20,), (1 << 20, 1 << 10))
    with pytest.raises(MalformedMessageError, match="correlation request"):
        CorrelationSpec.from_wire({"kind": "mul"})
    spec = CorrelationSpec("wrap", 128, (3,), out_ring_bits=64, shift=5)
    assert CorrelationSpec.from_wire(spec.to_wire()) == spec
    assert matmul_shape((5,), (5, 2)) == (2,)
    assert matmul_shape((2, 3, 5), (5,)) == (2, 3)


def test_specs_are_normalised_frozen_values_however_often_they_are_built() -> None:
    import dataclasses

    for _ in range(2):  # the second time from the validated fields
        spec = CorrelationSpec("wrap", 64, [3, 2], shift=5)  # type: ignore[arg-type]
        assert spec.shape == (3, 2) and spec.out_ring_bits == 64
        spec = CorrelationSpec("wrap", 64, (3, 2), (), 0, 5)
        assert spec == CorrelationSpec("wrap", 64, (3, 2), out_ring_bits=64, shift=5) and hash(spec) == hash(
            CorrelationSpec("wrap", 64, (3, 2), shift=5))
        assert spec.out_ring_bits == 64 and spec != CorrelationSpec("wrap", 64, (3, 2), shift=4)
        with pytest.raises(dataclasses.FrozenInstanceError):
            spec.shift = 3  # type: ignore[misc]
        assert dataclasses.replace(spec, shift=4) == CorrelationSpec("wrap", 64, (3, 2), shift=4)
        with pytest.raises(ParameterError, match="shift"):
            CorrelationSpec("wrap", 64, (3,), shift=64)


def test_only_owned_kinds_name_an_owner_and_it_travels_on_the_wire() -> None:
    with pytest.raises(ParameterError, match="owner"):
        CorrelationSpec("matmul_owned_wrap", 64, (4, 3), (3, 2), shift=20)
    with pytest.raises(ParameterError, match="owner"):
        CorrelationSpec("matmul_wrap", 64, (4, 3), (3, 2), shift=20, owner=1)
    owned = CorrelationSpec("matmul_owned_wrap", 64, (4, 3), (3, 2), shift=20, owner=1)
    assert CorrelationSpec.from_wire(owned.to_wire()) == owned
    assert owned != CorrelationSpec("matmul_owned_wrap", 64, (4, 3), (3, 2), shift=20, owner=0)
    plain = CorrelationSpec("matmul_wrap", 64, (4, 3), (3, 2), shift=20)
    assert "owner" not in plain.to_wire() and CorrelationSpec.from_wire(plain.to_wire()) == plain
    with pytest.raises(MalformedMessageError):
        CorrelationSpec.from_wire({**owned.to_wire(), "owner": "1"})
