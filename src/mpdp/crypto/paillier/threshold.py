"""n-of-n threshold decryption: a Paillier key split so that every key holder must help decrypt.

Maths (Damgård and Jurik, PKC 2001, Sec. 4, specialised to n-of-n with additive sharing over the integers):
with lambda = lcm(p - 1, q - 1), the exponent

    d = lambda (lambda^-1 mod n),   so d = 0 mod lambda and d = 1 mod n,

decrypts by exponentiation alone: for c = (1 + n)^m r^n, c^d = (1 + n)^(m d) r^(n d) = 1 + m n mod n^2,
because r^(n lambda) = 1 and (1 + n) has order n. A dealer (the key owner, who then deletes the private key)
splits d = d_1 + ... + d_N with d_1..d_(N-1) uniform in [0, 2^(2k + 128)) for a k-bit n and d_N the
(negative) remainder. Holder i publishes the *partial decryption* c^(d_i) mod n^2; the product of all N is
c^d = 1 + m n, so m = (prod - 1) / n.

Security
--------
Semi-honest; any N - 1 holders learn nothing about d beyond statistical distance 2^-128 (their shares plus the
missing one's are uniform up to that distance), so no coalition short of everyone can decrypt. Partial
decryptions are not proven correct (no zero-knowledge proofs): a malicious holder can shift the plaintext
undetectably by multiplying its partial by (1 + n)^delta. Random corruption is detected (the product is then
not 1 mod n with overwhelming probability). Each partial decryption names the key, the split (``sharing_id``)
and a digest of the ciphertexts it opens, so partials of different keys, splits or ciphertexts never combine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from mpdp.crypto.paillier.ciphertext import EncryptedArray, unpack_plaintexts
from mpdp.crypto.paillier.encoding import decode_ints
from mpdp.crypto.paillier.keys import PaillierPrivateKey, PaillierPublicKey
from mpdp.crypto.paillier.serialization import check_key_id, check_recipe, ciphertext_digest, wire_int, wire_ints
from mpdp.errors import (
    InsufficientSharesError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    TamperedCiphertextError,
    explain,
)
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "KeyShare",
    "PartialDecryption",
    "combine_partial_decryptions",
    "combine_partial_decryptions_ints",
    "split_private_key",
]

_STATISTICAL_BITS = 128


@dataclass(frozen=True, repr=False)
class KeyShare:
    """Holder ``index`` (1-based) of ``n_shares``'s additive share of the decryption exponent. Secret."""

    public_key: PaillierPublicKey
    index: int
    n_shares: int
    sharing_id: str
    exponent: int = field(compare=False)

    def __repr__(self) -> str:
        return f"KeyShare(index={self.index} of {self.n_shares}, key={self.public_key.key_id[:12]}...)"

    def partial_decrypt(self, array: EncryptedArray) -> PartialDecryption:
        """This holder's contribution c^(d_i) mod n^2 for every ciphertext of ``array``."""
        self.public_key.require_same(array.public_key, "EncryptedArray")
        n2 = self.public_key.n2
        flat = array.ciphertexts.reshape(-1).tolist()
        values = np.empty(len(flat), dtype=object)
        values[:] = [gmpy2.powmod(c, self.exponent, n2) for c in flat]
        return PartialDecryption(self.public_key.key_id, self.sharing_id, self.index, self.n_shares,
                                 ciphertext_digest(flat), values)

    def to_private_wire(self) -> dict[str, Any]:
        """The share as plain data. Secret: send it only to its holder over a confidential channel."""
        return {"type": "paillier.key_share", "version": 1, "n": int(self.public_key.n), "index": self.index,
                "n_shares": self.n_shares, "sharing_id": self.sharing_id, "exponent": int(self.exponent)}

    @classmethod
    def from_private_wire(cls, wire: Any, *, insecure_for_tests: bool = False) -> KeyShare:
        recipe = check_recipe(wire, "paillier.key_share", {"n", "index", "n_shares", "sharing_id", "exponent"})
        key = PaillierPublicKey(wire_int(recipe, "n", low=3), insecure_for_tests=insecure_for_tests)
        n_shares = wire_int(recipe, "n_shares", low=2, high=1 << 16)
        index = wire_int(recipe, "index", low=1, high=n_shares + 1)
        exponent, sharing_id = recipe["exponent"], recipe["sharing_id"]
        if isinstance(exponent, bool) or not isinstance(exponent, int) or not isinstance(sharing_id, str):
            raise MalformedMessageError(explain("key share", "bad exponent or sharing_id", "int and str", "resend it"))
        return cls(key, index, n_shares, sharing_id, exponent)


@dataclass(frozen=True, repr=False)
class PartialDecryption:
    """One holder's partial decryption of a list of ciphertexts: a public, serialisable message."""

    key_id: str
    sharing_id: str
    index: int
    n_shares: int
    digest: str
    values: npt.NDArray[Any]

    def __repr__(self) -> str:
        return f"PartialDecryption(index={self.index} of {self.n_shares}, {self.values.size} values)"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "paillier.partial_decryption", "version": 1, "key_id": self.key_id,
                "sharing_id": self.sharing_id, "index": self.index, "n_shares": self.n_shares,
                "digest": self.digest, "values": self.values}

    @classmethod
    def from_wire(cls, wire: Any, public_key: PaillierPublicKey) -> PartialDecryption:
        fields = {"key_id", "sharing_id", "index", "n_shares", "digest", "values"}
        recipe = check_recipe(wire, "paillier.partial_decryption", fields)
        check_key_id(recipe["key_id"], public_key.key_id, "PartialDecryption")
        n_shares = wire_int(recipe, "n_shares", low=2, high=1 << 16)
        index = wire_int(recipe, "index", low=1, high=n_shares + 1)
        if not isinstance(recipe["sharing_id"], str) or not isinstance(recipe["digest"], str):
            raise MalformedMessageError(explain("sharing_id/digest", "non-str", "str", "reject the sender"))
        raw = recipe["values"]
        count = raw.size if isinstance(raw, np.ndarray) else len(raw) if isinstance(raw, list) else -1
        values = np.empty(max(count, 0), dtype=object)
        values[:] = [gmpy2.mpz(v) for v in
                     wire_ints(raw, count, low=1, high=int(public_key.n2), what="partial decryption")]
        return cls(recipe["key_id"], recipe["sharing_id"], index, n_shares, recipe["digest"], values)


def split_private_key(
    private_key: PaillierPrivateKey, n_shares: int, *, rng: RandomSource | None = None
) -> tuple[KeyShare, ...]:
    """Split ``private_key`` into ``n_shares`` additive shares of the decryption exponent (dealer step).

    The dealer should discard the private key afterwards: then only all holders together can decrypt.
    """
    if isinstance(n_shares, bool) or not isinstance(n_shares, int) or not 2 <= n_shares < 1 << 16:
        raise ParameterError(explain("n_shares", n_shares, "an int in [2, 65535]", "pass the number of holders"))
    source = resolve(rng)
    pk = private_key.public_key
    p, q, n = private_key.p, private_key.q, pk.n
    lam = gmpy2.lcm(p - 1, q - 1)
    d = int(lam * gmpy2.invert(lam, n))
    bits = 2 * pk.bits + _STATISTICAL_BITS
    shares = source.randbelow_many(1 << bits, n_shares - 1)
    shares.append(d - sum(shares))
    sharing_id = source.bytes(16).hex()
    return tuple(KeyShare(pk, i + 1, n_shares, sharing_id, e) for i, e in enumerate(shares))


def _check_partials(array: EncryptedArray, partials: Sequence[PartialDecryption]) -> list[PartialDecryption]:
    key = array.public_key
    items = list(partials)
    if not items:
        raise InsufficientSharesError(explain("partial decryptions", 0, "one from every key holder",
                                              "collect a partial decryption from each holder"))
    for p in items:
        if not isinstance(p, PartialDecryption):
            raise ParameterError(explain("partial", type(p).__name__, "a PartialDecryption", "pass partials"))
        check_key_id(p.key_id, key.key_id, "PartialDecryption")
    first = items[0]
    for p in items[1:]:
        if p.sharing_id != first.sharing_id or p.n_shares != first.n_shares:
            raise KeyMismatchError(explain("partial decryption", f"share {p.index} of split {p.sharing_id[:8]}",
                                           f"shares of split {first.sharing_id[:8]}",
                                           "combine partials made with shares of one split_private_key call"))
    indices = sorted(p.index for p in items)
    expected = list(range(1, first.n_shares + 1))
    if indices != expected:
        missing = sorted(set(expected) - set(indices))
        duplicated = sorted({i for i in indices if indices.count(i) > 1})
        raise InsufficientSharesError(
            explain("partial decryptions", f"shares {indices}", f"exactly one from each of shares {expected}",
                    f"collect the missing shares {missing}" + (f"; drop duplicates {duplicated}" if duplicated
                                                               else ""))
        )
    digest = ciphertext_digest(array.ciphertexts.reshape(-1).tolist())
    for p in items:
        if p.digest != digest or p.values.size != array.n_ciphertexts:
            raise KeyMismatchError(explain(f"partial decryption {p.index}", "a decryption of other ciphertexts",
                                           "partials of exactly this array", "ask every holder to decrypt it"))
    return items


def combine_partial_decryptions_ints(
    array: EncryptedArray, partials: Sequence[PartialDecryption]
) -> npt.NDArray[Any]:
    """The integer plaintexts of ``array`` (scaled by 2^frac_bits) from every holder's partial decryption."""
    items = _check_partials(array, partials)
    key = array.public_key
    n, n2 = key.n, key.n2
    plain = np.empty(array.ciphertexts.shape, dtype=object)
    flat = plain.reshape(-1)
    columns = [p.values for p in items]
    for j in range(array.n_ciphertexts):
        acc = gmpy2.mpz(1)
        for col in columns:
            acc = acc * col[j] % n2
        if acc % n != 1:
            raise TamperedCiphertextError(
                explain("combined partial decryptions", "a value that is not 1 mod n", "c^d = 1 + m n mod n^2",
                        "a partial decryption is corrupted; ask the holders to resend")
            )
        flat[j] = key.centered((acc - 1) // n)
    return unpack_plaintexts(array, plain)


def combine_partial_decryptions(
    array: EncryptedArray, partials: Sequence[PartialDecryption]
) -> npt.NDArray[np.float64]:
    """The reals of ``array`` from every holder's partial decryption; fewer than all raises
    :class:`~mpdp.errors.InsufficientSharesError`."""
    return decode_ints(combine_partial_decryptions_ints(array, partials), array.frac_bits)
