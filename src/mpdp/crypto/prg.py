"""A fast pseudorandom generator for bulk correlated randomness: AES-128 in counter mode.

The trusted dealer and each computing party expand a shared secret key into many megabytes of uniform ring
elements per operation (:mod:`mpdp.crypto.correlations`). :class:`~mpdp.randomness.RandomSource`
(ChaCha20 in software) would make that expansion the bottleneck of every product; AES-CTR runs on the
AES-NI instructions, several times faster. The key itself always comes from a ``RandomSource``, so the
randomness is still injected and cryptographic: this is only a PRG, the standard one (NIST SP 800-38A
counter mode; a block cipher in CTR mode is a PRG under the PRP assumption on AES).

Only the draws the correlation dealer needs are offered: uniform words, uniform ring elements and bits.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpdp.errors import ParameterError, explain

__all__ = ["AesCtrPrg"]

_AHEAD = 1 << 12  # words of keystream generated at once (32 KiB)
_MAX_BYTES = 1 << 40  # far below the 2^68 bytes after which a 128-bit block counter would repeat


class AesCtrPrg:
    """Expands a secret key of at least 16 bytes into a keystream of uniform words.

    Parameters
    ----------
    key:
        Secret key material (e.g. 32 bytes from a ``RandomSource``); it is hashed with SHA-256 and the
        first 16 bytes key AES-128.
    is_seeded:
        Whether the key derives from a seeded (reproducible, test-only) source; reported, not used.
    """

    __slots__ = ("_buffer", "_encryptor", "_pos", "_produced", "_zeros", "is_seeded")

    def __init__(self, key: bytes, *, is_seeded: bool = False) -> None:
        if not isinstance(key, bytes) or len(key) < 16:
            raise ParameterError(explain("key", type(key).__name__, "at least 16 secret bytes",
                                         "pass e.g. RandomSource.fresh().bytes(32)"))
        aes_key = hashlib.sha256(b"mpdp.AesCtrPrg:" + key).digest()[:16]
        self._encryptor: Any = Cipher(algorithms.AES(aes_key), modes.CTR(b"\x00" * 16)).encryptor()
        self._produced = 0
        self._zeros = np.zeros(0, dtype=np.uint8)  # plaintext of the keystream, reused (never written)
        self._buffer = np.zeros(0, dtype=np.uint64)  # keystream generated ahead; words before _pos were served
        self._pos = 0
        self.is_seeded = is_seeded

    def __repr__(self) -> str:
        return f"AesCtrPrg(seeded={self.is_seeded})"

    def _keystream_into(self, out: npt.NDArray[np.uint64], count: int) -> None:
        """Write the next ``count`` keystream words into ``out[:count]`` (``out`` has two spare words after)."""
        nbytes = 8 * count
        self._produced += nbytes
        if self._produced > _MAX_BYTES:
            raise ParameterError(explain("keystream", f"{self._produced} bytes", f"<= {_MAX_BYTES} bytes per key",
                                         "start a new session (fresh keys)"))
        # Encrypting zeros yields the keystream; the two spare words absorb update_into's extra block room.
        if self._zeros.size < nbytes:
            self._zeros = np.zeros(nbytes, dtype=np.uint8)
        self._encryptor.update_into(self._zeros[:nbytes].data, out[: count + 2].data.cast("B"))
        if not np.little_endian:  # pragma: no cover - the words are the little-endian reading of the stream
            out[:count].byteswap(inplace=True)

    def _words(self, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` words of the keystream.

        The keystream is generated at least ``_AHEAD`` words at a time and served in order, so many small
        draws (the parts of the correlations of one protocol step) cost one AES call; the words served are
        exactly those unbuffered calls would give. A draw beyond the buffer gets one fresh array holding the
        buffer's rest and the new keystream, generated in place (no second copy). Each word is served once:
        the returned views never overlap.
        """
        pos, buffer = self._pos, self._buffer
        if pos + count <= buffer.size:
            self._pos = pos + count
            return buffer[pos : pos + count]
        rest = buffer.size - pos
        fresh = max(count - rest, _AHEAD)
        words = np.empty(rest + fresh + 2, dtype=np.uint64)
        words[:rest] = buffer[pos:]
        self._keystream_into(words[rest:], fresh)
        self._buffer, self._pos = words[: rest + fresh], count
        return words[:count]

    def uint64(self, shape: int | tuple[int, ...]) -> npt.NDArray[np.uint64]:
        dims = shape if type(shape) is tuple else (shape,) if isinstance(shape, int) else tuple(shape)
        return self._words(int(math.prod(dims))).reshape(dims)

    def ring(self, shape: int | tuple[int, ...], bits: int = 64) -> npt.NDArray[np.uint64]:
        words = self.uint64(shape)
        if bits < 64:
            words &= np.uint64((1 << bits) - 1)
        return words

    def bits(self, shape: int | tuple[int, ...]) -> npt.NDArray[np.uint8]:
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        count = int(math.prod(dims))
        raw = self._words((count + 63) // 64).view(np.uint8)
        return np.unpackbits(raw, count=count, bitorder="little").reshape(dims)
