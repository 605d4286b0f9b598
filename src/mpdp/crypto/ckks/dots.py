"""Many products of encrypted vectors with plaintext columns, on SEAL directly.

A party holding plaintext columns ``y_1 .. y_m`` that computes a product of every encrypted column ``x_i`` it
received with every ``y_j`` (the CKKS inner product, :mod:`mpdp.protocols.inner_product.ckks`) would, with
:meth:`CkksVector.dot <mpdp.crypto.ckks.CkksVector.dot>`, have TenSEAL encode every plaintext chunk again for
each ``x_i`` and rescale after each chunk's product. Here each ``y_j`` is encoded once (:class:`PlainColumns`)
and each pair costs, on TenSEAL's SEAL objects (``tenseal.sealapi``), one plaintext product per chunk at the
fresh level, the chunks' products added and **one** rescale: slot ``s`` then holds ``v_s = sum_c x_(c,s)
y_(c,s)``, and ``sum_s v_s = <x_i, y_j>``. Then either

* :func:`masked_dots`: the rotation ladder (``log2(slots)`` rotations, after which every slot holds the total)
  and a mask encoded into **every** slot (the key owner can decrypt all slots, see :meth:`CkksVector.add_plain
  <mpdp.crypto.ckks.CkksVector.add_plain>`); or
* :func:`masked_slot_products`: no rotation, one mask per slot; the key owner adds the slots itself.

and a fresh public-key encryption of zero is added (as :meth:`CkksVector.rerandomize
<mpdp.crypto.ckks.CkksVector.rerandomize>`: the ciphertext randomness is not a function of ``y``).

Accuracy
--------
SEAL keeps the exact scale through the rescale (``2^2s / q``, where TenSEAL resets it to ``2^s``), so the
rescale correction of :meth:`CkksVector.dot <mpdp.crypto.ckks.CkksVector.dot>` is not needed, and one rescale
instead of one per chunk rounds less: the sum, and each slot's partial sum, is within the set's
:meth:`~mpdp.crypto.ckks.CkksParameters.dot_error_bound` (tested up to 36,178 rows). A chunk whose encoded
plaintext is zero is skipped (SEAL refuses a product that would be transparent); a column that is zero everywhere
gives a fresh encryption of zero plus the mask.

Wire form
---------
Each result is sent as :meth:`CkksVector.to_wire <mpdp.crypto.ckks.CkksVector.to_wire>` sends a rerandomized
vector (of length 1 with the ladder, ``slots`` without), and the receiver reads it with ``from_wire``,
unchanged. TenSEAL's serialised vector is a protocol buffer of three fields (the size list, the SEAL ciphertext's
bytes, the scale); ``tenseal.sealapi`` writes a ciphertext's bytes only to a file path, so they pass through one
private temporary file per call.
"""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ckks.context import CkksContext
from mpdp.crypto.ckks.vector import CkksVector, as_reals, wire_form
from mpdp.errors import DomainError, KeyMismatchError, ParameterError, ShapeMismatchError, explain
from mpdp.numeric import as_array, real_array

__all__ = ["PlainColumns", "masked_dots", "masked_slot_products"]


class _Seal:
    """The SEAL objects of one context: encoder, evaluator, public-key encryptor and Galois keys."""

    def __init__(self, context: CkksContext) -> None:
        from tenseal import sealapi

        self.api = sealapi
        ctx = context.tenseal
        self.seal = ctx.seal_context().data
        self.encoder = sealapi.CKKSEncoder(self.seal)
        self.evaluator = sealapi.Evaluator(self.seal)
        self.encryptor = sealapi.Encryptor(self.seal, ctx.public_key().data)
        self.galois = ctx.galois_keys().data if context.has_galois_keys else None
        self.fresh_level = self.seal.first_parms_id()


class PlainColumns:
    """Plaintext columns (``rows x m`` reals), each cut into the chunks of a ``rows``-long
    :class:`~mpdp.crypto.ckks.CkksVector` and encoded once at the fresh level, at scale ``2^scale_bits``."""

    __slots__ = ("_kit", "chunks", "context", "rows")

    def __init__(self, context: CkksContext, columns: npt.ArrayLike) -> None:
        shape = as_array(columns, "columns").shape
        if len(shape) != 2 or shape[0] < 1:
            raise ShapeMismatchError(explain("columns", shape, "a (rows, m) matrix with rows >= 1",
                                             "pass one column per plaintext vector"))
        params = context.params
        values = as_reals(columns, "columns", params.max_magnitude).reshape(shape)  # as CkksVector checks
        self.context = context
        self.rows = int(shape[0])
        self._kit = kit = _Seal(context)
        scale = float(2**params.scale_bits)
        #: per column, per chunk (CkksVector's layout): its SEAL plaintext, or None where the encoding is zero
        self.chunks: list[list[Any]] = []
        for column in values.T:
            encoded = []
            for chunk in CkksVector._split(column, params.slots):
                plain = kit.api.Plaintext()
                kit.encoder.encode(chunk.tolist(), kit.fresh_level, scale, plain)
                encoded.append(None if plain.is_zero() else plain)
            self.chunks.append(encoded)

    def __len__(self) -> int:
        return len(self.chunks)


def masked_dots(vector: CkksVector, columns: PlainColumns, masks: npt.ArrayLike) -> list[dict[str, Any]]:
    """``<vector, y_j> + masks[j]`` for every column ``y_j``, each as the wire form of a rerandomized length-1
    vector whose every slot holds it (see the module docstring). ``vector`` must be fresh (no level used)."""
    _check(vector, columns)
    if not vector.context.has_galois_keys:
        raise ParameterError(explain("CKKS context", "no Galois keys", "Galois (rotation) keys",
                                     "the key owner must generate its context with galois_keys=True"))
    # SEAL encodes a constant c (the mask, into every slot) only while |c| 2^scale < 2^(first prime - 2)
    r = _masks(masks, (len(columns),), vector.context.params.max_magnitude / 2, "one mask per column")
    return _replies(vector, columns, r.tolist(), ladder=True)  # a float addend: SEAL encodes it into every slot


def masked_slot_products(vector: CkksVector, columns: PlainColumns, masks: npt.ArrayLike) -> list[dict[str, Any]]:
    """For every column ``y_j``: slot ``s`` holds ``v_js + masks[j, s]``, where ``v_js = sum_c x_(c,s) y_(c,s)``
    adds the chunks' products in slot ``s`` (so ``sum_s v_js = <vector, y_j>``), as the wire form of a
    rerandomized ``slots``-long vector. No rotation: the receiver adds the slots itself. ``masks`` is
    ``(m, slots)``; ``vector`` must be fresh (no level used). Per pair: the chunks' products, one rescale, one
    plaintext addition and the encryption of zero."""
    _check(vector, columns)
    params = vector.context.params
    r = _masks(masks, (len(columns), params.slots), params.max_magnitude, "one mask per column and slot")
    return _replies(vector, columns, r.tolist(), ladder=False)


def _masks(masks: npt.ArrayLike, shape: tuple[int, ...], limit: float, fix: str) -> npt.NDArray[np.float64]:
    r = real_array(masks, "masks")
    if r.shape != shape or not np.all(np.isfinite(r)) or (r.size and float(np.max(np.abs(r))) >= limit):
        raise DomainError(explain("masks", r.shape, f"{shape} finite reals below {limit}", f"pass {fix}"))
    return r


def _replies(vector: CkksVector, columns: PlainColumns, addends: list[Any], *, ladder: bool) -> list[dict[str, Any]]:
    """Per column: the chunks' products (summed into every slot with ``ladder``), plus its addend (a float:
    every slot; a list: one per slot), rerandomized, in the wire form of a vector of 1 value (``ladder``) or
    ``slots``."""
    kit, params = columns._kit, vector.context.params
    scale = float(2**params.scale_bits)
    size = 1 if ladder else params.slots
    ciphertexts = [chunk.ciphertext()[0] for chunk in vector.chunks]
    out = []
    with tempfile.TemporaryDirectory(prefix="mpdp-ckks-") as folder:
        path = os.path.join(folder, "ciphertext")
        for plains, addend in zip(columns.chunks, addends, strict=True):
            total = _product_sum(kit, ciphertexts, plains, params.slots, scale, ladder=ladder)
            plain = kit.api.Plaintext()
            kit.encoder.encode(addend, total.parms_id(), total.scale, plain)
            if not plain.is_zero():
                kit.evaluator.add_plain_inplace(total, plain)
            out.append(wire_form(vector.context, size, 1, [_rerandomized(kit, total, path, size, scale)]))
    return out


def _check(vector: CkksVector, columns: PlainColumns) -> None:
    """``vector`` fresh, of the columns' context and length."""
    if vector.context.context_id != columns.context.context_id:
        raise KeyMismatchError(explain("columns' context", columns.context.context_id, vector.context.context_id,
                                       "encode the columns under the vector's context"))
    if vector.length != columns.rows or vector.depth_used != 0:
        raise ShapeMismatchError(explain("vector", (vector.length, vector.depth_used),
                                         f"a fresh vector of {columns.rows} rows", "pass the received column"))


def _rerandomized(kit: _Seal, total: Any, path: str, size: int, scale: float) -> bytes:
    """``total`` plus a fresh public-key encryption of zero, as TenSEAL's serialised vector of ``size`` values."""
    zero = kit.api.Ciphertext()
    kit.encryptor.encrypt_zero(total.parms_id(), zero)
    zero.scale = total.scale
    kit.evaluator.add_inplace(total, zero)
    total.save(path)
    with open(path, "rb") as f:
        return _tenseal_vector(f.read(), size, scale)


def _product_sum(kit: _Seal, ciphertexts: list[Any], plains: list[Any], slots: int, scale: float, *,
                 ladder: bool = True) -> Any:
    """``sum_c ciphertexts[c] * plains[c]`` rescaled once and (``ladder``) its slots summed into every slot; a
    fresh encryption of zero one level down, at ``scale``, when every plaintext is zero."""
    api, ev = kit.api, kit.evaluator
    total, term = None, api.Ciphertext()
    for ciphertext, plain in zip(ciphertexts, plains, strict=True):
        if plain is None:
            continue
        if total is None:
            total = api.Ciphertext()
            ev.multiply_plain(ciphertext, plain, total)
        else:
            ev.multiply_plain(ciphertext, plain, term)
            ev.add_inplace(total, term)
    if total is None:
        total = api.Ciphertext()
        below = kit.seal.get_context_data(kit.fresh_level).next_context_data().parms_id()
        kit.encryptor.encrypt_zero(below, total)
        total.scale = scale
        return total
    ev.rescale_to_next_inplace(total)
    if not ladder:
        return total
    step, rotated = 1, api.Ciphertext()
    while step < slots:
        ev.rotate_vector(total, step, kit.galois, rotated)
        ev.add_inplace(total, rotated)
        step *= 2
    return total


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tenseal_vector(seal_bytes: bytes, size: int, scale: float) -> bytes:
    """TenSEAL's serialised CKKS vector of ``size`` values around one SEAL ciphertext: field 1 the packed size
    list ``[size]``, field 2 the ciphertext's bytes, field 3 the scale (a little-endian double)."""
    packed = _varint(size)
    return (b"\x0a" + _varint(len(packed)) + packed + b"\x12" + _varint(len(seal_bytes)) + seal_bytes + b"\x19"
            + struct.pack("<d", scale))
