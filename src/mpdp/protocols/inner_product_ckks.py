"""The CKKS backend of :mod:`mpdp.protocols.inner_product`, on :mod:`mpdp.crypto.ckks`, and real-valued shares.

``left`` owns the CKKS secret key (a :class:`~mpdp.crypto.ckks.CkksContext` of the named set ``ckks-8192-d1``,
reusable across runs: :func:`new_context`). It encrypts each column of ``X`` as a
:class:`~mpdp.crypto.ckks.CkksVector` (explicit chunks of N / 2 slots) and sends the vectors with its *public*
context (relinearisation and Galois keys, no secret key; serialised once per key). ``right`` encodes each of its
columns once and computes, for every output entry, ``Enc(X_i) . Y_j`` with
:func:`~mpdp.crypto.ckks.dots.masked_dots` (one plaintext product per chunk, the chunks added, one rescale, one
rotation ladder), i.e. ``Enc((X^T Y)_ij)``; it adds a uniform real mask ``r_ij`` (unless ``reveal_to=left``) in
every slot, keeps ``-r_ij`` as its share, *rerandomises* the ciphertext (a fresh encryption of zero, so the
ciphertext randomness is not a function of ``Y`` the key owner could read) and sends it; ``left`` decrypts
``(X^T Y)_ij + r_ij``. Session 14: 13 ms per entry at 36,178 rows, against 24 ms with
:meth:`~mpdp.crypto.ckks.CkksVector.dot`, which encoded ``Y_j`` again for every ``X_i`` and rescaled per chunk.

Security
--------
Semi-honest. ``right`` sees only ciphertexts (RLWE at >= 128 bits: the vetted set, checked on receipt with
:meth:`~mpdp.crypto.ckks.CkksContext.from_wire`). Real-valued masks are limited by the CKKS plaintext range: a
decrypted value must stay below ``2^(60 - 40 - 1) = 2^19``. The mask is uniform on ``[-2^k, 2^k]`` (real units)
with ``k = CkksBackend.mask_bits <= 23``; for ``k > 18`` the left scales its columns by ``2^-s``, ``s = k - 18``,
before encrypting (so the masked value stays below 2^19) and the shares are scaled back by ``2^s``. The mask hides
an entry of magnitude at most ``B = rows bound^2`` with statistical distance ``B / 2^k`` (2^-7.5 for
B = 45,222 and the default k = 23): far weaker than the 2^-40 of the ``shares`` and
``paillier`` backends, so use CKKS shares only where that is acceptable, or ``reveal_to=left`` (no mask). The
mask covers every slot of the reply: the rotation ladder leaves the product in all of them, and the key owner can
decrypt them all, not only the one ``decrypt()`` shows. Until session 14 the mask covered slot 0 alone, and the
other 4,095 slots gave the key owner the unmasked product (:meth:`~mpdp.crypto.ckks.CkksVector.add_plain`). CKKS
has no circuit privacy against the key owner without noise flooding, which is not added: decrypted values carry
noise that depends on ``Y`` (see :mod:`mpdp.crypto.ckks.vector`).

Accuracy
--------
CKKS is approximate: per entry the documented dot-product bound of ``ckks-8192-d1``
(:meth:`~mpdp.crypto.ckks.CkksParameters.dot_error_bound`: ``(3e-5 + 5e-7 sqrt(rows)) bound^2``), plus ``2^-30``
for the mask's float rounding (``|mask| <= 2^18``, ulp ``2^-34``, twice), all times ``2^s`` when shares are
scaled (above): 4.4e-3 at 45,222 rows, bound 1 and the default ``mask_bits = 23`` (the previous TenSEAL-direct
backend documented 0.021).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ckks import CkksContext, CkksParameters, CkksVector, parameters_for_depth
from mpdp.crypto.ckks.dots import PlainColumns, masked_dots
from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.runtime.comm import Comm

if TYPE_CHECKING:
    from mpdp.protocols.inner_product import CrossProduct, CrossProductSpec

__all__ = ["MASK_BITS", "PARAMETERS", "CkksKeys", "ckks_error_bound", "ckks_holder", "new_context",
           "share_scale_bits"]

#: The named parameter set of the backend: one plaintext product (depth 1), N = 8192.
PARAMETERS: CkksParameters = parameters_for_depth(1)
#: Largest mask exponent without scaling: masked values must stay below the set's ``max_magnitude`` (2^19).
MASK_BITS = 18


def share_scale_bits(mask_bits: int) -> int:
    """``s``: columns are encrypted times ``2^-s`` so that a ``2^mask_bits`` mask fits the plaintext range."""
    return max(0, mask_bits - MASK_BITS)


def ckks_error_bound(rows: int, bound: float, mask_bits: int = 23) -> float:
    """Documented per-entry error of a CKKS cross product with shares (see the module docstring)."""
    return (PARAMETERS.dot_error_bound(rows, bound, bound) + 2.0**-30) * 2.0 ** share_scale_bits(mask_bits)


@dataclass(frozen=True)
class CkksKeys:
    """The key owner's reusable CKKS keys: the private context and its public wire form, serialised once.

    Serialising the public context (Galois keys, about 18 MB) costs more than a whole inner product, so it is
    done once here and sent in every run.
    """

    context: CkksContext
    public: dict[str, Any] = field(repr=False)


def new_context(params: CkksParameters = PARAMETERS) -> CkksKeys:
    """Fresh CKKS keys (secret, relinearisation and Galois) for the key owner to reuse across runs."""
    ctx = CkksContext.generate(params)
    return CkksKeys(ctx, ctx.public().to_wire())


def _scale_bits(spec: CrossProductSpec) -> int:
    return 0 if spec.reveal_to == spec.left else share_scale_bits(spec.backend.mask_bits)  # type: ignore[union-attr]


def ckks_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any = None) -> CrossProduct:
    from mpdp.protocols.inner_product import CrossProduct

    share: npt.NDArray[np.float64]
    if comm.name == spec.left:
        own = new_context() if keys is None else keys
        if not isinstance(own, CkksKeys):
            raise ParameterError(explain("keys", type(own).__name__, "CkksKeys from new_context()",
                                         "pass keys=new_context() or None"))
        ctx = own.context
        factor = 2.0 ** -_scale_bits(spec)
        columns = [CkksVector.encrypt(ctx, m[:, i] * factor).to_wire() for i in range(spec.left_cols)]
        comm.send(spec.right, {"context": own.public, "columns": columns}, label="ip.ckks")
        reply = comm.recv(spec.right, label="ip.ckks")
        if not isinstance(reply, list) or len(reply) != spec.left_cols * spec.right_cols:
            raise MalformedMessageError(explain(f"products from {spec.right}", type(reply).__name__,
                                                f"{spec.left_cols * spec.right_cols} ciphertexts", "out of step"))
        values = np.array([CkksVector.from_wire(raw, ctx).decrypt()[0] for raw in reply], dtype=np.float64)
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
        masks = np.zeros((spec.left_cols, spec.right_cols))
        if spec.reveal_to != spec.left:
            span = 2.0 ** (spec.backend.mask_bits - _scale_bits(spec))  # type: ignore[union-attr]
            masks = (2 * comm.rng.random((spec.left_cols, spec.right_cols)) - 1) * span  # <= 2^18
        plain = PlainColumns(ctx, m)  # each of this party's columns encoded once, for every received column
        out = [wire for i in range(spec.left_cols) for wire in masked_dots(enc[i], plain, masks[i])]
        comm.send(spec.left, out, label="ip.ckks")
        if spec.reveal_to == spec.left:
            return CrossProduct(None, None, 0, spec.fmt, spec.result_bound, real=True)
        share = -masks * 2.0 ** _scale_bits(spec)
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
