"""Encrypted arrays: vectors and matrices of fixed-point values under one Paillier key, packed or not.

An :class:`EncryptedArray` is a 0-, 1- or 2-D array of reals encrypted under one public key with one public
format: ``frac_bits`` fractional bits and a public ``bound`` on |integer plaintext| per value. With a
:class:`~mpdp.crypto.paillier.packing.Packing`, each row is packed ``slots`` values per ciphertext; without,
each value is its own ciphertext. Operations (all slotwise for packed arrays):

=====================================  ==============================  ===============================
operation                              ciphertext maths                new public bound
=====================================  ==============================  ===============================
``a + b``, ``a - b``, ``-a``           c c', c / c', 1 / c             B_a + B_b, B_a + B_b, B_a
``a.add_plain(x, codec)``              c (1 + x n)                     B_a + codec.bound
``a.mul(w, codec)``                    c^w                             B_a * codec.bound
``a.dot(w, codec)`` (1-D, unpacked)    prod_i c_i^(w_i): one multi-    L * B_a * codec.bound
                                       exponentiation (Pippenger)
``a.left_matmul(W, codec)``            W @ a, one multi-exp per        rows * B_a * codec.bound
                                       output ciphertext
``a.sum()``                            prod_i c_i                      rows * B_a
``a.add_mask(bits, rng=)``             c (1 + r n), r < 2^bits         B_a + 2^bits - 1
``a.take(idx)`` (1-D, unpacked)        gather                          B_a
``a.packed(packing)`` (unpacked)       prod_j c_j^(2^(j w)) (Horner)   B_a (<= slot capacity)
=====================================  ==============================  ===============================

The bound is computed from declared formats only (never from the data), checked against the slot or plaintext
capacity *before* each operation, and travels with the ciphertexts; decryption re-checks every value against it.
Exceeding capacity raises :class:`~mpdp.errors.EncodingOverflowError` instead of wrapping.

Security
--------
A result that depends on this party's private plaintext (``add_plain``, ``mul``, ``dot``, ``left_matmul``,
``add_mask``) is a deterministic function of ciphertexts the key owner made, so the key owner, knowing their
randomizers, could test guesses of that plaintext. Such results are marked not ``fresh`` and refuse
``to_wire()`` until :meth:`EncryptedArray.rerandomize` multiplies in a fresh encryption of zero.
"""

from __future__ import annotations

import hmac
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from mpdp.crypto.paillier.encoding import FixedPoint, decode_ints
from mpdp.crypto.paillier.keys import PaillierPrivateKey, PaillierPublicKey
from mpdp.crypto.paillier.multiexp import multiexp
from mpdp.crypto.paillier.packing import Packing
from mpdp.crypto.paillier.randomizers import Randomizer, StandardRandomizer
from mpdp.crypto.paillier.serialization import (
    ARRAY_WIRE_VERSION,
    array_digest,
    array_header,
    check_key_id,
    check_recipe,
    wire_int,
    wire_ints,
)
from mpdp.errors import (
    CryptoError,
    EncodingOverflowError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    ShapeMismatchError,
    TamperedCiphertextError,
    explain,
)
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource, resolve

__all__ = ["EncryptedArray", "decrypt", "decrypt_ints", "encrypt"]


#: Ciphertexts made per batch by :func:`encrypt` (randomizers drawn per batch; a progress bar advances per batch).
ENCRYPT_BATCH = 512


def _grid(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, cols) of the packing grid for a 0-, 1- or 2-D logical shape."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    return shape[0], shape[1]


def _check_randomizer(randomizer: Randomizer, key: PaillierPublicKey) -> None:
    if not isinstance(randomizer, Randomizer):
        raise ParameterError(explain("randomizer", type(randomizer).__name__, "a Randomizer",
                                     "pass e.g. StandardRandomizer(public_key, rng=rng)"))
    key.require_same(randomizer.public_key, "randomizer")


class EncryptedArray:
    """Paillier ciphertexts of a fixed-point array; see the module docstring for operations and bounds.

    Build one with :func:`encrypt` or :meth:`from_wire`; the constructor is for this package's internals.
    """

    __slots__ = ("bound", "ciphertexts", "frac_bits", "fresh", "packing", "public_key", "shape")

    def __init__(
        self,
        public_key: PaillierPublicKey,
        ciphertexts: npt.NDArray[Any],
        shape: tuple[int, ...],
        *,
        packing: Packing | None,
        frac_bits: int,
        bound: int,
        fresh: bool = True,
    ) -> None:
        self.public_key = public_key
        self.ciphertexts = ciphertexts
        self.shape = tuple(int(s) for s in shape)
        self.packing = packing
        self.frac_bits = int(frac_bits)
        self.bound = int(bound)
        self.fresh = fresh

    # -- layout ------------------------------------------------------------------------------------------
    @property
    def slots(self) -> int:
        return 1 if self.packing is None else self.packing.slots

    @property
    def capacity(self) -> int:
        """Largest |integer| a value may reach: the slot capacity, or (n - 1) / 2 unpacked."""
        return self.public_key.max_plaintext if self.packing is None else self.packing.capacity

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d EncryptedArray")
        return self.shape[0]

    @property
    def n_ciphertexts(self) -> int:
        return int(self.ciphertexts.size)

    @property
    def nbytes(self) -> int:
        """Bytes of ciphertext payload (each ciphertext is an element of Z_{n^2})."""
        return self.n_ciphertexts * ((2 * self.public_key.bits + 7) // 8)

    def __repr__(self) -> str:
        layout = "unpacked" if self.packing is None else f"{self.packing.slots}x{self.packing.slot_bits}-bit slots"
        return (f"EncryptedArray(shape={self.shape}, {layout}, frac_bits={self.frac_bits}, "
                f"bound=2^{self.bound.bit_length()}, key={self.public_key.key_id[:12]}...)")

    def _derive(self, ciphertexts: npt.NDArray[Any], shape: tuple[int, ...], *, frac_bits: int | None = None,
                bound: int, fresh: bool) -> EncryptedArray:
        self._check_capacity(bound)
        return EncryptedArray(self.public_key, ciphertexts, shape, packing=self.packing,
                              frac_bits=self.frac_bits if frac_bits is None else frac_bits, bound=bound, fresh=fresh)

    def _check_capacity(self, bound: int) -> None:
        """Raise before an operation whose result could exceed the slot or plaintext capacity."""
        if bound > self.capacity:
            raise EncodingOverflowError(
                explain("result bound", f"2^{bound.bit_length()}", f"<= {self.capacity} (the "
                        + ("packing slot" if self.packing else "plaintext space") + ")",
                        "declare more headroom: Packing.for_computation(terms=..., weight_codec=...), fewer "
                        "fractional bits, or no packing")
            )

    def _require_compatible(self, other: EncryptedArray) -> None:
        self.public_key.require_same(other.public_key, "operand")
        if other.shape != self.shape:
            raise ShapeMismatchError(explain("operand shape", other.shape, str(self.shape), "align the arrays"))
        if other.packing != self.packing or other.frac_bits != self.frac_bits:
            raise ParameterError(
                explain("operand format", (other.packing, other.frac_bits), str((self.packing, self.frac_bits)),
                        "encrypt both with the same codec and packing (multiply by 2^k to align frac_bits)")
            )

    # -- ciphertext-ciphertext -------------------------------------------------------------------------------
    def __add__(self, other: object) -> EncryptedArray:
        if not isinstance(other, EncryptedArray):
            return NotImplemented
        self._require_compatible(other)
        n2 = self.public_key.n2
        out = _map2(lambda a, b: a * b % n2, self.ciphertexts, other.ciphertexts)
        return self._derive(out, self.shape, bound=self.bound + other.bound, fresh=self.fresh and other.fresh)

    def __neg__(self) -> EncryptedArray:
        n2 = self.public_key.n2
        out = _map1(lambda c: gmpy2.invert(c, n2), self.ciphertexts)
        return self._derive(out, self.shape, bound=self.bound, fresh=self.fresh)

    def __sub__(self, other: object) -> EncryptedArray:
        if not isinstance(other, EncryptedArray):
            return NotImplemented
        return self + (-other)

    def sum(self) -> EncryptedArray:
        """Sum over the first axis: a 1-D unpacked vector to a scalar, a 2-D array to one row (packed or not)."""
        n2 = self.public_key.n2
        if self.ndim == 2:
            out = np.empty((1, self.ciphertexts.shape[1]), dtype=object)
            for b in range(self.ciphertexts.shape[1]):
                out[0, b] = _product(self.ciphertexts[:, b].tolist(), n2)
            return self._derive(out, (self.shape[1],), bound=self.bound * self.shape[0], fresh=self.fresh)
        self._require_unpacked("sum of a 1-D array")
        out = np.empty((1, 1), dtype=object)
        out[0, 0] = _product(self.ciphertexts.reshape(-1).tolist(), n2)
        return self._derive(out, (), bound=self.bound * max(1, self.ciphertexts.size), fresh=self.fresh)

    # -- ciphertext-plaintext ----------------------------------------------------------------------------------
    def add_plain(self, values: Any, codec: FixedPoint) -> EncryptedArray:
        """Add plaintext reals (same shape) encoded with ``codec``; codec.frac_bits must equal ``frac_bits``."""
        if codec.frac_bits != self.frac_bits:
            raise ParameterError(explain("codec.frac_bits", codec.frac_bits, str(self.frac_bits),
                                         f"encode the addend with FixedPoint(frac_bits={self.frac_bits}, ...)"))
        ints = codec.encode(values)
        if ints.shape != self.shape:
            raise ShapeMismatchError(explain("addend shape", ints.shape, str(self.shape), "pass one value per entry"))
        return self._add_ints(ints, self.bound + codec.bound)

    def _add_ints(self, ints: npt.NDArray[Any], bound: int) -> EncryptedArray:
        self._check_capacity(bound)
        rows, cols = _grid(self.shape)
        grid = ints.reshape(rows, cols)
        plain = grid.astype(object) if self.packing is None else self.packing.pack(grid)
        key = self.public_key
        out = _map2(lambda c, m: key.encode_plaintext(int(m)) * c % key.n2, self.ciphertexts, plain)
        return self._derive(out, self.shape, bound=bound, fresh=False)

    def mul(self, weights: Any, codec: FixedPoint) -> EncryptedArray:
        """Multiply by plaintext reals: a scalar (any layout) or one weight per entry (unpacked only)."""
        w = codec.encode(weights)
        n2 = self.public_key.n2
        self._check_capacity(self.bound * codec.bound)
        if w.ndim == 0:
            e = int(w)
            out = _map1(lambda c: gmpy2.powmod(c, e, n2), self.ciphertexts)
        else:
            self._require_unpacked("elementwise multiplication")
            if w.shape != self.shape:
                raise ShapeMismatchError(explain("weights shape", w.shape, str(self.shape),
                                                 "pass a scalar or one weight per entry"))
            out = _map2(lambda c, e: gmpy2.powmod(c, int(e), n2), self.ciphertexts, w.reshape(self.ciphertexts.shape))
        return self._derive(out, self.shape, frac_bits=self.frac_bits + codec.frac_bits,
                            bound=self.bound * codec.bound, fresh=False)

    def dot(self, weights: Any, codec: FixedPoint) -> EncryptedArray:
        """<a, w> for a 1-D unpacked array: one multi-exponentiation. Returns a 0-d EncryptedArray."""
        if self.ndim != 1:
            raise ShapeMismatchError(explain("array", self.shape, "a 1-D array", "use left_matmul for matrices"))
        w = codec.encode(weights)
        if w.shape != self.shape:
            raise ShapeMismatchError(explain("weights shape", w.shape, str(self.shape), "pass one weight per entry"))
        return self._left_matmul(w.reshape(1, -1), codec).reshape_scalar()

    def left_matmul(self, W: Any, codec: FixedPoint, *, progress: Progress = SILENT) -> EncryptedArray:
        """W @ a for a plaintext matrix W (m x rows): one multi-exponentiation per output ciphertext.

        For a 2-D array (packed rows allowed) the result is (m, cols); for a 1-D unpacked array of length L,
        W is (m, L) and the result is (m,). ``progress`` shows a bar advanced per output ciphertext.
        """
        w = codec.encode(W)
        if w.ndim != 2:
            raise ShapeMismatchError(explain("W", w.shape, "a 2-D matrix", "pass W with shape (m, rows)"))
        return self._left_matmul(w, codec, progress)

    def _left_matmul(self, w: npt.NDArray[Any], codec: FixedPoint, progress: Progress = SILENT) -> EncryptedArray:
        n2 = self.public_key.n2
        if self.ndim == 2:
            rows = self.shape[0]
            if w.shape[1] != rows:
                raise ShapeMismatchError(explain("W columns", w.shape[1], str(rows), "W must be (m, rows of a)"))
            bound = max(1, rows) * self.bound * codec.bound
            self._check_capacity(bound)
            out = np.empty((w.shape[0], self.ciphertexts.shape[1]), dtype=object)
            with progress.bar("multi-exponentiations", total=out.size, unit="ct") as bar:
                for b in range(self.ciphertexts.shape[1]):
                    bases = self.ciphertexts[:, b].tolist()
                    for i in range(w.shape[0]):
                        out[i, b] = multiexp(bases, w[i], n2)
                        bar.update()
            shape: tuple[int, ...] = (w.shape[0], self.shape[1])
        elif self.ndim == 1:
            self._require_unpacked("a matrix-vector product")
            rows = self.shape[0]
            if w.shape[1] != rows:
                raise ShapeMismatchError(explain("W columns", w.shape[1], str(rows), "W must be (m, len(a))"))
            bound = max(1, rows) * self.bound * codec.bound
            self._check_capacity(bound)
            bases = self.ciphertexts.reshape(-1).tolist()
            out = np.empty((1, w.shape[0]), dtype=object)
            with progress.bar("multi-exponentiations", total=out.size, unit="ct") as bar:
                for i in range(w.shape[0]):
                    out[0, i] = multiexp(bases, w[i], n2)
                    bar.update()
            shape = (w.shape[0],)
        else:
            raise ShapeMismatchError(explain("array", self.shape, "a 1-D or 2-D array", "reshape it"))
        return self._derive(out, shape, frac_bits=self.frac_bits + codec.frac_bits, bound=bound, fresh=False)

    def take(self, indices: Any) -> EncryptedArray:
        """The values at ``indices`` of a 1-D unpacked array (a gather; ciphertexts are shared, not copied)."""
        self._require_unpacked("take")
        if self.ndim != 1:
            raise ShapeMismatchError(explain("array", self.shape, "a 1-D array", "flatten it first"))
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.shape[0]):
            raise ShapeMismatchError(explain("indices", (int(idx.min()), int(idx.max())),
                                             f"in [0, {self.shape[0]})", "index within the array"))
        out = np.empty((1, idx.size), dtype=object)
        out[0, :] = self.ciphertexts[0, idx]
        return EncryptedArray(self.public_key, out, (int(idx.size),), packing=None, frac_bits=self.frac_bits,
                              bound=self.bound, fresh=self.fresh)

    def packed(self, packing: Packing) -> EncryptedArray:
        """Pack an unpacked array into slots homomorphically (along the last axis, like :func:`encrypt`).

        Enc(v_0 + v_1 2^w + ...) = prod_j Enc(v_j)^(2^(j w)), evaluated by Horner's rule: w squarings per
        slot, so packing k values costs about one full exponentiation, after which one rerandomization and
        one decryption serve all k (the return trip of a protocol).
        """
        self._require_unpacked("packed")
        packing.check_key(self.public_key.bits)
        if self.bound > packing.capacity:
            raise EncodingOverflowError(explain("bound", f"2^{self.bound.bit_length()}",
                                                f"<= slot capacity {packing.capacity}", "use wider slots"))
        rows, cols = _grid(self.shape)
        k, n2 = packing.slots, self.public_key.n2
        shift = 1 << packing.slot_bits
        blocks = packing.blocks(cols)
        out = np.empty((rows, blocks), dtype=object)
        for r in range(rows):
            row = self.ciphertexts[r].tolist()
            for b in range(blocks):
                chunk = row[b * k : (b + 1) * k]
                acc = chunk[-1]
                for c in reversed(chunk[:-1]):
                    acc = gmpy2.powmod(acc, shift, n2) * c % n2
                out[r, b] = acc
        return EncryptedArray(self.public_key, out, self.shape, packing=packing, frac_bits=self.frac_bits,
                              bound=self.bound, fresh=self.fresh)

    def reshape_scalar(self) -> EncryptedArray:
        """A 1-element 1-D unpacked array as a 0-d array."""
        if self.packing is not None or self.ciphertexts.size != 1:
            raise ShapeMismatchError(explain("array", self.shape, "one unpacked value", "index it first"))
        return EncryptedArray(self.public_key, self.ciphertexts.reshape(1, 1), (), packing=None,
                              frac_bits=self.frac_bits, bound=self.bound, fresh=self.fresh)

    def add_mask(self, mask_bits: int, *, rng: RandomSource | None = None) -> tuple[EncryptedArray, npt.NDArray[Any]]:
        """Add a uniform mask r in [0, 2^mask_bits) to every value; return (masked array, r as integers).

        The decryptor then learns v + r, which hides v statistically with 2^-(mask_bits - log2(bound))
        statistical distance (choose mask_bits = bound.bit_length() + 40 for 40 bits): the standard
        conversion of an encrypted value into additive shares (v + r, -r). ``r`` is on the array's integer
        scale (divide by 2^frac_bits for reals).
        """
        if isinstance(mask_bits, bool) or not isinstance(mask_bits, int) or mask_bits < 1:
            raise ParameterError(explain("mask_bits", mask_bits, "an int >= 1", "pass e.g. bound.bit_length() + 40"))
        source = resolve(rng)
        count = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        if mask_bits <= 62:
            masks: npt.NDArray[Any] = source.below(1 << mask_bits, count).astype(np.int64).reshape(self.shape)
        else:
            masks = np.empty(count, dtype=object)
            masks[:] = source.randbelow_many(1 << mask_bits, count)
            masks = masks.reshape(self.shape)
        return self._add_ints(masks, self.bound + (1 << mask_bits) - 1), masks

    # -- privacy ---------------------------------------------------------------------------------------------
    def rerandomize(self, randomizer: Randomizer | None = None, *, rng: RandomSource | None = None) -> EncryptedArray:
        """The same plaintexts under fresh randomness (multiply each ciphertext by an encryption of 0)."""
        source = StandardRandomizer(self.public_key, rng=rng) if randomizer is None else randomizer
        _check_randomizer(source, self.public_key)
        rho = source.draw(self.n_ciphertexts)
        n2 = self.public_key.n2
        flat = [c * r % n2 for c, r in zip(self.ciphertexts.reshape(-1).tolist(), rho, strict=True)]
        out = np.empty(self.ciphertexts.shape, dtype=object)
        out.reshape(-1)[:] = flat
        return EncryptedArray(self.public_key, out, self.shape, packing=self.packing, frac_bits=self.frac_bits,
                              bound=self.bound, fresh=True)

    def _require_unpacked(self, what: str) -> None:
        if self.packing is not None:
            raise ParameterError(explain(what, "a packed array", "an unpacked array (packing=None)",
                                         "packed slots share one exponent: encrypt without packing for this"))

    # -- wire ----------------------------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """Public wire form. Refuses results that must be rerandomized first (see Security above)."""
        if not self.fresh:
            raise CryptoError(
                explain("EncryptedArray.to_wire", "a result derived from this party's plaintext",
                        "a rerandomized ciphertext", "call .rerandomize(rng=...) (or a fast randomizer) before sending")
            )
        packing = self.packing
        slot_bits, slots = (0, 1) if packing is None else (packing.slot_bits, packing.slots)
        digest = array_digest(array_header(self.public_key.key_id, self.shape, slot_bits, slots, self.frac_bits,
                                      self.bound), self.ciphertexts.reshape(-1).tolist())
        return {
            "type": "paillier.array", "version": ARRAY_WIRE_VERSION, "key_id": self.public_key.key_id,
            "shape": list(self.shape), "slot_bits": slot_bits, "slots": slots, "frac_bits": self.frac_bits,
            "bound": self.bound, "ciphertexts": self.ciphertexts, "digest": digest,
        }

    @classmethod
    def from_wire(cls, wire: Any, public_key: PaillierPublicKey) -> EncryptedArray:
        """Rebuild and validate an array received from another party (see ``serialization``): any field changed
        after :meth:`to_wire` (``frac_bits``, ``bound``, shape, packing, a ciphertext) fails the digest."""
        fields = {"key_id", "shape", "slot_bits", "slots", "frac_bits", "bound", "ciphertexts", "digest"}
        recipe = check_recipe(wire, "paillier.array", fields, ARRAY_WIRE_VERSION)
        shape = recipe["shape"]
        if not isinstance(shape, list) or len(shape) > 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 1 << 40 for s in shape
        ):
            raise MalformedMessageError(explain("shape", shape, "a list of at most 2 sizes", "reject the sender"))
        check_key_id(recipe["key_id"], public_key.key_id, "EncryptedArray")
        slot_bits = wire_int(recipe, "slot_bits", low=0, high=public_key.bits)
        slots = wire_int(recipe, "slots", low=1, high=public_key.bits)
        packing = None
        if slot_bits:
            packing = Packing(slot_bits=slot_bits, slots=slots)
            try:
                packing.check_key(public_key.bits)
            except ParameterError as exc:
                raise MalformedMessageError(str(exc)) from exc
        elif slots != 1:
            raise MalformedMessageError(explain("slots", slots, "1 when slot_bits is 0", "reject the sender"))
        frac_bits = wire_int(recipe, "frac_bits", low=0, high=1 << 16)
        capacity = public_key.max_plaintext if packing is None else packing.capacity
        bound = wire_int(recipe, "bound", low=0, high=capacity + 1)
        rows, cols = _grid(tuple(shape))
        blocks = cols if packing is None else packing.blocks(cols)
        raw = recipe["ciphertexts"]
        if isinstance(raw, np.ndarray) and raw.shape != (rows, blocks):
            raise MalformedMessageError(explain("ciphertexts shape", raw.shape, str((rows, blocks)), "reject it"))
        values = wire_ints(raw, rows * blocks, low=1, high=int(public_key.n2), what="ciphertext")
        digest = recipe["digest"]
        header = array_header(public_key.key_id, tuple(shape), slot_bits, slots, frac_bits, bound)
        if not isinstance(digest, bytes) or not hmac.compare_digest(digest, array_digest(header, values)):
            raise TamperedCiphertextError(
                explain("paillier.array digest", digest[:8].hex() + "..." if isinstance(digest, bytes) else digest,
                        "the SHA-256 of its key, shape, packing, frac_bits, bound and ciphertexts",
                        "a field was changed after the array was sent; reject the message")
            )
        out = np.empty((rows, blocks), dtype=object)
        out.reshape(-1)[:] = [gmpy2.mpz(v) for v in values]
        return cls(public_key, out, tuple(shape), packing=packing, frac_bits=frac_bits, bound=bound)

    # -- phe interop -------------------------------------------------------------------------------------------
    def to_phe(self) -> list[Any]:
        """Unpacked values as ``phe.EncryptedNumber`` (phe's exponent is base 16: frac_bits is rounded up to a
        multiple of 4 by a plaintext multiplication by 2^(4 - frac_bits mod 4) when needed)."""
        import phe

        self._require_unpacked("conversion to phe")
        pad = -self.frac_bits % 4
        source = self if pad == 0 else self.mul(1 << pad, FixedPoint(0, float(1 << pad)))
        key = self.public_key.to_phe()
        exponent = -(self.frac_bits + pad) // 4
        return [phe.EncryptedNumber(key, int(c), exponent) for c in source.ciphertexts.reshape(-1).tolist()]

    @classmethod
    def from_phe(cls, numbers: Any, public_key: PaillierPublicKey, codec: FixedPoint) -> EncryptedArray:
        """A 1-D unpacked array from ``phe.EncryptedNumber`` s, aligned to ``codec.frac_bits`` (which must be
        at least each number's 4 * -exponent); ``codec`` declares the public bound of the values."""
        items = list(numbers)
        out = np.empty((1, len(items)), dtype=object)
        n2 = public_key.n2
        for i, number in enumerate(items):
            if int(number.public_key.n) != int(public_key.n):
                raise KeyMismatchError(explain("phe number", "a number under another key", repr(public_key),
                                               "convert numbers encrypted under this public key only"))
            shift = codec.frac_bits + 4 * number.exponent
            if shift < 0:
                raise ParameterError(explain("codec.frac_bits", codec.frac_bits, f">= {-4 * number.exponent}",
                                             "use a codec with more fractional bits"))
            c = gmpy2.mpz(number.ciphertext(be_secure=False))
            out[0, i] = gmpy2.powmod(c, 1 << shift, n2) if shift else c
        return cls(public_key, out, (len(items),), packing=None, frac_bits=codec.frac_bits, bound=codec.bound)


def _map1(fn: Any, a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [fn(x) for x in a.reshape(-1).tolist()]
    return out


def _map2(fn: Any, a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [fn(x, y) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True)]
    return out


def _product(values: list[Any], modulus: Any) -> Any:
    acc = gmpy2.mpz(1)
    for v in values:
        acc = acc * v % modulus
    return acc


# -- encryption and decryption ---------------------------------------------------------------------------------
def encrypt(
    public_key: PaillierPublicKey,
    values: Any,
    codec: FixedPoint,
    *,
    packing: Packing | None = None,
    randomizer: Randomizer | None = None,
    rng: RandomSource | None = None,
    progress: Progress = SILENT,
) -> EncryptedArray:
    """Encrypt a scalar, vector or matrix of reals with a public fixed-point ``codec``.

    Parameters
    ----------
    public_key:
        The recipient's key.
    values:
        Reals (or ints) of shape (), (L,) or (R, C), each with |x| <= codec.max_abs.
    codec:
        The protocol's public fixed-point format.
    packing:
        Pack each row's values into slots (see :class:`~mpdp.crypto.paillier.packing.Packing`); None: one
        ciphertext per value.
    randomizer:
        Where the n-th residues come from (see :mod:`~mpdp.crypto.paillier.randomizers`); default a
        :class:`StandardRandomizer` on ``rng``. The key owner should pass ``CrtRandomizer(private_key)``.
    rng:
        Used only for the default randomizer.
    progress:
        Shows a bar over the ciphertexts. They are made in batches of :data:`ENCRYPT_BATCH`, each drawing its
        randomizers from ``randomizer`` in turn, whether or not a bar is shown.
    """
    ints = codec.encode(values)
    if ints.ndim > 2:
        raise ShapeMismatchError(explain("values", ints.shape, "a scalar, vector or matrix", "reshape the data"))
    rows, cols = _grid(ints.shape)
    grid = ints.reshape(rows, cols)
    if packing is not None:
        packing.check_key(public_key.bits)
        if codec.bound > packing.capacity:
            raise EncodingOverflowError(explain("codec.bound", codec.bound, f"<= slot capacity {packing.capacity}",
                                                "use Packing.for_computation(key, codec, ...)"))
        plain = packing.pack(grid)
    else:
        if codec.bound > public_key.max_plaintext:
            raise EncodingOverflowError(explain("codec.bound", f"2^{codec.bound.bit_length()}",
                                                "< n / 2", "use fewer fractional bits or a larger key"))
        plain = grid.astype(object)
    source = StandardRandomizer(public_key, rng=rng) if randomizer is None else randomizer
    _check_randomizer(source, public_key)
    n, n2 = public_key.n, public_key.n2
    out = np.empty(plain.shape, dtype=object)
    flat, values = out.reshape(-1), plain.reshape(-1).tolist()
    with progress.bar("encrypting", total=len(values), unit="ct") as bar:
        for start in range(0, len(values), ENCRYPT_BATCH):
            batch = values[start:start + ENCRYPT_BATCH]
            rho = source.draw(len(batch))
            # (1 + m n) mod n^2 for signed |m| < n/2 is 1 + m n (+ n^2 if negative): no reduction of m needed.
            flat[start:start + len(batch)] = [(1 + int(m) * n + (n2 if m < 0 else 0)) * r % n2
                                              for m, r in zip(batch, rho, strict=True)]
            bar.update(len(batch))
    return EncryptedArray(public_key, out, tuple(ints.shape), packing=packing, frac_bits=codec.frac_bits,
                          bound=codec.bound)


def decrypt_ints(private_key: PaillierPrivateKey, array: EncryptedArray) -> npt.NDArray[Any]:
    """The integer plaintexts (scaled by 2^frac_bits), shape ``array.shape``; checked against the bound."""
    if not isinstance(array, EncryptedArray) or not isinstance(private_key, PaillierPrivateKey):
        raise ParameterError(explain("decrypt", (type(private_key).__name__, type(array).__name__),
                                     "(PaillierPrivateKey, EncryptedArray)", "decrypt arrays made by encrypt()"))
    private_key.public_key.require_same(array.public_key, "EncryptedArray")
    plain = np.empty(array.ciphertexts.shape, dtype=object)
    plain.reshape(-1)[:] = [private_key.decrypt_int(c) for c in array.ciphertexts.reshape(-1).tolist()]
    return unpack_plaintexts(array, plain)


def unpack_plaintexts(array: EncryptedArray, plain: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Signed plaintexts of ``array``'s ciphertexts -> its integer values (unpacked, bound-checked)."""
    _rows, cols = _grid(array.shape)
    if array.packing is not None:
        ints = array.packing.unpack(plain, cols, array.bound)
    else:
        if plain.size and max(abs(v) for v in plain.reshape(-1).tolist()) > array.bound:
            raise EncodingOverflowError(
                explain("decrypted value", "a value beyond the tracked bound", f"|v| <= {array.bound}",
                        "a value overflowed or the ciphertext was altered; reject the sender")
            )
        ints = plain if array.bound >= 1 << 62 else plain.astype(np.int64)
    return ints.reshape(array.shape)


def decrypt(private_key: PaillierPrivateKey, array: EncryptedArray) -> npt.NDArray[np.float64]:
    """The reals of ``array`` (float64, shape ``array.shape``)."""
    return decode_ints(decrypt_ints(private_key, array), array.frac_bits)
