"""What the key owner sees: every slot of a ciphertext, not only the vector's declared length."""

from __future__ import annotations

from typing import Any

import numpy as np

from mpdp.crypto.ckks import CkksContext, CkksVector


def all_slots(context: CkksContext, vector: CkksVector) -> Any:
    """Every slot of ``vector``'s first ciphertext, decrypted with ``context``'s secret key as its owner could
    (TenSEAL's ``decrypt`` shows only the vector's declared length)."""
    from tenseal import sealapi

    seal = context.tenseal.seal_context().data
    plain = sealapi.Plaintext()
    sealapi.Decryptor(seal, context.secret_key.data).decrypt(vector.chunks[0].ciphertext()[0], plain)
    return np.array(sealapi.CKKSEncoder(seal).decode_double(plain))
