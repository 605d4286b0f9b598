"""The ``paillier`` backend: row-packed Paillier encryption, key owned by ``left``.

``left`` encrypts each row of ``X`` packed into one plaintext (slots sized for n-term sums plus the mask),
``right`` computes ``Enc(Y^T X)`` as one multi-exponentiation per output ciphertext, adds a statistical mask ``R``
(``mask_bits`` bits above the result bound), rerandomizes and returns it; ``left`` decrypts ``X^T Y + R`` and
``right`` keeps ``-R``.

Security
--------
Semi-honest. ``right`` sees only ciphertexts under ``left``'s key (DCR; with ``randomizer="fixed-base"`` also the
DJN short-exponent assumption); ``left`` sees ``X^T Y + R`` with ``R`` uniform on ``[0, 2^(bits(bound) +
mask_bits))``, statistically hiding with distance ``2^-mask_bits`` per entry, and the returned ciphertext is
rerandomized.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.paillier import (
    CrtRandomizer,
    EncryptedArray,
    FixedBaseRandomizer,
    FixedPoint,
    Packing,
    PaillierPublicKey,
    decrypt_ints,
    encrypt,
    generate_keypair,
)
from mpdp.errors import KeyMismatchError, MalformedMessageError, ParameterError, explain
from mpdp.progress import SILENT, Progress
from mpdp.protocols.inner_product.ring_output import finish
from mpdp.protocols.inner_product.spec import CrossProduct, CrossProductSpec, PaillierBackend
from mpdp.runtime.comm import Comm

__all__ = ["paillier_holder"]


def paillier_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any,
                     real: bool = False, *, progress: Progress = SILENT) -> CrossProduct:
    """This holder's side of a Paillier ``X^T Y`` (``m`` its checked matrix; ``keys`` the left's key pair or
    ``(pk, sk, pool)``, generated when None): the protocol of the module docstring. ``real``: return real-valued
    additive shares (float64, scale 0) instead of ring shares, for :func:`~mpdp.protocols.inner_product.
    cross_product_share`. ``progress`` shows a phase line per step and bars over the encryption (left) and the
    multi-exponentiations (right), the two long steps."""
    backend = spec.backend
    if not isinstance(backend, PaillierBackend):
        raise ParameterError(explain("backend", type(backend).__name__, "PaillierBackend", "use cross_product"))
    f = spec.fmt.frac_bits
    codec = FixedPoint(frac_bits=f, max_abs=float(spec.bound))
    result_int_bound = spec.rows * codec.bound * codec.bound
    mask = spec.reveal_to != spec.left
    mask_bits = result_int_bound.bit_length() + backend.mask_bits
    ring = spec.fmt.ring
    if comm.name == spec.left:
        pool = None
        if keys is None:
            progress.phase(f"generating a {backend.key_bits}-bit Paillier key")
            pk, sk = generate_keypair(backend.key_bits, rng=comm.rng, insecure_for_tests=backend.insecure_for_tests)
        elif len(keys) == 3:  # (pk, sk, randomizers precomputed offline, e.g. a RandomizerPool)
            pk, sk, pool = keys
            if getattr(pool, "public_key", None) != pk:
                raise KeyMismatchError(explain("randomizer pool", "randomizers for another key",
                                               "a RandomizerPool built for this public key",
                                               "pass keys=(pk, sk, RandomizerPool(CrtRandomizer(sk), size))"))
        else:
            pk, sk = keys
        packing = Packing.for_computation(pk, codec, terms=spec.rows, weight_codec=codec,
                                          mask_bits=mask_bits if mask else 0) if backend.packing else None
        randomizer = pool if pool is not None else (CrtRandomizer(sk, rng=comm.rng) if backend.randomizer == "crt"
                                                    else FixedBaseRandomizer(pk, rng=comm.rng))
        progress.phase(f"encrypting {spec.rows:,} rows of {spec.left_cols} columns for {spec.right} (Paillier)")
        enc = encrypt(pk, m, codec, packing=packing, randomizer=randomizer, progress=progress)
        comm.send(spec.right, {"key": pk.to_wire(), "x": enc}, label="ip.paillier")
        progress.phase(f"waiting for {spec.right}'s encrypted product")
        reply = comm.recv(spec.right, label="ip.paillier")
        product = EncryptedArray.from_wire(reply, pk)
        if product.shape != (spec.right_cols, spec.left_cols):
            raise MalformedMessageError(explain(f"product from {spec.right}", product.shape,
                                                str((spec.right_cols, spec.left_cols)), "the peer is out of step"))
        plain = decrypt_ints(sk, product).T  # Y^T X + R, transposed: X^T Y + R^T
        if not mask:
            values = np.asarray(plain, dtype=object).astype(np.float64) * 2.0 ** -(2 * f)
            return CrossProduct(values, None, spec.scale_bits, spec.fmt, spec.result_bound)
        if real:
            shares = np.asarray(plain, dtype=object).astype(np.float64) * 2.0 ** -(2 * f)
            return CrossProduct(None, shares, 0, spec.fmt, spec.result_bound, real=True)
        share = ring.from_int(np.asarray(plain, dtype=object))
    else:
        msg = comm.recv(spec.left, label="ip.paillier")
        if not isinstance(msg, dict) or set(msg) != {"key", "x"}:
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", type(msg).__name__, "{key, x}",
                                                "the peer runs another protocol version"))
        pk = PaillierPublicKey.from_wire(msg["key"], insecure_for_tests=backend.insecure_for_tests)
        enc = EncryptedArray.from_wire(msg["x"], pk)
        if enc.shape != (spec.rows, spec.left_cols):
            raise MalformedMessageError(explain(f"ciphertexts from {spec.left}", enc.shape,
                                                str((spec.rows, spec.left_cols)), "the peer is out of step"))
        progress.phase(f"computing Enc(Y^T X) for {spec.left}: {spec.right_cols} columns against {spec.rows:,} "
                       "encrypted rows (Paillier multi-exponentiations)")
        product = enc.left_matmul(m.T, codec, progress=progress)  # one multi-exponentiation per output
        r: Any = None
        if mask:
            product, r = product.add_mask(mask_bits, rng=comm.rng)
            share = ring.neg(ring.from_int(np.asarray(r, dtype=object).T))
        product = product.rerandomize(rng=comm.rng)
        comm.send(spec.left, product, label="ip.paillier")
        if not mask:
            return CrossProduct(None, None, spec.scale_bits, spec.fmt, spec.result_bound)
        if real:
            shares = -np.asarray(r, dtype=object).T.astype(np.float64) * 2.0 ** -(2 * f)
            return CrossProduct(None, shares, 0, spec.fmt, spec.result_bound, real=True)
    return finish(comm, spec, share)

