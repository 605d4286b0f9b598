"""The CKKS backend of :mod:`mpdp.protocols.inner_product` (TenSEAL), and real-valued share conversion.

``left`` owns the CKKS secret key. It encrypts each column of ``X`` (chunked into ``N / 2`` slots) and sends the
ciphertexts with its *public* context (relinearisation and Galois keys, no secret key). ``right`` computes, for
every output entry, ``sum_chunks Enc(X_i) * Y_j`` (one plaintext product per chunk) and one slot sum, i.e.
``Enc((X^T Y)_ij)``; then either returns it (``reveal_to=left``) or adds a uniform real mask ``r_ij`` and keeps
``-r_ij`` as its share, while ``left`` decrypts ``(X^T Y)_ij + r_ij``.

Security
--------
Semi-honest. ``right`` sees only ciphertexts (RLWE, 128-bit parameters by SEAL's table). Real-valued masks are
limited by the CKKS plaintext range: with scale 2^35 and a 60-bit first prime a decrypted value must stay
below 2^24, so the mask is uniform on ``[-2^k, 2^k]`` with ``k = CkksBackend.mask_bits <= 23`` and hides an
entry of magnitude at most ``B = rows bound^2`` with statistical distance ``B / 2^k`` (2^-7.5 for B = 45,222).
That is far weaker than the 2^-40 of the ``shares`` and ``paillier`` backends: use CKKS shares only where that is
acceptable, or ``reveal_to=left`` (no mask needed). Decrypted CKKS values carry the scheme's noise; the key
owner learns it (it owns the key).

Accuracy
--------
CKKS is approximate: per entry ``|error| <= rows * bound * 2^-33 + 1e-4 bound^2 sqrt(rows)`` (encoding at scale
2^35 plus the slot-sum key-switching noise), plus ``2^-26`` from the mask's float rounding.

This module will move onto ``mpdp.crypto.ckks`` (named, vetted parameter sets) when that lands; the parameters
here, N = 8192 with primes [60, 35, 60] (155 bits <= 218), are within SEAL's 128-bit table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import MalformedMessageError, ParameterError, explain
from mpdp.runtime.comm import Comm

if TYPE_CHECKING:
    from mpdp.protocols.inner_product import CrossProduct, CrossProductSpec

__all__ = ["MASK_BITS", "CkksKeys", "ckks_error_bound", "ckks_holder", "new_context"]

POLY_DEGREE = 8192
COEFF_BITS = (60, 35, 60)
SCALE_BITS = 35
MASK_BITS = 23
SLOTS = POLY_DEGREE // 2


def ckks_error_bound(rows: int, bound: float) -> float:
    """Documented per-entry error of a CKKS cross product (see the module docstring)."""
    return rows * bound * 2.0**-33 + 1e-4 * bound**2 * float(np.sqrt(rows)) + 2.0**-26


@dataclass(frozen=True)
class CkksKeys:
    """The key owner's reusable CKKS keys: the secret context and its serialized public part.

    Serializing the public context (Galois keys, about 18 MB) costs more than the whole inner product, so it is
    done once here and the bytes are sent in every run.
    """

    context: Any
    public: bytes


def new_context() -> CkksKeys:
    """Fresh CKKS keys (secret, relinearisation and Galois) for the key owner to reuse across runs."""
    ctx = _context()
    return CkksKeys(ctx, ctx.serialize(save_secret_key=False))


def _context() -> Any:
    import tenseal as ts

    ctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=POLY_DEGREE, coeff_mod_bit_sizes=list(COEFF_BITS))
    ctx.global_scale = 2.0**SCALE_BITS
    ctx.generate_galois_keys()
    return ctx


def _chunk(column: npt.NDArray[np.float64], start: int) -> list[float]:
    """Slots ``start .. start + SLOTS`` of a column, zero-padded so every chunk has the same length."""
    part = column[start:start + SLOTS]
    return np.pad(part, (0, SLOTS - len(part))).tolist()  # type: ignore[no-any-return]


def ckks_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any = None) -> CrossProduct:
    import tenseal as ts

    from mpdp.protocols.inner_product import CrossProduct

    chunks = range(0, spec.rows, SLOTS)
    if comm.name == spec.left:
        own = new_context() if keys is None else keys
        if not isinstance(own, CkksKeys):
            raise ParameterError(explain("keys", type(own).__name__, "CkksKeys from new_context()",
                                         "pass keys=new_context() or None"))
        ctx = own.context
        cts = [[ts.ckks_vector(ctx, _chunk(m[:, i], c)).serialize() for c in chunks] for i in range(spec.left_cols)]
        comm.send(spec.right, {"context": own.public, "columns": cts}, label="ip.ckks")
        reply = comm.recv(spec.right, label="ip.ckks")
        if not isinstance(reply, list) or len(reply) != spec.left_cols * spec.right_cols:
            raise MalformedMessageError(explain(f"products from {spec.right}", type(reply).__name__,
                                                f"{spec.left_cols * spec.right_cols} ciphertexts", "out of step"))
        values = np.array([ts.ckks_vector_from(ctx, raw).decrypt()[0] for raw in reply], dtype=np.float64)
        values = values.reshape(spec.left_cols, spec.right_cols)
        if spec.reveal_to == spec.left:
            return CrossProduct(values, None, 0, spec.fmt, spec.result_bound, real=True)
        share = values
    else:
        msg = comm.recv(spec.left, label="ip.ckks")
        if not isinstance(msg, dict) or set(msg) != {"context", "columns"} or not isinstance(msg["context"], bytes):
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", type(msg).__name__,
                                                "{context, columns}", "the peer runs another protocol version"))
        ctx = ts.context_from(msg["context"])
        if ctx.has_secret_key():
            raise MalformedMessageError(explain("CKKS context", "with a secret key", "a public context",
                                                f"{spec.left} must not send its secret key"))
        columns = msg["columns"]
        if not isinstance(columns, list) or len(columns) != spec.left_cols or any(
            not isinstance(col, list) or len(col) != len(chunks) for col in columns
        ):
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", "wrong layout",
                                                f"{spec.left_cols} columns of {len(chunks)} chunks", "out of step"))
        enc = [[ts.ckks_vector_from(ctx, raw) for raw in col] for col in columns]
        masks = np.zeros((spec.left_cols, spec.right_cols))
        if spec.reveal_to != spec.left:
            span = 2.0 ** spec.backend.mask_bits  # type: ignore[union-attr]
            masks = (2 * comm.rng.random((spec.left_cols, spec.right_cols)) - 1) * span
        out = []
        for i in range(spec.left_cols):
            for j in range(spec.right_cols):
                acc = None
                for k, c in enumerate(chunks):
                    term = enc[i][k] * _chunk(m[:, j], c)
                    acc = term if acc is None else acc + term
                total = acc.sum() if acc is not None else None
                if total is None:  # pragma: no cover - rows >= 1
                    raise MalformedMessageError("no rows")
                if masks[i, j]:
                    total = total.add([float(masks[i, j])])
                out.append(total.serialize())
        comm.send(spec.left, out, label="ip.ckks")
        if spec.reveal_to == spec.left:
            return CrossProduct(None, None, 0, spec.fmt, spec.result_bound, real=True)
        share = -masks
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
