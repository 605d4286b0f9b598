"""Beaver triples for two computing parties from Paillier encryption: no trusted dealer.

Each party draws its own uniform shares ``a_i``, ``b_i`` in the ring Z_2^l; the product
``(a_0 + a_1)(b_0 + b_1) = a_0 b_0 + a_1 b_1 + a_0 b_1 + a_1 b_0`` has two local terms and two cross terms,
which the parties turn into additive shares with Paillier (Gilboa, "Two party RSA key generation", CRYPTO 1999,
in its additively homomorphic form; the matrix version follows Mohassel and Zhang, "SecureML", IEEE S&P 2017,
Sec. 4.2, "LHE-based generation"):

1. setup: the *key holder* (the first computing party) makes a Paillier key pair and sends the public key;
2. the key holder sends Enc(a_0) and Enc(b_0) (for matrix triples: Enc(B_0) and Enc(A_0^T), rows packed);
3. the *evaluator* computes the cross terms homomorphically (Enc(a_0)^(b_1) Enc(b_0)^(a_1), or the
   multi-exponentiations ``A_1 @ Enc(B_0)`` and ``B_1^T @ Enc(A_0^T)``), adds a uniform mask r of
   ``bits(bound) + sigma + 1`` bits, packs the results into slots (elementwise case), rerandomizes and returns;
4. the key holder decrypts v = cross + r; its share of c is ``a_0 b_0 + v``, the evaluator's ``a_1 b_1 - r``
   (mod 2^l).

Ring elements enter the plaintexts as signed integers in [-2^(l-1), 2^(l-1)); no wrap-around can happen in
Z_n because the slot sizes are derived from the declared bounds (:mod:`mpdp.crypto.paillier.packing`).

Security
--------
Semi-honest, two computing parties. The evaluator sees only ciphertexts under the key holder's key
(IND-CPA under DCR; with ``short_exponent=True`` also the DJN short-exponent assumption). The key holder sees
v = cross + r with r uniform over a range 2^(sigma+1) times the cross term's bound: statistical distance
<= 2^-sigma from a value independent of the evaluator's shares (``statistical_bits``, default 40). Returned
ciphertexts are rerandomized, so they do not reveal the evaluator's shares through their randomness. Not
secure against a malicious party (no proofs of plaintext knowledge or correct computation).

Cost (2048-bit key, per elementwise triple): two encryptions by the key holder (CRT), two l-bit
exponentiations and about w slot-packing squarings by the evaluator, and 1/k of a decryption; measured in
``python -m bench he``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.correlations import matmul_shape
from mpdp.crypto.paillier import (
    CrtRandomizer,
    EncryptedArray,
    FixedBaseRandomizer,
    FixedPoint,
    Packing,
    PaillierPrivateKey,
    PaillierPublicKey,
    Randomizer,
    StandardRandomizer,
    decrypt_ints,
    encrypt,
    generate_keypair,
)
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import MpdpError, ParameterError, ProtocolAbortError, explain
from mpdp.protocols.mpc.provider import BeaverTriple, TripleSource
from mpdp.runtime import Comm

__all__ = ["PaillierTriples"]

_KEY, _MUL, _MUL_BACK, _MATMUL, _MATMUL_BACK = (
    "he.triples.key", "he.triples.mul", "he.triples.mul.back", "he.triples.matmul", "he.triples.matmul.back"
)


class PaillierTriples(TripleSource):
    """Two-party Beaver triples generated with Paillier (see the module docstring).

    Parameters
    ----------
    comm:
        This party's Comm. The constructor runs the setup (one message from the key holder).
    parties:
        The two computing parties; the first holds the Paillier key. Default: ``comm.parties``.
    key_bits:
        Paillier modulus length (2048 default).
    statistical_bits:
        sigma: the masks hide the cross terms up to statistical distance 2^-sigma.
    short_exponent:
        Use the opt-in DJN fixed-base randomizer on both sides (faster; extra assumption, see
        :mod:`mpdp.crypto.paillier.randomizers`).
    insecure_for_tests:
        Allow ``key_bits < 2048`` (tests only).
    """

    def __init__(self, comm: Comm, *, parties: Iterable[str] | None = None, key_bits: int = 2048,
                 statistical_bits: int = 40, short_exponent: bool = False, insecure_for_tests: bool = False) -> None:
        names = tuple(comm.parties if parties is None else parties)
        if len(names) != 2 or len(set(names)) != 2 or comm.name not in names or any(
            p not in comm.parties for p in names
        ):
            raise ParameterError(explain("parties", names, f"two distinct parties of {comm.parties} including "
                                         f"{comm.name!r}", "PaillierTriples serves exactly two computing parties"))
        if isinstance(statistical_bits, bool) or not isinstance(statistical_bits, int) or not 20 <= statistical_bits \
                <= 256:
            raise ParameterError(explain("statistical_bits", statistical_bits, "an int in [20, 256]",
                                         "use the default 40"))
        self.comm = comm
        self.parties = names
        self.key_holder, self.evaluator = names
        self.is_key_holder = comm.name == self.key_holder
        self.sigma = statistical_bits
        self.private_key: PaillierPrivateKey | None = None
        if self.is_key_holder:
            self.public_key, self.private_key = generate_keypair(key_bits, rng=comm.rng,
                                                                 insecure_for_tests=insecure_for_tests)
            comm.send(self.evaluator, self.public_key, label=_KEY)
            self.randomizer: Randomizer = (FixedBaseRandomizer(self.public_key, rng=comm.rng) if short_exponent
                                           else CrtRandomizer(self.private_key, rng=comm.rng))
        else:
            wire = comm.recv(self.key_holder, label=_KEY)
            self.public_key = PaillierPublicKey.from_wire(wire, insecure_for_tests=insecure_for_tests)
            if self.public_key.bits != key_bits:
                raise ProtocolAbortError(
                    f"{self.key_holder} sent a {self.public_key.bits}-bit Paillier key, expected {key_bits} bits: "
                    "configure both parties with the same key_bits"
                )
            self.randomizer = (FixedBaseRandomizer(self.public_key, rng=comm.rng) if short_exponent
                               else StandardRandomizer(self.public_key, rng=comm.rng))

    def __repr__(self) -> str:
        role = "key holder" if self.is_key_holder else "evaluator"
        return f"PaillierTriples({self.comm.name!r}, {role}, {self.public_key.bits}-bit key)"

    # -- helpers -------------------------------------------------------------------------------------------
    @staticmethod
    def _codec(ring: Ring) -> FixedPoint:
        return FixedPoint(frac_bits=0, max_abs=float(2 ** (ring.bits - 1)))

    def _mask_bits(self, bound: int) -> int:
        return bound.bit_length() + self.sigma + 1

    def _receive(self, wire: Any, what: str, shape: tuple[int, ...], packing: Packing | None,
                 bound: int) -> EncryptedArray:
        try:
            array = EncryptedArray.from_wire(wire, self.public_key)
        except MpdpError as exc:
            exc.add_note(f"in {what} from {self.comm.peers}")
            raise
        if array.shape != shape or array.packing != packing or array.frac_bits != 0 or array.bound > bound:
            raise ProtocolAbortError(
                f"{self.comm.name} expected {what} of shape {shape} with packing {packing} and bound <= 2^"
                f"{bound.bit_length()}, got shape {array.shape}, packing {array.packing}: the parties run "
                "different programs"
            )
        return array

    @staticmethod
    def _signed(ring: Ring, a: RingArray) -> npt.NDArray[Any]:
        return ring.to_object(a, signed=True)

    # -- elementwise triples -----------------------------------------------------------------------------
    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        c_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        rng = self.comm.rng
        a, b = ring.random(rng, a_shape), ring.random(rng, b_shape)
        codec = self._codec(ring)
        size_a, size_b, size_c = math.prod(a_shape), math.prod(b_shape), math.prod(c_shape)
        cross_bound = 2 * codec.bound * codec.bound
        mask_bits = self._mask_bits(cross_bound)
        back_packing = Packing.for_key(self.public_key, 8 * math.ceil(((cross_bound + (1 << mask_bits)).bit_length()
                                                                        + 1) / 8))
        local = ring.mul(a, b)
        if self.is_key_holder:
            key = self.public_key
            enc_a = encrypt(key, self._signed(ring, a).reshape(-1), codec, randomizer=self.randomizer)
            enc_b = encrypt(key, self._signed(ring, b).reshape(-1), codec, randomizer=self.randomizer)
            self.comm.send(self.evaluator, {"a": enc_a, "b": enc_b}, label=_MUL)
            reply = self.comm.recv(self.evaluator, label=_MUL_BACK)
            back = self._receive(reply, "masked cross terms", (size_c,), back_packing,
                                 cross_bound + (1 << mask_bits))
            v = decrypt_ints(self._key(), back)
            c = ring.add(local, ring.from_int(np.asarray(v, dtype=object).reshape(c_shape)))
        else:
            msg = self.comm.recv(self.key_holder, label=_MUL)
            if not isinstance(msg, dict) or set(msg) != {"a", "b"}:
                raise ProtocolAbortError(f"{self.comm.name} got a malformed triple request from {self.key_holder}")
            enc_a = self._receive(msg["a"], "Enc(a_0)", (size_a,), None, codec.bound)
            enc_b = self._receive(msg["b"], "Enc(b_0)", (size_b,), None, codec.bound)
            ia = np.broadcast_to(np.arange(size_a).reshape(a_shape), c_shape).reshape(-1)
            ib = np.broadcast_to(np.arange(size_b).reshape(b_shape), c_shape).reshape(-1)
            a1 = self._signed(ring, a).reshape(-1)[ia]
            b1 = self._signed(ring, b).reshape(-1)[ib]
            cross = enc_a.take(ia).mul(b1, codec) + enc_b.take(ib).mul(a1, codec)
            masked, r = cross.add_mask(mask_bits, rng=rng)
            self.comm.send(self.key_holder, masked.packed(back_packing).rerandomize(self.randomizer),
                           label=_MUL_BACK)
            c = ring.sub(local, ring.from_int(np.asarray(r, dtype=object).reshape(c_shape)))
        return BeaverTriple(a, b, c)

    # -- matrix triples -------------------------------------------------------------------------------------
    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        c_shape = matmul_shape(a_shape, b_shape)
        if len(a_shape) > 2 or len(b_shape) > 2:
            raise ParameterError(explain("matmul shapes", (a_shape, b_shape), "1-D or 2-D operands",
                                         "loop over the batch, or take batched triples from the dealer"))
        rng = self.comm.rng
        a, b = ring.random(rng, a_shape), ring.random(rng, b_shape)
        m, k = (1, a_shape[0]) if len(a_shape) == 1 else a_shape
        n = 1 if len(b_shape) == 1 else b_shape[1]
        codec = self._codec(ring)
        A = self._signed(ring, a).reshape(m, k)
        B = self._signed(ring, b).reshape(k, n)
        cross_bound = k * codec.bound * codec.bound
        mask_bits = self._mask_bits(cross_bound)
        packing = Packing.for_computation(self.public_key, codec, terms=k, weight_codec=codec, mask_bits=mask_bits)
        local = ring.matmul(a, b)
        if self.is_key_holder:
            key = self.public_key
            enc_b = encrypt(key, B, codec, packing=packing, randomizer=self.randomizer)
            enc_at = encrypt(key, A.T.copy(), codec, packing=packing, randomizer=self.randomizer)
            self.comm.send(self.evaluator, {"b": enc_b, "at": enc_at}, label=_MATMUL)
            reply = self.comm.recv(self.evaluator, label=_MATMUL_BACK)
            if not isinstance(reply, dict) or set(reply) != {"ab", "ba"}:
                raise ProtocolAbortError(f"{self.comm.name} got a malformed triple reply from {self.evaluator}")
            limit = cross_bound + (1 << mask_bits)
            x1 = decrypt_ints(self._key(), self._receive(reply["ab"], "A_1 B_0 + r_1", (m, n), packing, limit))
            x2 = decrypt_ints(self._key(), self._receive(reply["ba"], "(A_0 B_1)^T + r_2", (n, m), packing, limit))
            v = np.asarray(x1, dtype=object) + np.asarray(x2, dtype=object).T
            c = ring.add(local, ring.from_int(v.reshape(c_shape)))
        else:
            msg = self.comm.recv(self.key_holder, label=_MATMUL)
            if not isinstance(msg, dict) or set(msg) != {"b", "at"}:
                raise ProtocolAbortError(f"{self.comm.name} got a malformed triple request from {self.key_holder}")
            enc_b = self._receive(msg["b"], "Enc(B_0)", (k, n), packing, codec.bound)
            enc_at = self._receive(msg["at"], "Enc(A_0^T)", (k, m), packing, codec.bound)
            ab, r1 = enc_b.left_matmul(A, codec).add_mask(mask_bits, rng=rng)
            ba, r2 = enc_at.left_matmul(B.T.copy(), codec).add_mask(mask_bits, rng=rng)
            self.comm.send(self.key_holder, {"ab": ab.rerandomize(self.randomizer),
                                             "ba": ba.rerandomize(self.randomizer)}, label=_MATMUL_BACK)
            r = np.asarray(r1, dtype=object) + np.asarray(r2, dtype=object).T
            c = ring.sub(local, ring.from_int(r.reshape(c_shape)))
        return BeaverTriple(a, b, c)

    def _key(self) -> PaillierPrivateKey:
        if self.private_key is None:  # pragma: no cover - only the key holder decrypts
            raise ProtocolAbortError(f"{self.comm.name} is not the key holder")
        return self.private_key
