"""Shamir t-of-n secret sharing over a prime field, vectorised, with cached Lagrange coefficients.

A secret ``s`` in Z_p is the constant term of a random polynomial ``f`` of degree ``t``; party ``i``
(``i = 1..n``) holds ``f(i)``. Any ``t + 1`` shares determine ``s = sum_i lambda_i f(i)`` with the Lagrange
coefficients at zero ``lambda_i = prod_{j != i} j / (j - i) (mod p)``; any ``t`` shares are jointly
uniform and independent of ``s`` (perfect secrecy).

Conversion to additive sharing: the parties of a reconstruction set ``S`` hold ``lambda_i^S f(i)``, an
additive sharing of ``s`` over Z_p (:meth:`ShamirScheme.to_additive`, local). Back: each party
Shamir-shares its additive share and every party adds what it receives (:meth:`ShamirScheme.share` then
:meth:`ShamirScheme.add`); that is one message per pair, sent by the protocol that needs it.

Fields
------
:class:`PrimeField` works on numpy ``uint64`` arrays for primes below 2^32 (products fit a word), on the
Mersenne prime ``2^61 - 1`` (128-bit products folded with ``2^61 = 1``), and on object arrays of Python
ints for any larger prime (e.g. ``2^127 - 1`` or ``2^521 - 1``, which holds a 256-bit seed whole). The
prime is checked (``gmpy2.is_prime``, 50 Miller-Rabin rounds) at construction.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring.kernels import mulhilo
from mpdp.errors import KeyMismatchError, ParameterError, ShapeMismatchError, explain
from mpdp.numeric import exact_integers
from mpdp.randomness import RandomSource, resolve

__all__ = ["MERSENNE_61", "MERSENNE_127", "MERSENNE_521", "PrimeField", "ShamirScheme", "ShamirShare"]

FieldArray = npt.NDArray[Any]  # uint64 for the word-sized fields, object (Python ints) otherwise
_M61 = (1 << 61) - 1


@dataclass(frozen=True)
class PrimeField:
    """The field Z_p with vectorised arithmetic on arrays of residues."""

    p: int

    def __post_init__(self) -> None:
        if isinstance(self.p, bool) or not isinstance(self.p, int) or self.p < 3 or not gmpy2.is_prime(self.p, 50):
            raise ParameterError(explain("p", self.p, "a prime >= 3", "use MERSENNE_61, MERSENNE_127 or another prime"))

    @property
    def kind(self) -> str:
        if self.p < 1 << 32:
            return "small"
        if self.p == _M61:
            return "m61"
        return "big"

    @property
    def dtype(self) -> Any:
        return np.uint64 if self.kind != "big" else object

    def __repr__(self) -> str:
        return f"PrimeField(p={self.p})" if self.p.bit_length() <= 64 else f"PrimeField(p ~ 2^{self.p.bit_length()})"

    # -- conversion ---------------------------------------------------------------------------------------
    def array(self, values: Any) -> FieldArray:
        """Residues of integers (ints of any size, int arrays or object arrays of ints; reduced mod p) as this
        field's array type. Non-integers are refused (:func:`mpdp.numeric.exact_integers`): ``0.9`` is not the
        residue 0, and NaN or infinity is a :class:`~mpdp.errors.DomainError`. Reals are shared after a
        fixed-point encoding (:class:`~mpdp.crypto.fixed_point.FixedPointFormat`)."""
        arr = np.asarray(values) if isinstance(values, np.ndarray) and values.dtype.kind in "iu" else exact_integers(
            values, "field values", fix="pass integers; encode reals in fixed point first (FixedPointFormat)")
        if arr.dtype == object or self.kind == "big":
            flat = [int(v) % self.p for v in arr.reshape(-1).tolist()]
            if self.kind == "big":
                out = np.empty(len(flat), dtype=object)
                out[:] = flat
                return out.reshape(arr.shape)
            return np.array(flat, dtype=np.uint64).reshape(arr.shape)
        if arr.dtype.kind == "i":
            # word-sized fields only here: p < 2^62 fits int64
            return np.mod(arr.astype(np.int64), np.int64(self.p)).astype(np.uint64)
        return np.mod(arr.astype(np.uint64), np.uint64(self.p))

    def random(self, rng: RandomSource, shape: tuple[int, ...]) -> FieldArray:
        if self.kind != "big":
            return rng.below(self.p, shape)
        count = int(np.prod(shape, dtype=np.int64))
        out = np.empty(count, dtype=object)
        out[:] = rng.randbelow_many(self.p, count)
        return out.reshape(shape)

    # -- arithmetic (operands are residues) ---------------------------------------------------------------
    def add(self, a: FieldArray, b: FieldArray) -> FieldArray:
        if self.kind == "big":
            return np.asarray((a + b) % self.p, dtype=object)
        s = a + b  # < 2p < 2^62: no wrap
        return np.where(s >= np.uint64(self.p), s - np.uint64(self.p), s)

    def sub(self, a: FieldArray, b: FieldArray) -> FieldArray:
        return self.add(a, self.neg(b))

    def neg(self, a: FieldArray) -> FieldArray:
        if self.kind == "big":
            return np.asarray((-a) % self.p, dtype=object)
        return np.where(a == 0, a, np.uint64(self.p) - a)

    def mul(self, a: FieldArray, b: FieldArray) -> FieldArray:
        if self.kind == "big":
            return np.asarray((a * b) % self.p, dtype=object)
        if self.kind == "small":
            return (a * b) % np.uint64(self.p)
        # p = 2^61 - 1: a b = hi 2^64 + lo with hi < 2^58; 2^64 = 8 and 2^61 = 1 (mod p)
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
        lo, hi = mulhilo(a, b)
        m = np.uint64(_M61)
        s = (lo & m) + (lo >> np.uint64(61)) + (hi << np.uint64(3))  # < 2^62 + 2^61 + 8
        s = (s & m) + (s >> np.uint64(61))
        reduced: FieldArray = np.where(s >= m, s - m, s)
        return reduced

    def scalar_mul(self, a: FieldArray, k: int) -> FieldArray:
        return self.mul(a, self.array(np.array(_constant(k) % self.p, dtype=object)))

    def inverse(self, k: int) -> int:
        k = _constant(k)
        if k % self.p == 0:
            raise ParameterError(explain("k", k, "a non-zero residue", "zero has no inverse"))
        return pow(k, -1, self.p)


def _constant(k: Any) -> int:
    """A public integer constant, or a ParameterError (a float is never truncated)."""
    if isinstance(k, int | np.integer) or type(k).__name__ == "mpz":
        return int(k)
    raise ParameterError(explain("k", k, "an integer", "pass an int"))


MERSENNE_61 = PrimeField((1 << 61) - 1)
MERSENNE_127 = PrimeField((1 << 127) - 1)
MERSENNE_521 = PrimeField((1 << 521) - 1)


@dataclass(frozen=True)
class ShamirShare:
    """Party ``x``'s share (the polynomial evaluated at ``x``) of the sharing ``sharing_id``."""

    scheme: ShamirScheme
    x: int
    sharing_id: bytes
    value: FieldArray = field(repr=False)

    def __post_init__(self) -> None:
        f = self.scheme.field if isinstance(self.scheme, ShamirScheme) else None
        if f is None or isinstance(self.x, bool) or not isinstance(self.x, int) or not 1 <= self.x <= self.scheme.n:
            raise ParameterError(explain("share", (self.scheme, self.x), "a ShamirScheme and a point in 1..n",
                                         "make shares with ShamirScheme.share()"))
        if not isinstance(self.sharing_id, bytes):
            raise ParameterError(explain("sharing_id", self.sharing_id, "bytes", "make shares with share()"))
        value = self.value
        ok = isinstance(value, np.ndarray) and (
            (value.dtype == np.uint64 and f.kind != "big" and not np.any(value >= np.uint64(f.p)))
            or (value.dtype == object and f.kind == "big"
                and all(isinstance(v, int) and 0 <= v < f.p for v in value.reshape(-1).tolist()))
        )
        if not ok:
            raise ParameterError(explain("share value", getattr(value, "dtype", type(value).__name__),
                                         f"residues mod p of {f!r} ({f.dtype})", "make shares with share()"))


@dataclass(frozen=True)
class ShamirScheme:
    """t-of-n Shamir sharing: degree-``t`` polynomials, any ``t + 1`` of the ``n`` shares reconstruct.

    Parameters
    ----------
    field:
        The prime field; it must have more than ``n`` elements.
    n:
        Number of shareholders, evaluated at ``x = 1..n``.
    t:
        Threshold (polynomial degree): coalitions of ``t`` learn nothing; ``0 <= t < n``.
    """

    field: PrimeField
    n: int
    t: int

    def __post_init__(self) -> None:
        if not isinstance(self.field, PrimeField):
            raise ParameterError(explain("field", self.field, "a PrimeField", "use MERSENNE_61 or PrimeField(p)"))
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1 or self.n >= self.field.p:
            raise ParameterError(explain("n", self.n, f"1 <= n < p ({self.field!r})", "use fewer parties"))
        if isinstance(self.t, bool) or not isinstance(self.t, int) or not 0 <= self.t < self.n:
            raise ParameterError(explain("t", self.t, f"0 <= t < n = {self.n}", "pick a threshold below n"))

    def share(self, secret: Any, *, rng: RandomSource | None = None) -> list[ShamirShare]:
        """Shares ``f(1), ..., f(n)`` of each element of ``secret`` (integers, reduced mod p)."""
        source = resolve(rng)
        f = self.field
        s = f.array(secret)
        coefficients = [f.random(source, s.shape) for _ in range(self.t)]
        sharing_id = source.bytes(16)
        shares = []
        for x in range(1, self.n + 1):
            # Horner: f(x) = s + x (c1 + x (c2 + ...))
            acc = f.array(np.zeros(s.shape, dtype=np.int64))
            for c in reversed(coefficients):
                acc = f.add(f.scalar_mul(acc, x), c)
            value = f.add(f.scalar_mul(acc, x), s) if coefficients else s.copy()
            shares.append(ShamirShare(self, x, sharing_id, value))
        return shares

    @functools.cache  # noqa: B019 - schemes are few, immutable and hashable; the cache is the point
    def lagrange_at_zero(self, xs: tuple[int, ...]) -> tuple[int, ...]:
        """``lambda_i`` for the evaluation points ``xs`` (distinct, in 1..n), cached per point set."""
        p = self.field.p
        out = []
        for i in xs:
            num, den = 1, 1
            for j in xs:
                if j != i:
                    num = num * j % p
                    den = den * (j - i) % p
            out.append(num * pow(den, -1, p) % p)
        return tuple(out)

    def _check(self, shares: Sequence[ShamirShare], minimum: int) -> tuple[int, ...]:
        if not isinstance(shares, Sequence) or not all(isinstance(s, ShamirShare) for s in shares):
            raise ParameterError(explain("shares", type(shares).__name__, "a list of ShamirShare",
                                         "pass the shares ShamirScheme.share() made"))
        if len(shares) < minimum:
            raise ParameterError(explain("shares", f"{len(shares)} shares", f"at least t + 1 = {minimum}",
                                         "collect more shares (any t + 1 reconstruct)"))
        first = shares[0]
        for s in shares:
            if s.sharing_id != first.sharing_id or s.scheme != self:
                raise KeyMismatchError(explain("sharing_id", s.sharing_id.hex(), f"{first.sharing_id.hex()}",
                                               "reconstruct only shares of one sharing, under one scheme"))
            if np.shape(s.value) != np.shape(first.value):
                raise ShapeMismatchError(explain("share shape", np.shape(s.value), f"{np.shape(first.value)}",
                                                 "pass shares of one sharing"))
        xs = tuple(s.x for s in shares)
        if len(set(xs)) != len(xs) or not all(1 <= x <= self.n for x in xs):
            raise ParameterError(explain("share points", xs, f"distinct points in 1..{self.n}",
                                         "pass each party's share once"))
        return xs

    def reconstruct(self, shares: Sequence[ShamirShare]) -> FieldArray:
        """The secret from any ``t + 1`` (or more; the first ``t + 1`` are used) shares."""
        self._check(shares, self.t + 1)
        used = list(shares)[: self.t + 1]
        xs = tuple(s.x for s in used)
        lambdas = self.lagrange_at_zero(xs)
        f = self.field
        total = f.scalar_mul(used[0].value, lambdas[0])
        for s, lam in zip(used[1:], lambdas[1:], strict=True):
            total = f.add(total, f.scalar_mul(s.value, lam))
        return total

    def to_additive(self, share: ShamirShare, subset: Iterable[int]) -> FieldArray:
        """This share times its Lagrange coefficient for ``subset``: additive shares of the secret over
        Z_p among the parties of ``subset`` (which must have ``t + 1`` or more members, incl. this one)."""
        xs = tuple(sorted(set(subset)))
        if share.x not in xs or len(xs) < self.t + 1 or not all(1 <= x <= self.n for x in xs):
            raise ParameterError(explain("subset", xs, f">= t + 1 = {self.t + 1} points of 1..{self.n} incl. "
                                         f"{share.x}", "name the parties that will add their shares"))
        lam = self.lagrange_at_zero(xs)[xs.index(share.x)]
        return self.field.scalar_mul(share.value, lam)

    def add(self, a: ShamirShare, b: ShamirShare, *, sharing_id: bytes) -> ShamirShare:
        """The share of the sum of two sharings (same point): Shamir sharing is linear."""
        if a.x != b.x or a.scheme != self or b.scheme != self:
            raise KeyMismatchError(explain("share points", (a.x, b.x), "shares of one party under this scheme",
                                           "add a party's own shares only"))
        return ShamirShare(self, a.x, sharing_id, self.field.add(a.value, b.value))
