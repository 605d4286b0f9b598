"""Paillier encryption on gmpy2: fixed-point arrays, fast randomizers, packing, n-of-n decryption.

Modules, each with one job:

* :mod:`~mpdp.crypto.paillier.keys`: key generation (2048 bits default, 3072 offered), CRT decryption,
  ``phe`` interop, key wire forms;
* :mod:`~mpdp.crypto.paillier.randomizers`: where encryption time goes, r^n mod n^2, and its fast paths
  (owner CRT, precomputed pool, opt-in fixed-base short exponent);
* :mod:`~mpdp.crypto.paillier.encoding`: the public fixed-point format (one scale per protocol);
* :mod:`~mpdp.crypto.paillier.packing`: many signed slots per plaintext with declared headroom;
* :mod:`~mpdp.crypto.paillier.ciphertext`: :class:`EncryptedArray`, its homomorphic operations and bounds;
* :mod:`~mpdp.crypto.paillier.multiexp`: the evaluator's inner product as one multi-exponentiation;
* :mod:`~mpdp.crypto.paillier.threshold`: n-of-n key splitting and partial decryptions;
* :mod:`~mpdp.crypto.paillier.serialization`: versioned wire recipes and their strict checks.

>>> from mpdp.randomness import RandomSource
>>> import warnings, numpy as np
>>> rng = RandomSource.seeded(1)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     pk, sk = generate_keypair(512, rng=rng, insecure_for_tests=True)
>>> codec = FixedPoint(frac_bits=16, max_abs=1.0)
>>> x = encrypt(pk, [0.5, -0.25, 1.0], codec, randomizer=CrtRandomizer(sk, rng=rng))
>>> float(decrypt(sk, x.dot([1.0, 0.5, -1.0], codec)))
-0.625

This package never touches the network: objects expose ``to_wire()``/``from_wire()`` plain-data forms that
:mod:`mpdp.runtime.codec` carries.
"""

from mpdp.crypto.paillier.ciphertext import EncryptedArray, decrypt, decrypt_ints, encrypt
from mpdp.crypto.paillier.encoding import FixedPoint
from mpdp.crypto.paillier.keys import (
    DEFAULT_KEY_BITS,
    MIN_SECURE_KEY_BITS,
    PaillierPrivateKey,
    PaillierPublicKey,
    generate_keypair,
)
from mpdp.crypto.paillier.multiexp import multiexp
from mpdp.crypto.paillier.packing import Packing
from mpdp.crypto.paillier.randomizers import (
    CrtRandomizer,
    FixedBaseRandomizer,
    Randomizer,
    RandomizerPool,
    StandardRandomizer,
)
from mpdp.crypto.paillier.threshold import (
    KeyShare,
    PartialDecryption,
    combine_partial_decryptions,
    combine_partial_decryptions_ints,
    split_private_key,
)

__all__ = [
    "DEFAULT_KEY_BITS",
    "MIN_SECURE_KEY_BITS",
    "CrtRandomizer",
    "EncryptedArray",
    "FixedBaseRandomizer",
    "FixedPoint",
    "KeyShare",
    "Packing",
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "PartialDecryption",
    "Randomizer",
    "RandomizerPool",
    "StandardRandomizer",
    "combine_partial_decryptions",
    "combine_partial_decryptions_ints",
    "decrypt",
    "decrypt_ints",
    "encrypt",
    "generate_keypair",
    "multiexp",
    "split_private_key",
]
