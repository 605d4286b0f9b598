"""Packing many signed fixed-point integers into one Paillier plaintext, with headroom checked.

A plaintext of a k-bit key holds ``slots`` slots of ``slot_bits`` = w bits each::

    P = v_0 + v_1 2^w + v_2 2^(2w) + ... + v_(s-1) 2^((s-1) w),      |v_j| <= 2^(w-1) - 1.

The slot values are *signed* and the packing is an integer linear map, so the Paillier operations act slot by
slot: Enc(P) Enc(P') = Enc(P + P') adds slots, Enc(P)^a multiplies every slot by the plaintext integer a, and
prod_i Enc(P_i)^(a_i) is the slotwise weighted sum. The result is exact as long as every slot stays within
+-(2^(w-1) - 1) ("headroom") and s w <= k - 2, which keeps |P| < n / 2 so the centred decryption returns P
itself. Unpacking adds the constant O = sum_j 2^(w-1) 2^(jw), which turns every slot into a base-2^w digit in
[1, 2^w - 1] with no borrows, and subtracts 2^(w-1) from each digit.

Headroom is *declared*, not inferred from data: :meth:`Packing.for_computation` sizes the slot for a bound on
the inputs, the number of terms a sum will have, the bound of the plaintext weights, and any statistical mask;
:class:`~mpdp.crypto.paillier.ciphertext.EncryptedArray` tracks the public bound through every operation and
raises :class:`~mpdp.errors.EncodingOverflowError` *before* an operation could push a slot past its capacity.
Unpacking re-checks every slot against the tracked bound and every unused slot against zero, so a wrapped or
tampered slot is reported, never returned.

Byte-aligned slots of at most 64 bits (the default from :meth:`for_computation`) pack and unpack through numpy
byte views; other widths use a slower pure-Python path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.paillier.encoding import FixedPoint
from mpdp.errors import EncodingOverflowError, ParameterError, PrecisionError, TamperedCiphertextError, explain

__all__ = ["Packing"]


@dataclass(frozen=True)
class Packing:
    """``slots`` signed slots of ``slot_bits`` bits per plaintext.

    >>> p = Packing(slot_bits=64, slots=31)
    >>> p.capacity == 2**63 - 1
    True
    """

    slot_bits: int
    slots: int

    def __post_init__(self) -> None:
        for name, low in (("slot_bits", 2), ("slots", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(explain(name, value, f"an int >= {low}",
                                             "build it with Packing.for_computation(...) or Packing.for_key(...)"))

    @property
    def capacity(self) -> int:
        """The largest |slot value|: 2^(slot_bits - 1) - 1."""
        return (1 << (self.slot_bits - 1)) - 1

    @property
    def plaintext_bits(self) -> int:
        return self.slot_bits * self.slots

    def check_key(self, key_bits: int) -> None:
        """Raise :class:`~mpdp.errors.PrecisionError` if the slots do not fit a ``key_bits``-bit modulus."""
        if self.plaintext_bits > key_bits - 2:
            raise PrecisionError(
                explain("slot_bits * slots", self.plaintext_bits, f"<= {key_bits - 2} for a {key_bits}-bit key",
                        "use fewer slots: Packing.for_key(public_key, slot_bits)")
            )

    @classmethod
    def for_key(cls, key: Any, slot_bits: int) -> Packing:
        """As many ``slot_bits``-bit slots as a key's plaintext holds."""
        slots = (key.bits - 2) // slot_bits
        if slots < 1:
            raise PrecisionError(explain("slot_bits", slot_bits, f"<= {key.bits - 2}", "use narrower slots"))
        return cls(slot_bits=slot_bits, slots=slots)

    @classmethod
    def for_computation(
        cls,
        key: Any,
        codec: FixedPoint,
        *,
        terms: int = 1,
        weight_codec: FixedPoint | None = None,
        mask_bits: int = 0,
        byte_aligned: bool = True,
    ) -> Packing:
        """The widest packing whose slots hold a declared computation without overflow.

        The slot must hold terms * codec.bound * weight_bound + 2^mask_bits in magnitude, plus a sign bit.

        Parameters
        ----------
        key:
            The public key (its bit length bounds the number of slots).
        codec:
            Format of the encrypted values: every slot starts with |v| <= codec.bound.
        terms:
            Most ciphertexts that will be summed into one result (e.g. 45,222 rows in X^T X).
        weight_codec:
            Format of the plaintext weights each term is multiplied by (None: no multiplication).
        mask_bits:
            A uniform mask in [0, 2^mask_bits) that will be added to each result slot (0: none).
        byte_aligned:
            Round the slot width up to whole bytes (fast packing); default True.
        """
        if isinstance(terms, bool) or not isinstance(terms, int) or terms < 1:
            raise ParameterError(explain("terms", terms, "an int >= 1", "pass the number of summed terms"))
        if isinstance(mask_bits, bool) or not isinstance(mask_bits, int) or mask_bits < 0:
            raise ParameterError(explain("mask_bits", mask_bits, "an int >= 0", "pass e.g. mask_bits=0"))
        weight = 1 if weight_codec is None else weight_codec.bound
        need = terms * codec.bound * weight + ((1 << mask_bits) if mask_bits else 0)
        slot_bits = need.bit_length() + 1
        if byte_aligned:
            slot_bits = 8 * math.ceil(slot_bits / 8)
        if slot_bits > key.bits - 2:
            raise PrecisionError(
                explain("slot width", f"{slot_bits} bits", f"<= {key.bits - 2} bits for this key",
                        "declare fewer terms, fewer fractional bits or a smaller mask, or use a larger key")
            )
        return cls.for_key(key, slot_bits)

    # -- packing -------------------------------------------------------------------------------------------
    def blocks(self, cols: int) -> int:
        """Plaintexts needed for a row of ``cols`` values."""
        return max(1, math.ceil(cols / self.slots))

    def pack(self, ints: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Pack a (rows, cols) integer array row by row into a (rows, blocks) object array of signed ints."""
        rows, cols = ints.shape
        k, w = self.slots, self.slot_bits
        blocks = self.blocks(cols)
        padded_cols = blocks * k
        flat = ints.reshape(-1).tolist() if ints.dtype == object else None
        worst = max((abs(int(v)) for v in flat), default=0) if flat is not None else (
            int(np.max(np.abs(ints.astype(np.int64)))) if ints.size else 0
        )
        if worst > self.capacity:
            raise EncodingOverflowError(
                explain("slot value", worst, f"|v| <= {self.capacity} ({w}-bit signed slot)",
                        "declare more headroom with Packing.for_computation or encode fewer fractional bits")
            )
        out = np.empty((rows, blocks), dtype=object)
        offset = self._offset()
        if w % 8 == 0 and w <= 64:
            nbytes = w // 8
            shifted = np.zeros((rows, padded_cols), dtype=np.uint64)
            shifted[:, :cols] = ints.astype(np.int64).astype(np.uint64) + np.uint64(1 << (w - 1)) if ints.size else 0
            if cols < padded_cols:
                shifted[:, cols:] = np.uint64(1 << (w - 1))
            raw = shifted.astype("<u8").view(np.uint8).reshape(rows, padded_cols, 8)[:, :, :nbytes]
            raw = np.ascontiguousarray(raw).reshape(rows, blocks, k * nbytes)
            for r in range(rows):
                for b in range(blocks):
                    out[r, b] = int.from_bytes(raw[r, b].tobytes(), "little") - offset
            return out
        values = ints.tolist()
        for r in range(rows):
            row = values[r] + [0] * (padded_cols - cols)
            for b in range(blocks):
                acc = 0
                for v in reversed(row[b * k : (b + 1) * k]):
                    acc = (acc << w) + int(v)
                out[r, b] = acc
        return out

    def unpack(self, packed: npt.NDArray[Any], cols: int, bound: int) -> npt.NDArray[Any]:
        """Inverse of :meth:`pack` for decrypted (centred) plaintexts; checks each slot against ``bound``.

        Returns a (rows, cols) int64 array when ``bound`` fits int64, else an object array. Raises
        :class:`~mpdp.errors.EncodingOverflowError` if a slot exceeds ``bound`` or an unused slot is not 0.
        """
        rows, blocks = packed.shape
        k, w = self.slots, self.slot_bits
        offset = self._offset()
        half = 1 << (w - 1)
        total = 1 << (w * k)
        if w % 8 == 0 and w <= 64:
            nbytes = w // 8
            buf = bytearray()
            for value in packed.reshape(-1).tolist():
                digits = int(value) + offset
                if not 0 <= digits < total:
                    raise _overflow(bound)
                buf += digits.to_bytes(k * nbytes, "little")
            raw = np.frombuffer(bytes(buf), dtype=np.uint8).reshape(rows * blocks * k, nbytes)
            wide = np.zeros((rows * blocks * k, 8), dtype=np.uint8)
            wide[:, :nbytes] = raw
            slots = (wide.view("<u8").reshape(rows, blocks * k).astype(np.uint64) - np.uint64(half)).view(np.int64)
            used, spare = slots[:, :cols], slots[:, cols:]
            if spare.size and np.any(spare != 0):
                raise _tampered()
            if used.size and int(np.max(np.abs(used))) > bound:
                raise _overflow(bound)
            return used.copy() if bound < 1 << 62 else used.astype(object)
        out = np.empty((rows, blocks * k), dtype=object)
        mask = (1 << w) - 1
        for r in range(rows):
            for b in range(blocks):
                digits = int(packed[r, b]) + offset
                if not 0 <= digits < total:
                    raise _overflow(bound)
                for j in range(k):
                    out[r, b * k + j] = ((digits >> (j * w)) & mask) - half
        if any(v != 0 for v in out[:, cols:].reshape(-1).tolist()):
            raise _tampered()
        used = out[:, :cols]
        if used.size and max(abs(v) for v in used.reshape(-1).tolist()) > bound:
            raise _overflow(bound)
        return used.astype(np.int64) if bound < 1 << 62 else used

    def _offset(self) -> int:
        half = 1 << (self.slot_bits - 1)
        return sum(half << (j * self.slot_bits) for j in range(self.slots))


def _overflow(bound: int) -> EncodingOverflowError:
    return EncodingOverflowError(
        explain("decrypted slot", "a value beyond the tracked bound", f"|v| <= {bound}",
                "a slot overflowed or the ciphertext was altered: declare more headroom, or reject the sender")
    )


def _tampered() -> TamperedCiphertextError:
    return TamperedCiphertextError(
        explain("unused packing slot", "a nonzero value", "0", "the ciphertext was altered; reject the sender")
    )
