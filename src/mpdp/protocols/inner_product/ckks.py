"""The CKKS backend of :mod:`mpdp.protocols.inner_product`, on :mod:`mpdp.crypto.ckks`, and real-valued shares.

``left`` owns the CKKS secret key (a :class:`~mpdp.crypto.ckks.CkksContext` of the named set ``ckks-8192-d1``,
reusable across runs: :func:`new_context`). It encrypts each column of ``X`` as a
:class:`~mpdp.crypto.ckks.CkksVector` (explicit chunks of N / 2 slots) and sends the vectors with its *public*
context (relinearisation keys, and Galois keys when a product reveals to it; no secret key; serialised once per
key). ``right`` encodes each of its columns once (:class:`~mpdp.crypto.ckks.dots.PlainColumns`) and, for every
output entry, multiplies the chunks of ``Enc(X_i)`` by those of ``Y_j``, adds them and rescales once: slot ``s``
then holds the partial sum ``v_s`` of the rows in that slot, and ``sum_s v_s = (X^T Y)_ij``. Then:

* ``reveal_to=left``: the rotation ladder puts the sum in every slot
  (:func:`~mpdp.crypto.ckks.dots.masked_dots` without masks), and ``left`` decrypts the entry;
* shares (``reveal_to`` None or ``right``): no ladder. ``right`` draws the entry's mask ``R`` uniform on
  ``[-2^(k - s), 2^(k - s)]`` (``k = CkksBackend.mask_bits``, ``s`` below) and one mask per slot, uniform on
  ``[-P/2, P/2)`` (``P = SLOT_PERIOD``, about 2^20), the last one chosen so that the slot masks add up to ``R``
  modulo ``P``; it adds them (:func:`~mpdp.crypto.ckks.dots.masked_slot_products`) and keeps ``-R`` as its share.
  ``left`` adds the decrypted slots and reduces the sum modulo ``P`` into ``[-P/2, P/2]``: ``(X^T Y)_ij + R``,
  its share.

Either way ``right`` *rerandomises* the reply (a fresh encryption of zero, so the ciphertext randomness is not a
function of ``Y`` the key owner could read). A shared entry costs the chunks' plaintext products, one rescale,
one plaintext addition and the encryption of zero; a revealed one adds the ladder's ``log2(slots)`` rotations.

Security
--------
Semi-honest. ``right`` sees only ciphertexts (RLWE at >= 128 bits: the vetted set, checked on receipt with
:meth:`~mpdp.crypto.ckks.CkksContext.from_wire`). ``left`` decrypts every slot of a reply, not only those
``decrypt()`` shows; what it sees of a shared entry is the slots ``v_s + r_s`` and its share. Real-valued masks
are limited by the CKKS plaintext range: a decrypted value must stay below ``2^(60 - 40 - 1) = 2^19``, so for
``k > 18`` the left scales its columns by ``2^-s``, ``s = k - 18``, before encrypting and the shares are scaled
back by ``2^s``; :func:`~mpdp.protocols.inner_product.ckks_parameters.check_slot_period` refuses products whose
slots or masked entries would leave the period. With ``B = rows bound^2``, a simulator that draws every slot
uniformly (the last one fixed by the share) differs from the real view by at most ``sum_s |v_s| / P <= B / (2^s
P)``, about ``B / 2^(s + 20)``, and the share ``(X^T Y)_ij + R`` hides the entry within ``B / 2^(k + 1)``: in all
at most ``B / 2^k`` (2^-7.5 for B = 45,222 and the default k = 23). Far weaker than the 2^-40 of the ``shares``
and ``paillier`` backends: use CKKS shares only where that is acceptable. Every slot of a reply carries its own
mask: a sum left in every slot and masked in one would show the key owner the unmasked product in the others
(:meth:`~mpdp.crypto.ckks.CkksVector.add_plain` masks every slot of a sum for the same reason). CKKS has no
circuit privacy against the key owner without noise flooding, which is not added: decrypted values carry noise
that depends on ``Y`` (see :mod:`mpdp.crypto.ckks.vector`).

Accuracy
--------
CKKS is approximate: per entry :func:`~mpdp.protocols.inner_product.ckks_parameters.ckks_error_bound` (the set's
dot-product bound plus the slot masks' float roundings, times ``2^s`` when shares are scaled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ckks import CkksContext, CkksParameters, CkksVector
from mpdp.crypto.ckks.dots import PlainColumns, masked_dots, masked_slot_products
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.progress import SILENT, Progress
from mpdp.protocols.inner_product.ckks_parameters import PARAMETERS, SLOT_PERIOD, mask_span, scale_bits
from mpdp.protocols.inner_product.spec import CkksBackend, CrossProduct, CrossProductSpec
from mpdp.runtime.comm import Comm

__all__ = ["CkksKeys", "ckks_holder", "new_context"]


@dataclass(frozen=True)
class CkksKeys:
    """The key owner's reusable CKKS keys: the private context and its public wire form, serialised once.

    Serialising a public context with Galois keys (about 18 MB) costs more than a whole inner product, so it is
    done once here and sent in every run. Without them (shared products only) it is about 1 MB.
    """

    context: CkksContext
    public: dict[str, Any] = field(repr=False)


def new_context(params: CkksParameters = PARAMETERS, *, galois_keys: bool = True) -> CkksKeys:
    """Fresh CKKS keys (secret, relinearisation and, with ``galois_keys``, Galois) for the key owner to reuse
    across runs. Only products revealed to the key owner (``reveal_to=left``) rotate, and need the Galois keys;
    shared products add their slots after decryption (module docstring). Without them key generation and the
    public context's serialisation cost far less, and that context is about 1 MB instead of 18.6 MB
    (``ckks-8192-d1``). Keys without them refuse a revealed product with a typed error."""
    ctx = CkksContext.generate(params, galois_keys=galois_keys)
    return CkksKeys(ctx, ctx.public().to_wire())


def _scale_bits(spec: CrossProductSpec, backend: CkksBackend) -> int:
    return scale_bits(backend.mask_bits, shared=spec.reveal_to != spec.left)


def _slot_masks(comm: Comm, totals: npt.NDArray[np.float64], slots: int) -> npt.NDArray[np.float64]:
    """Per entry ``j``, ``slots`` masks uniform on ``[-P/2, P/2)`` (``P = SLOT_PERIOD``) whose sum is
    ``totals[j]`` modulo ``P``: the first ``slots - 1`` drawn, the last ``totals[j]`` less their correctly
    rounded sum, reduced into ``[-P/2, P/2]``."""
    masks = (comm.rng.random((totals.size, slots)) - 0.5) * SLOT_PERIOD
    for j, row in enumerate(masks):
        row[-1] = _centred(float(totals[j]) - math.fsum(row[:-1].tolist()))
    return masks


def _centred(value: float) -> float:
    """``value`` modulo ``SLOT_PERIOD``, in ``[-P/2, P/2]``."""
    return value - SLOT_PERIOD * round(value / SLOT_PERIOD)


def _reply(raw: Any, ctx: CkksContext, length: int, sender: str) -> npt.NDArray[np.float64]:
    """A reply's decrypted values, refused unless it is a vector of ``length`` values after one product."""
    vector = CkksVector.from_wire(raw, ctx)
    if vector.length != length or vector.depth_used != 1:
        raise MalformedMessageError(explain(f"product from {sender}", (vector.length, vector.depth_used),
                                            f"a vector of {length} values after one product", "out of step"))
    return vector.decrypt()


def ckks_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any = None, *,
                progress: Progress = SILENT) -> CrossProduct:
    """This holder's side of a CKKS ``X^T Y`` (``m`` its checked matrix; ``keys`` the left's :class:`CkksKeys`,
    generated when None): the protocol of the module docstring. ``progress`` shows a phase line per step and
    a bar over the columns encrypted (left) or multiplied (right)."""
    backend = spec.backend
    if not isinstance(backend, CkksBackend):
        raise ParameterError(explain("backend", type(backend).__name__, "CkksBackend", "use cross_product"))
    share: npt.NDArray[np.float64]
    if comm.name == spec.left:
        own = new_context(galois_keys=spec.reveal_to == spec.left) if keys is None else keys
        if not isinstance(own, CkksKeys):
            raise ParameterError(explain("keys", type(own).__name__, "CkksKeys from new_context()",
                                         "pass keys=new_context() or None"))
        if spec.reveal_to == spec.left and not own.context.has_galois_keys:  # refused before anything is sent
            raise ParameterError(explain("keys", "a CKKS context without Galois keys",
                                         "Galois keys: a product revealed to its key owner rotates",
                                         "pass keys=new_context(galois_keys=True) or None"))
        ctx = own.context
        factor = 2.0 ** -_scale_bits(spec, backend)
        progress.phase(f"encrypting {spec.left_cols} columns of {spec.rows:,} rows for {spec.right} (CKKS)")
        columns = [CkksVector.encrypt(ctx, m[:, i] * factor).to_wire()
                   for i in progress.iterate(range(spec.left_cols), "encrypting", unit="col")]
        comm.send(spec.right, {"context": own.public, "columns": columns}, label="ip.ckks")
        progress.phase(f"waiting for {spec.right}'s encrypted products")
        reply = comm.recv(spec.right, label="ip.ckks")
        if not isinstance(reply, list) or len(reply) != spec.left_cols * spec.right_cols:
            raise MalformedMessageError(explain(f"products from {spec.right}", type(reply).__name__,
                                                f"{spec.left_cols * spec.right_cols} ciphertexts", "out of step"))
        if spec.reveal_to == spec.left:  # every slot holds the entry
            values = np.array([_reply(raw, ctx, 1, spec.right)[0] for raw in reply], dtype=np.float64)
        else:  # the entry's masked slots add up to it plus the mask, modulo the period
            values = np.array([_centred(math.fsum(_reply(raw, ctx, ctx.params.slots, spec.right).tolist()))
                               for raw in reply], dtype=np.float64)
        values = values.reshape(spec.left_cols, spec.right_cols) / factor
        if spec.reveal_to == spec.left:
            return CrossProduct(values, None, 0, spec.fmt, spec.result_bound, real=True)
        share = values
    else:
        msg = comm.recv(spec.left, label="ip.ckks")
        if not isinstance(msg, dict) or set(msg) != {"context", "columns"}:
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", type(msg).__name__,
                                                "{context, columns}", "the peer runs another protocol version"))
        ctx = CkksContext.from_wire(msg["context"], expected=PARAMETERS)
        if ctx.is_private:
            raise MalformedMessageError(explain("CKKS context", "with a secret key", "a public context",
                                                f"{spec.left} must not send its secret key"))
        columns = msg["columns"]
        if not isinstance(columns, list) or len(columns) != spec.left_cols:
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", "wrong layout",
                                                f"{spec.left_cols} encrypted columns", "out of step"))
        enc = [CkksVector.from_wire(col, ctx) for col in columns]
        if any(v.length != spec.rows or v.depth_used for v in enc):
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", [v.length for v in enc],
                                                f"fresh vectors of {spec.rows} rows", "out of step"))
        progress.phase(f"multiplying {spec.left}'s {spec.left_cols} encrypted columns by {spec.right_cols} columns "
                       f"of {spec.rows:,} rows (CKKS)")
        plain = PlainColumns(ctx, m)  # each of this party's columns encoded once, for every received column
        if spec.reveal_to == spec.left:
            zero = np.zeros(spec.right_cols)
            comm.send(spec.left, [w for i in range(spec.left_cols) for w in masked_dots(enc[i], plain, zero)],
                      label="ip.ckks")
            return CrossProduct(None, None, 0, spec.fmt, spec.result_bound, real=True)
        span = mask_span(backend.mask_bits)
        masks = (2 * comm.rng.random((spec.left_cols, spec.right_cols)) - 1) * span  # the masks R
        out = []
        for i in progress.iterate(range(spec.left_cols), f"products for {spec.left}", unit="col"):
            out.extend(masked_slot_products(enc[i], plain, _slot_masks(comm, masks[i], ctx.params.slots)))
        comm.send(spec.left, out, label="ip.ckks")
        share = -masks * 2.0 ** _scale_bits(spec, backend)
    if spec.reveal_to is None:
        return CrossProduct(None, share, 0, spec.fmt, spec.result_bound, real=True)
    # reveal to right: left sends its masked share
    if comm.name == spec.left:
        comm.send(spec.right, share, label="ip.reveal")
        return CrossProduct(None, None, 0, spec.fmt, spec.result_bound, real=True)
    theirs = comm.recv(spec.left, label="ip.reveal")
    if not isinstance(theirs, np.ndarray) or theirs.shape != share.shape or theirs.dtype != np.float64:
        raise MalformedMessageError(explain(f"share from {spec.left}", getattr(theirs, "shape", theirs),
                                            str(share.shape), "out of step"))
    return CrossProduct(theirs + share, None, 0, spec.fmt, spec.result_bound, real=True)
