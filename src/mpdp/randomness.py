"""The one source of randomness in mpdp: a ChaCha20 keystream, passed explicitly.

Keys, secret shares, masks, Beaver triples and DP noise all draw from a :class:`RandomSource`. Nothing in
mpdp touches ``numpy.random`` globals or the ``random`` module. A source is a ChaCha20 keystream (RFC 8439,
via the ``cryptography`` package) under a 256-bit key:

* :meth:`RandomSource.fresh` (the default everywhere) takes the key from the operating system's CSPRNG
  (``os.urandom``), so two fresh sources never repeat;
* :meth:`RandomSource.seeded` derives the key from a seed by SHA-256. It reproduces exactly, says so in its
  ``repr`` and reports ``is_seeded``; DP code warns (:class:`~mpdp.errors.PrivacyLeakWarning`) when a release
  is made with one, because anyone who knows the seed knows the noise.

A party that needs several independent streams calls :meth:`RandomSource.spawn` with a label; the child key
is HMAC-SHA256(parent key, label), so children with distinct labels are independent and reproducible under
a seeded parent.

All integer draws are exact and unbiased: values modulo ``m`` are drawn by rejection, never by ``% m`` on a
raw word. Floats in [0, 1) carry 53 random bits. A source is not thread-safe: give each party its own child.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from mpdp.errors import ParameterError, explain

__all__ = ["RandomSource", "Shape", "resolve"]

Shape = SupportsIndex | tuple[int, ...]

_KEY_BYTES = 32
# Re-key well before ChaCha20's 32-bit block counter (256 GiB of keystream) could wrap.
_REKEY_BYTES = 1 << 36
_U64_BYTES = 8


#: the most values one draw may ask for (2^34 words: 128 GiB), checked before any allocation
MAX_DRAW = 1 << 34


def _as_shape(shape: Shape) -> tuple[int, ...]:
    dims = (int(shape),) if not isinstance(shape, tuple) else tuple(int(s) for s in shape)
    if any(d < 0 for d in dims):
        raise ParameterError(explain("shape", shape, "non-negative dimensions", "pass e.g. shape=(3, 4)"))
    if math.prod(dims) > MAX_DRAW:
        raise ParameterError(explain("shape", shape, f"at most 2^34 values in one draw ({MAX_DRAW:,})",
                                     "draw in blocks, or ask for fewer values"))
    return dims


def _seed_bytes(seed: int | str | bytes) -> bytes:
    if isinstance(seed, bool):
        raise ParameterError(explain("seed", seed, "an int, str or bytes", "pass e.g. seed=1234"))
    if isinstance(seed, int):
        if seed < 0:
            raise ParameterError(explain("seed", seed, "a non-negative int", "pass e.g. seed=1234"))
        return b"int:" + seed.to_bytes((seed.bit_length() + 7) // 8 or 1, "big")
    if isinstance(seed, str):
        return b"str:" + seed.encode("utf-8")
    if isinstance(seed, bytes):
        return b"bytes:" + seed
    raise ParameterError(explain("seed", seed, "an int, str or bytes", "pass e.g. seed=1234"))


class RandomSource:
    """A cryptographically secure stream of random bits with typed, vectorised draws.

    Construct with :meth:`fresh` (OS entropy) or :meth:`seeded` (reproducible, for tests and experiments).
    """

    __slots__ = ("_description", "_encryptor", "_key", "_nonce_index", "_produced", "_seeded")

    def __init__(self, _key: bytes, *, _seeded: bool, _description: str) -> None:
        if len(_key) != _KEY_BYTES:
            raise ParameterError(
                explain("key", f"{len(_key)} bytes", "32 bytes", "use RandomSource.fresh() or .seeded(seed)")
            )
        self._key = _key
        self._seeded = _seeded
        self._description = _description
        self._nonce_index = 0
        self._produced = 0
        self._encryptor = self._new_encryptor()

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def fresh(cls) -> RandomSource:
        """A source keyed from the operating system's CSPRNG: the default for every randomised function."""
        return cls(os.urandom(_KEY_BYTES), _seeded=False, _description="fresh OS entropy")

    @classmethod
    def seeded(cls, seed: int | str | bytes) -> RandomSource:
        """A reproducible source for tests and experiments. Never use one for a real release."""
        key = hashlib.sha256(b"mpdp.RandomSource.seeded:" + _seed_bytes(seed)).digest()
        return cls(key, _seeded=True, _description=f"seeded={seed!r}, reproducible, NOT for production")

    def spawn(self, label: str) -> RandomSource:
        """An independent child stream named by ``label`` (e.g. a party's name)."""
        if not isinstance(label, str) or not label:
            raise ParameterError(explain("label", label, "a non-empty str", "pass e.g. spawn('alice')"))
        key = hmac.new(self._key, b"mpdp.spawn:" + label.encode("utf-8"), hashlib.sha256).digest()
        return RandomSource(key, _seeded=self._seeded, _description=f"{self._description} / {label}")

    @property
    def is_seeded(self) -> bool:
        """True when the stream is reproducible from a seed (tests and experiments only)."""
        return self._seeded

    def __repr__(self) -> str:
        return f"RandomSource({self._description})"

    # -- raw keystream -----------------------------------------------------------------------------------
    def _new_encryptor(self) -> Any:
        # cryptography's ChaCha20 nonce is 16 bytes: a 4-byte little-endian block counter, then 12 bytes.
        nonce = b"\x00" * 4 + self._nonce_index.to_bytes(12, "little")
        return Cipher(algorithms.ChaCha20(self._key, nonce), mode=None).encryptor()

    def _fill(self, out: memoryview) -> None:
        """Overwrite ``out`` (a byte view) with keystream."""
        n = len(out)
        if self._produced + n > _REKEY_BYTES:
            self._nonce_index += 1
            self._produced = 0
            self._encryptor = self._new_encryptor()
        self._produced += n
        # update_into encrypts zeros straight into the caller's buffer: no intermediate copies.
        # Its output buffer must have room for one extra block, hence the scratch tail.
        scratch = bytearray(n + 64)
        self._encryptor.update_into(bytes(n), scratch)
        out[:] = memoryview(scratch)[:n]

    def bytes(self, n: int) -> bytes:
        """``n`` uniformly random bytes."""
        if n < 0:
            raise ParameterError(explain("n", n, "a non-negative byte count", "pass e.g. bytes(32)"))
        buf = bytearray(n)
        self._fill(memoryview(buf))
        return bytes(buf)

    # -- integers ------------------------------------------------------------------------------------------
    def uint64(self, shape: Shape) -> npt.NDArray[np.uint64]:
        """Uniform 64-bit words; also the elements of the ring Z_2^64."""
        dims = _as_shape(shape)
        count = math.prod(dims)
        if self._produced + count * _U64_BYTES > _REKEY_BYTES:
            self._nonce_index += 1
            self._produced = 0
            self._encryptor = self._new_encryptor()
        self._produced += count * _U64_BYTES
        # Keystream bytes read as little-endian words; the 8 spare words absorb update_into's one-block tail.
        words = np.empty(count + 8, dtype=np.uint64)
        self._encryptor.update_into(bytes(count * _U64_BYTES), memoryview(words.data).cast("B"))
        if np.little_endian:
            return words[:count].reshape(dims)
        return words[:count].byteswap().reshape(dims)  # pragma: no cover - big-endian hosts

    def ring(self, shape: Shape, bits: int = 64) -> npt.NDArray[np.uint64]:
        """Uniform elements of Z_2^bits (1 <= bits <= 64) as uint64."""
        if not 1 <= bits <= 64:
            raise ParameterError(
                explain("bits", bits, "1 <= bits <= 64", "use limbs of uint64() for wider rings")
            )
        words = self.uint64(shape)
        if bits < 64:
            words &= np.uint64((1 << bits) - 1)
        return words

    def bits(self, shape: Shape) -> npt.NDArray[np.uint8]:
        """Uniform bits (0 or 1) as uint8."""
        dims = _as_shape(shape)
        count = math.prod(dims)
        raw = np.frombuffer(self.bytes((count + 7) // 8), dtype=np.uint8)
        return np.unpackbits(raw, count=count, bitorder="little").reshape(dims)

    def integers(self, low: int, high: int, shape: Shape) -> npt.NDArray[np.int64]:
        """Uniform integers in ``[low, high)`` as int64, exactly (rejection, no modulo bias)."""
        span = int(high) - int(low)
        if span <= 0 or span > 1 << 63 or not (-(1 << 63) <= low and high <= 1 << 63):
            raise ParameterError(
                explain("[low, high)", (low, high), "a non-empty int64 range", "pass low < high within int64")
            )
        below = self.below(span, shape)
        return (below.astype(np.int64) + np.int64(low)) if low else below.astype(np.int64)

    def below(self, modulus: int, shape: Shape) -> npt.NDArray[np.uint64]:
        """Uniform integers in ``[0, modulus)`` for ``1 <= modulus <= 2^64``, as uint64, unbiased."""
        if not 1 <= modulus <= 1 << 64:
            raise ParameterError(
                explain("modulus", modulus, "1 <= modulus <= 2^64", "use randbelow() for larger moduli")
            )
        dims = _as_shape(shape)
        count = math.prod(dims)
        if modulus & (modulus - 1) == 0:  # a power of two: masking is exact
            words = self.uint64(count)
            if modulus < 1 << 64:
                words &= np.uint64(modulus - 1)
            return words.reshape(dims)
        # Accept words below the largest multiple of the modulus; each word is accepted with
        # probability > 1/2, so a handful of refills suffice.
        limit = np.uint64(((1 << 64) // modulus) * modulus)
        mod = np.uint64(modulus)
        out = np.empty(count, dtype=np.uint64)
        filled = 0
        while filled < count:
            need = count - filled
            words = self.uint64(need + need // 4 + 8)
            good = words[words < limit][:need]
            out[filled : filled + good.size] = good % mod
            filled += good.size
        return out.reshape(dims)

    def randbelow(self, modulus: int) -> int:
        """One uniform integer in ``[0, modulus)`` for an arbitrarily large modulus (e.g. a Paillier n)."""
        if modulus < 1:
            raise ParameterError(explain("modulus", modulus, "an int >= 1", "pass the group order"))
        if modulus == 1:
            return 0
        nbits = (modulus - 1).bit_length()
        nbytes = (nbits + 7) // 8
        mask = (1 << nbits) - 1
        while True:
            candidate = int.from_bytes(self.bytes(nbytes), "little") & mask
            if candidate < modulus:
                return candidate

    def randbelow_many(self, modulus: int, count: int) -> list[int]:
        """``count`` independent uniform integers in ``[0, modulus)`` (big moduli)."""
        if count < 0:
            raise ParameterError(explain("count", count, "a non-negative int", "pass e.g. count=10"))
        if modulus < 1:
            raise ParameterError(explain("modulus", modulus, "an int >= 1", "pass the group order"))
        if modulus == 1:
            return [0] * count
        nbits = (modulus - 1).bit_length()
        nbytes = (nbits + 7) // 8
        mask = (1 << nbits) - 1
        out: list[int] = []
        while len(out) < count:
            need = count - len(out)
            raw = self.bytes(nbytes * (need + need // 2 + 1))
            for i in range(0, len(raw), nbytes):
                candidate = int.from_bytes(raw[i : i + nbytes], "little") & mask
                if candidate < modulus:
                    out.append(candidate)
                    if len(out) == count:
                        break
        return out

    def bernoulli(self, shape: Shape, p: float) -> npt.NDArray[np.bool_]:
        """Independent booleans, each True with probability ``floor(p 2^64) 2^-64``: at most ``p`` and within
        ``2^-64`` of it (exactly ``p`` when ``p`` is 0, 1 or a multiple of ``2^-64``).

        One 64-bit word per element, compared with the integer threshold ``floor(p 2^64)`` (exact: ``p 2^64``
        only moves ``p``'s exponent). Rounding down means a caller that accounts for rate ``p`` (Poisson
        subsampling, whose privacy loss grows with the rate) states an upper bound of the true one."""
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ParameterError(explain("p", p, "a probability in [0, 1]", "pass e.g. batch_size / n"))
        words = self.uint64(shape)
        if p == 1:  # floor(2^64) does not fit a word; every word is below 2^64
            return np.ones(words.shape, dtype=np.bool_)
        threshold = np.uint64(math.floor(float(p) * 2.0**64))
        out: npt.NDArray[np.bool_] = words < threshold
        return out

    # -- floats -----------------------------------------------------------------------------------------
    def random(self, shape: Shape) -> npt.NDArray[np.float64]:
        """Uniform floats on the grid {k 2^-53 : 0 <= k < 2^53}, i.e. in [0, 1)."""
        return (self.uint64(shape) >> np.uint64(11)).astype(np.float64) * (2.0**-53)

    def random_open(self, shape: Shape) -> npt.NDArray[np.float64]:
        """Uniform floats in (0, 1): the grid {(k + 1/2) 2^-53}, never 0 or 1 (safe for log)."""
        return ((self.uint64(shape) >> np.uint64(11)).astype(np.float64) + 0.5) * (2.0**-53)

    def permutation(self, n: int) -> npt.NDArray[np.int64]:
        """A uniformly random permutation of ``range(n)``.

        Sorts by independent 128-bit random keys; the permutation is exactly uniform unless two keys tie,
        which happens with probability below n^2 / 2^129.
        """
        if n < 0:
            raise ParameterError(explain("n", n, "a non-negative int", "pass the number of items"))
        keys = self.uint64((2, n))
        return np.lexsort((keys[1], keys[0])).astype(np.int64)


def resolve(rng: RandomSource | None) -> RandomSource:
    """The source a randomised function should use: the one passed, or a fresh OS-entropy source."""
    if rng is None:
        return RandomSource.fresh()
    if not isinstance(rng, RandomSource):
        raise ParameterError(
            explain("rng", rng, "a mpdp RandomSource or None", "pass RandomSource.fresh() or RandomSource.seeded(s)")
        )
    return rng
