from __future__ import annotations

import pytest

from mpdp.crypto.ckks import PARAMETER_SETS, CkksContext, CkksVector
from mpdp.errors import MalformedMessageError, ParameterError
from mpdp.runtime import decode, encode


def test_public_context_round_trips_without_the_secret_key(ckks_d1) -> None:
    public = ckks_d1.public()
    assert ckks_d1.is_private and not public.is_private and public.context_id == ckks_d1.context_id
    received = CkksContext.from_wire(decode(encode(ckks_d1)), expected=ckks_d1.params)
    assert not received.is_private and received.has_galois_keys and received.context_id == ckks_d1.context_id
    x = CkksVector.encrypt(received, [0.25, -0.5])
    with pytest.raises(ParameterError, match="private context"):
        x.decrypt()
    assert x.decrypt(ckks_d1).round(6).tolist() == [0.25, -0.5]


def test_received_contexts_are_checked(ckks_d1, ckks_d2_no_rotations) -> None:
    wire = ckks_d2_no_rotations.to_wire()
    with pytest.raises(ParameterError, match="agree on the parameter set"):
        CkksContext.from_wire(wire, expected=ckks_d1.params)
    lying = dict(wire, params=PARAMETER_SETS["ckks-8192-d1"].to_wire())
    with pytest.raises(MalformedMessageError, match="do not match its parameters"):
        CkksContext.from_wire(lying)
    with pytest.raises(MalformedMessageError, match="do not parse"):
        CkksContext.from_wire(dict(wire, context=b"not a context"))
    with pytest.raises(MalformedMessageError, match="to_wire"):
        CkksContext.from_wire({"type": "ckks.context"})


def test_secret_key_moves_only_on_request(ckks_d2_no_rotations) -> None:
    data = ckks_d2_no_rotations.to_private_bytes()
    back = CkksContext.from_private_bytes(data, ckks_d2_no_rotations.params)
    assert back.is_private and back.context_id == ckks_d2_no_rotations.context_id
    with pytest.raises(ParameterError, match="private context"):
        ckks_d2_no_rotations.public().to_private_bytes()
    public_bytes = ckks_d2_no_rotations.to_wire()["context"]
    with pytest.raises(ParameterError, match="use from_wire"):
        CkksContext.from_private_bytes(public_bytes, ckks_d2_no_rotations.params)
    with_secret = ckks_d2_no_rotations.tenseal.serialize(save_secret_key=True)
    with pytest.raises(MalformedMessageError, match="secret key"):
        CkksContext.from_wire(ckks_d2_no_rotations.to_wire() | {"context": with_secret})
    with pytest.raises(MalformedMessageError, match="SHA-256"):
        CkksContext.from_private_bytes(data[:-1] + bytes([data[-1] ^ 1]), ckks_d2_no_rotations.params)
