"""The ``shares`` backend: the commodity-server form of a Beaver matrix triple (Du & Atallah; Beaver 1991).

A dealer gives ``left`` a random ``A`` (n x a), ``right`` a random ``B`` (n x b) (as 32-byte seeds) and additive
shares ``Z``, ``A^T B - Z`` of their product. In one round ``left`` sends ``E = X - A`` and ``right`` sends
``F = Y - B``; then ``left`` holds ``A^T F + Z`` and ``right`` holds ``E^T Y + A^T B - Z``, which add up to
``X^T Y`` in the ring. Half the traffic and rounds of sharing both inputs and running a generic Beaver product.

Security
--------
Semi-honest. Each holder sees only a uniformly masked matrix from the other; the dealer sees nothing of the
inputs and must not collude with either holder.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring import Ring, RingArray, Z2k
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.protocols.inner_product.ring_output import check_ring, finish
from mpdp.protocols.inner_product.spec import CrossProduct, CrossProductSpec, SharesBackend
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm

__all__ = ["shares_dealer", "shares_holder"]


def _stream(key: bytes, seeded: bool, label: str) -> RandomSource:
    # A 32-byte key shared by the dealer and one holder keys a ChaCha20 stream both expand identically.
    derived = hashlib.sha256(b"mpdp.inner-product.dealer:" + key).digest()
    return RandomSource(derived, _seeded=seeded, _description=f"dealer stream of {label}")


def _matmul_t(ring: Ring, a: RingArray, b: RingArray) -> RingArray:
    """``a^T b`` in the ring. On Z_2^k (k <= 64) uint64 einsum is exact modulo 2^64 and, for the tall-thin
    matrices of cross products, several times faster than the limb-split float matmul; Z_2^128 uses the ring's."""
    if isinstance(ring, Z2k):
        with np.errstate(over="ignore"):
            product = np.einsum("ia,ib->ab", a, b)
        return ring.add(product, ring.zeros(product.shape))  # reduces modulo 2^k
    return ring.matmul(ring.apply(a, np.transpose), b)


def shares_dealer(comm: Comm, spec: CrossProductSpec) -> None:
    """The dealer's side: two 32-byte seeds (``left``'s expands to ``A`` and ``Z``, ``right``'s to ``B``) and
    ``A^T B - Z`` for ``right``."""
    ring = spec.fmt.ring
    key_l, key_r = comm.rng.bytes(32), comm.rng.bytes(32)
    comm.send(spec.left, key_l, label="ip.seed")
    sl, sr = _stream(key_l, comm.rng.is_seeded, spec.left), _stream(key_r, comm.rng.is_seeded, spec.right)
    a = ring.random(sl, (spec.rows, spec.left_cols))
    z = ring.random(sl, (spec.left_cols, spec.right_cols))
    b = ring.random(sr, (spec.rows, spec.right_cols))
    w = ring.sub(_matmul_t(ring, a, b), z)
    comm.send(spec.right, {"key": key_r, "w": w}, label="ip.seed")


def shares_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64]) -> CrossProduct:
    """This holder's side (``m`` its checked matrix): the one-round exchange of the module docstring."""
    fmt, ring = spec.fmt, spec.fmt.ring
    backend = spec.backend
    if not isinstance(backend, SharesBackend):
        raise ParameterError(explain("backend", type(backend).__name__, "SharesBackend", "use cross_product"))
    dealer = backend.dealer
    encoded = fmt.encode(m, name=f"data of {comm.name}")
    if comm.name == spec.left:
        key = comm.recv(dealer, label="ip.seed")
        if not isinstance(key, bytes) or len(key) != 32:
            raise MalformedMessageError(explain("dealer seed", type(key).__name__, "32 bytes", "check the dealer"))
        stream = _stream(key, comm.rng.is_seeded, spec.left)
        a = ring.random(stream, (spec.rows, spec.left_cols))
        z = ring.random(stream, (spec.left_cols, spec.right_cols))
        comm.send(spec.right, ring.sub(encoded, a), label="ip.masked")
        f = check_ring(comm.recv(spec.right, label="ip.masked"), spec, (spec.rows, spec.right_cols),
                       f"masked matrix from {spec.right}")
        share = ring.add(_matmul_t(ring, a, f), z)        # A^T (Y - B) + Z
    else:
        msg = comm.recv(dealer, label="ip.seed")
        if not isinstance(msg, dict) or set(msg) != {"key", "w"} or not isinstance(msg["key"], bytes):
            raise MalformedMessageError(explain("dealer message", type(msg).__name__, "{key, w}", "check the dealer"))
        b = ring.random(_stream(msg["key"], comm.rng.is_seeded, spec.right), (spec.rows, spec.right_cols))
        w = check_ring(msg["w"], spec, (spec.left_cols, spec.right_cols), "dealer's product share")
        comm.send(spec.left, ring.sub(encoded, b), label="ip.masked")
        e = check_ring(comm.recv(spec.left, label="ip.masked"), spec, (spec.rows, spec.left_cols),
                       f"masked matrix from {spec.left}")
        share = ring.add(_matmul_t(ring, e, encoded), w)  # (X - A)^T Y + A^T B - Z
    return finish(comm, spec, share)

