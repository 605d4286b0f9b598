"""Secure inner products and cross-party matrix products ``X^T Y`` between two data holders.

Party ``left`` holds ``X`` (n x a), party ``right`` holds ``Y`` (n x b) over the same n records (vectors are
n x 1). They learn ``X^T Y`` (a x b) as additive shares over Z_2^l at scale 2^(2f) (:class:`CrossProduct`
``.share``), or one of them learns it in the clear (``reveal_to``). Every backend computes the matrix form in
one pass: no loop of d_k x d_l scalar inner products.

Backends (:class:`SharesBackend`, :class:`PaillierBackend`, :class:`CkksBackend`):

``shares``: the commodity-server form of a Beaver matrix triple (Du & Atallah; Beaver 1991). A dealer gives
    ``left`` a random ``A`` (n x a), ``right`` a random ``B`` (n x b) (as 32-byte seeds) and additive shares
    ``Z``, ``A^T B - Z`` of their product. In one round ``left`` sends ``E = X - A`` and ``right`` sends
    ``F = Y - B``; then ``left`` holds ``A^T F + Z`` and ``right`` holds ``E^T Y + A^T B - Z``, which add up to
    ``X^T Y`` in the ring. Half the traffic and rounds of sharing both inputs and running a generic Beaver
    product.
``paillier``: ``left`` (the key owner) encrypts each row of ``X`` packed into one plaintext (slots sized for
    n-term sums plus the mask), ``right`` computes ``Enc(Y^T X)`` as one multi-exponentiation per output
    ciphertext, adds a statistical mask ``R`` (``mask_bits`` bits above the result bound), rerandomizes and
    returns it; ``left`` decrypts ``X^T Y + R`` and ``right`` keeps ``-R``.
``ckks``: see :mod:`mpdp.protocols.inner_product_ckks` (approximate arithmetic, real-valued shares).

Security
--------
Semi-honest parties. ``shares``: each party sees only a uniformly masked matrix from the other; the dealer sees
nothing of the inputs and must not collude with either holder. ``paillier``: ``right`` sees only ciphertexts
under ``left``'s key (DCR; with ``randomizer="fixed-base"`` also the DJN short-exponent assumption); ``left``
sees ``X^T Y + R`` with ``R`` uniform on ``[0, 2^(bits(bound) + mask_bits))``, statistically hiding with
distance ``2^-mask_bits`` per entry, and the returned ciphertext is rerandomized. With ``reveal_to`` the named
party learns ``X^T Y`` and nothing else; the other learns nothing.

Accuracy
--------
Inputs are rounded to the grid 2^-f of ``fmt``; the products and sums are then exact (in the ring, or over the
integers for Paillier), so per entry ``|result - X^T Y| <= n (2 bound 2^-(f+1) + 2^-(2f+2))``
(:meth:`CrossProductSpec.error_bound`); typical errors are about ``sqrt(n) bound 2^-f``. The spec is refused
(:class:`~mpdp.errors.PrecisionError`) unless ``n bound^2 2^(2f) < 2^(l-2)`` so nothing wraps.

References
----------
W. Du, M. Atallah, "Privacy-preserving cooperative statistical analysis", ACSAC 2001 (commodity server);
D. Beaver, "Efficient multiparty protocols using circuit randomization", CRYPTO 1991; P. Paillier, EUROCRYPT
1999; paper 000 (``000_f849ec3839ecc68a.txt``): the cross-party coefficients sum_i v_i^k v_i^l.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.crypto.ring import Ring, RingArray, Z2k
from mpdp.errors import (
    DomainError,
    KeyMismatchError,
    MalformedMessageError,
    ParameterError,
    PrecisionError,
    ShapeMismatchError,
    explain,
)
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.party import ProtocolRun, run_protocol

__all__ = [
    "CkksBackend",
    "CrossProduct",
    "CrossProductSpec",
    "PaillierBackend",
    "SharesBackend",
    "cross_product",
    "cross_product_share",
    "simulate_cross_product",
]


@dataclass(frozen=True)
class SharesBackend:
    """Secret sharing with a dealer's matrix triple. ``dealer`` is the party that deals (no inputs, no output)."""

    dealer: str = "dealer"
    name: str = "shares"


@dataclass(frozen=True)
class PaillierBackend:
    """Paillier with row packing, key owned by ``left``.

    Parameters
    ----------
    key_bits:
        Modulus size of a key generated in the protocol (2048 default; pass a key to ``cross_product`` to reuse).
    mask_bits:
        Statistical security of the masks (40: distance 2^-40 per entry).
    randomizer:
        ``"crt"`` (the key owner's CRT fast path, DCR only) or ``"fixed-base"`` (DJN short exponent, faster,
        an extra assumption; opt-in). Ignored when the key owner passes a precomputed pool with its keys
        (``keys=(pk, sk, pool)``): the fastest DCR-only option, online cost one multiplication per ciphertext.
    packing:
        Pack each row of X into one plaintext (default). Without, one ciphertext per entry.
    insecure_for_tests:
        Allow keys below 2048 bits (tests only; warns).
    """

    key_bits: int = 2048
    mask_bits: int = 40
    randomizer: Literal["crt", "fixed-base"] = "crt"
    packing: bool = True
    insecure_for_tests: bool = False
    name: str = "paillier"

    def __post_init__(self) -> None:
        if self.randomizer not in ("crt", "fixed-base"):
            raise ParameterError(explain("randomizer", self.randomizer, "'crt' or 'fixed-base'", "pick one"))
        if not isinstance(self.mask_bits, int) or not 1 <= self.mask_bits <= 256:
            raise ParameterError(explain("mask_bits", self.mask_bits, "an int in [1, 256]", "use 40"))


@dataclass(frozen=True)
class CkksBackend:
    """CKKS (:mod:`mpdp.crypto.ckks`), key owned by ``left``; see :mod:`mpdp.protocols.inner_product_ckks`."""

    mask_bits: int = 23
    name: str = "ckks"

    def __post_init__(self) -> None:
        if not isinstance(self.mask_bits, int) or not 1 <= self.mask_bits <= 23:
            raise ParameterError(explain("mask_bits", self.mask_bits, "an int in [1, 23] (CKKS plaintext range)",
                                         "use the default 23"))


Backend = SharesBackend | PaillierBackend | CkksBackend


@dataclass(frozen=True)
class CrossProductSpec:
    """Public parameters of one ``X^T Y`` computation.

    Parameters
    ----------
    left, right:
        The holders of X (n x left_cols) and Y (n x right_cols).
    rows, left_cols, right_cols:
        n, a and b (public).
    backend:
        :class:`SharesBackend`, :class:`PaillierBackend` or :class:`CkksBackend`.
    bound:
        Public bound on |entries| of X and Y; holders refuse larger entries.
    reveal_to:
        ``left`` or ``right`` to reveal the product to that party; None for additive shares.
    fmt:
        Fixed-point format (ring and fractional bits f) of inputs and shares.
    """

    left: str
    right: str
    rows: int
    left_cols: int
    right_cols: int
    backend: Backend = SharesBackend()
    bound: float = 1.0
    reveal_to: str | None = None
    fmt: FixedPointFormat = FAST

    def __post_init__(self) -> None:
        if self.left == self.right:
            raise ParameterError(explain("right", self.right, "a party other than left", "name two holders"))
        for name in ("rows", "left_cols", "right_cols"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(explain(name, value, "an int >= 1", "pass the matrix dimensions"))
        if not isinstance(self.bound, (int, float)) or not np.isfinite(self.bound) or self.bound <= 0:
            raise ParameterError(explain("bound", self.bound, "a finite number > 0", "pass e.g. bound=1.0"))
        if self.reveal_to not in (None, self.left, self.right):
            raise ParameterError(explain("reveal_to", self.reveal_to, f"None, {self.left!r} or {self.right!r}",
                                         "reveal to one of the two holders, or keep shares"))
        if isinstance(self.backend, SharesBackend) and self.backend.dealer in (self.left, self.right):
            raise ParameterError(explain("dealer", self.backend.dealer, "a third party", "name a separate dealer"))
        if isinstance(self.backend, CkksBackend) and self.reveal_to != self.left:
            from mpdp.protocols.inner_product_ckks import check_slot_period

            check_slot_period(self)
        if not self.fmt.raw_bound_ok(self.result_bound, 2 * self.fmt.frac_bits):
            raise PrecisionError(
                explain("X^T Y capacity", f"{self.rows} rows x bound^2 = {self.result_bound:g} at scale 2^(2f)",
                        f"below 2^{self.fmt.raw_capacity_bits} in {self.fmt}",
                        "use fewer fractional bits, a smaller bound, or FixedPointFormat(128, ...)")
            )

    @property
    def result_bound(self) -> float:
        """Public bound on |entries of X^T Y|: rows * bound^2."""
        return self.rows * float(self.bound) ** 2

    @property
    def scale_bits(self) -> int:
        """Shares are at scale 2^(2f)."""
        return 2 * self.fmt.frac_bits

    @property
    def error_bound(self) -> float:
        """Worst-case |result - X^T Y| per entry: rounding the inputs to the grid 2^-f (plus one ulp), or the
        documented CKKS bound (:func:`mpdp.protocols.inner_product_ckks.ckks_error_bound`)."""
        if isinstance(self.backend, CkksBackend):
            from mpdp.protocols.inner_product_ckks import ckks_error_bound

            return ckks_error_bound(self.rows, float(self.bound),
                                    0 if self.reveal_to == self.left else self.backend.mask_bits)
        f = self.fmt.frac_bits
        return self.rows * (2 * self.bound * 2.0 ** -(f + 1) + 2.0 ** -(2 * f + 2)) + 2.0 ** -(2 * f)


@dataclass(frozen=True)
class CrossProduct:
    """One holder's output: the revealed product (at ``reveal_to``) or its additive share.

    ``share`` holds ring elements of ``spec.fmt.ring`` at scale 2^``scale_bits``; the two holders' shares add up
    to ``X^T Y``. :meth:`reveal_with` combines them (for tests); ``session.from_shares(share, bound=...,
    scale=scale_bits)`` feeds them to the MPC engine.
    """

    value: npt.NDArray[np.float64] | None
    share: Any
    scale_bits: int
    fmt: FixedPointFormat
    bound: float
    real: bool = False  # share is a float64 array of real-valued additive shares (CKKS, float conversion)

    def reveal_with(self, other: CrossProduct) -> npt.NDArray[np.float64]:
        if self.share is None or other.share is None:
            raise ParameterError(explain("shares", None, "two holders' shares", "use reveal_to=None"))
        if self.real:
            total: npt.NDArray[np.float64] = self.share + other.share
            return total
        return self.fmt.decode(self.fmt.ring.add(self.share, other.share), scale_bits=self.scale_bits)


# -- helpers ---------------------------------------------------------------------------------------------------
def _as_matrix(data: Any, rows: int, cols: int, bound: float, who: str) -> npt.NDArray[np.float64]:
    m = np.asarray(data, dtype=np.float64)
    if m.ndim == 1 and cols == 1:
        m = m[:, None]
    if m.shape != (rows, cols):
        raise ShapeMismatchError(explain(f"data of {who}", m.shape, f"({rows}, {cols})",
                                         "both holders must hold the same records, in the same order"))
    if not np.all(np.isfinite(m)) or (m.size and float(np.max(np.abs(m))) > bound):
        raise DomainError(explain(f"data of {who}", "entries beyond the bound or not finite", f"|x| <= {bound:g}",
                                  "clip or rescale the data to the declared bound"))
    return m


def _stream(key: bytes, seeded: bool, label: str) -> RandomSource:
    # A 32-byte key shared by the dealer and one holder keys a ChaCha20 stream both expand identically.
    derived = hashlib.sha256(b"mpdp.inner-product.dealer:" + key).digest()
    return RandomSource(derived, _seeded=seeded, _description=f"dealer stream of {label}")


def _check_ring(value: Any, spec: CrossProductSpec, shape: tuple[int, ...], what: str) -> RingArray:
    ring = spec.fmt.ring
    out = ring.check(value, what, received=True)
    if ring.shape(out) != shape:
        raise MalformedMessageError(explain(what, ring.shape(out), str(shape), "the peer is out of step"))
    return out


def _matmul_t(ring: Ring, a: RingArray, b: RingArray) -> RingArray:
    """``a^T b`` in the ring. On Z_2^k (k <= 64) uint64 einsum is exact modulo 2^64 and, for the tall-thin
    matrices of cross products, several times faster than the limb-split float matmul; Z_2^128 uses the ring's."""
    if isinstance(ring, Z2k):
        with np.errstate(over="ignore"):
            product = np.einsum("ia,ib->ab", a, b)
        return ring.add(product, ring.zeros(product.shape))  # reduces modulo 2^k
    return ring.matmul(ring.apply(a, np.transpose), b)


def _finish(comm: Comm, spec: CrossProductSpec, share: RingArray) -> CrossProduct:
    """Turn this holder's share into its output (exchanging it when the product is revealed)."""
    fmt, ring = spec.fmt, spec.fmt.ring
    if spec.reveal_to is None:
        return CrossProduct(None, share, spec.scale_bits, fmt, spec.result_bound)
    other = spec.right if comm.name == spec.left else spec.left
    if comm.name != spec.reveal_to:
        comm.send(spec.reveal_to, share, label="ip.reveal")
        return CrossProduct(None, None, spec.scale_bits, fmt, spec.result_bound)
    theirs = _check_ring(comm.recv(other, label="ip.reveal"), spec, (spec.left_cols, spec.right_cols),
                         f"share from {other}")
    value = fmt.decode(ring.add(share, theirs), scale_bits=spec.scale_bits)
    return CrossProduct(value, None, spec.scale_bits, fmt, spec.result_bound)


# -- shares backend ----------------------------------------------------------------------------------------------
def _shares_dealer(comm: Comm, spec: CrossProductSpec) -> None:
    ring = spec.fmt.ring
    key_l, key_r = comm.rng.bytes(32), comm.rng.bytes(32)
    comm.send(spec.left, key_l, label="ip.seed")
    sl, sr = _stream(key_l, comm.rng.is_seeded, spec.left), _stream(key_r, comm.rng.is_seeded, spec.right)
    a = ring.random(sl, (spec.rows, spec.left_cols))
    z = ring.random(sl, (spec.left_cols, spec.right_cols))
    b = ring.random(sr, (spec.rows, spec.right_cols))
    w = ring.sub(_matmul_t(ring, a, b), z)
    comm.send(spec.right, {"key": key_r, "w": w}, label="ip.seed")


def _shares_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64]) -> CrossProduct:
    fmt, ring = spec.fmt, spec.fmt.ring
    dealer = spec.backend.dealer  # type: ignore[union-attr]
    encoded = fmt.encode(m, name=f"data of {comm.name}")
    if comm.name == spec.left:
        key = comm.recv(dealer, label="ip.seed")
        if not isinstance(key, bytes) or len(key) != 32:
            raise MalformedMessageError(explain("dealer seed", type(key).__name__, "32 bytes", "check the dealer"))
        stream = _stream(key, comm.rng.is_seeded, spec.left)
        a = ring.random(stream, (spec.rows, spec.left_cols))
        z = ring.random(stream, (spec.left_cols, spec.right_cols))
        comm.send(spec.right, ring.sub(encoded, a), label="ip.masked")
        f = _check_ring(comm.recv(spec.right, label="ip.masked"), spec, (spec.rows, spec.right_cols),
                        f"masked matrix from {spec.right}")
        share = ring.add(_matmul_t(ring, a, f), z)        # A^T (Y - B) + Z
    else:
        msg = comm.recv(dealer, label="ip.seed")
        if not isinstance(msg, dict) or set(msg) != {"key", "w"} or not isinstance(msg["key"], bytes):
            raise MalformedMessageError(explain("dealer message", type(msg).__name__, "{key, w}", "check the dealer"))
        b = ring.random(_stream(msg["key"], comm.rng.is_seeded, spec.right), (spec.rows, spec.right_cols))
        w = _check_ring(msg["w"], spec, (spec.left_cols, spec.right_cols), "dealer's product share")
        comm.send(spec.left, ring.sub(encoded, b), label="ip.masked")
        e = _check_ring(comm.recv(spec.left, label="ip.masked"), spec, (spec.rows, spec.left_cols),
                        f"masked matrix from {spec.left}")
        share = ring.add(_matmul_t(ring, e, encoded), w)  # (X - A)^T Y + A^T B - Z
    return _finish(comm, spec, share)


# -- paillier backend --------------------------------------------------------------------------------------------
def _paillier_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any,
                     real: bool = False) -> CrossProduct:
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

    backend: PaillierBackend = spec.backend  # type: ignore[assignment]
    f = spec.fmt.frac_bits
    codec = FixedPoint(frac_bits=f, max_abs=float(spec.bound))
    result_int_bound = spec.rows * codec.bound * codec.bound
    mask = spec.reveal_to != spec.left
    mask_bits = result_int_bound.bit_length() + backend.mask_bits
    ring = spec.fmt.ring
    if comm.name == spec.left:
        pool = None
        if keys is None:
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
        enc = encrypt(pk, m, codec, packing=packing, randomizer=randomizer)
        comm.send(spec.right, {"key": pk.to_wire(), "x": enc}, label="ip.paillier")
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
        product = enc.left_matmul(m.T, codec)  # Enc(Y^T X): one multi-exponentiation per output ciphertext
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
    return _finish(comm, spec, share)


# -- entry points ------------------------------------------------------------------------------------------------
def cross_product(comm: Comm, data: Any, spec: CrossProductSpec, *, keys: Any = None) -> CrossProduct | None:
    """This party's side of ``X^T Y``: ``left`` passes X, ``right`` passes Y, the dealer passes None.

    ``keys`` (left): a Paillier ``(public_key, private_key)`` pair, or ``(public_key, private_key, pool)`` with
    randomizers precomputed offline (:class:`~mpdp.crypto.paillier.RandomizerPool`, each used once; the online
    encryption is then one multiplication per ciphertext), or CKKS keys
    (:func:`mpdp.protocols.inner_product_ckks.new_context`), to reuse instead of generating them per run.
    ``data`` may be 1-D (n,) for a vector. Returns this holder's :class:`CrossProduct` (None at the dealer).
    """
    backend = spec.backend
    if isinstance(backend, SharesBackend) and comm.name == backend.dealer:
        if data is not None:
            raise ParameterError(explain("data at the dealer", "an array", "None", "the dealer holds no data"))
        _shares_dealer(comm, spec)
        return None
    if comm.name not in (spec.left, spec.right):
        raise ParameterError(explain("party", comm.name, f"{spec.left!r}, {spec.right!r} or the dealer",
                                     "run cross_product on the holders (and the dealer)"))
    cols = spec.left_cols if comm.name == spec.left else spec.right_cols
    m = _as_matrix(data, spec.rows, cols, spec.bound, comm.name)
    if isinstance(backend, SharesBackend):
        return _shares_holder(comm, spec, m)
    if isinstance(backend, PaillierBackend):
        return _paillier_holder(comm, spec, m, keys)
    return _ckks_holder(comm, spec, m, keys)


def _ckks_holder(comm: Comm, spec: CrossProductSpec, m: npt.NDArray[np.float64], keys: Any) -> CrossProduct:
    from mpdp.protocols.inner_product_ckks import ckks_holder

    return ckks_holder(comm, spec, m, keys)


def cross_product_share(comm: Comm, peer: str, mine: Any, *, left: bool, backend: str = "shares",
                        **options: Any) -> npt.NDArray[np.float64]:
    """Two-party convenience form: this party's *real-valued* additive share of ``A^T B``.

    The party with ``left=True`` holds ``A`` (n x p), ``peer`` holds ``B`` (n x m); both call this and get a
    p x m float array, and the two arrays add up to ``A^T B`` (within the backend's error bound). The holders
    first exchange their matrix shapes (public) and refuse different record counts.

    Parameters
    ----------
    backend:
        ``"paillier"``; ``"ckks"``; or ``"shares"``: with ``dealer=NAME`` in the options, the dealer's matrix
        triple (that party must run ``cross_product(comm, None, spec)``); without a dealer, two parties cannot
        make Beaver triples alone, so the triple's cross terms come from Paillier (HE-generated correlations),
        which is the ``paillier`` computation.
    options:
        ``bound`` (public bound on |entries|, default 1.0), ``share_bound`` (largest |real share|, default 2^24),
        ``mask_bits`` (statistical hiding of the real shares; default: as many bits as fit between the
        product's bound ``B = n bound^2`` and ``share_bound``, at most 40), ``key_bits``, ``insecure_for_tests``,
        ``dealer``, ``keys`` (left: a Paillier key pair to reuse).

    Security
    --------
    As :func:`cross_product` for the backend, except that real-valued shares hide each entry only with
    statistical distance ``2^-mask_bits`` (Paillier, dealer) or as stated in
    :mod:`mpdp.protocols.inner_product_ckks` (CKKS). Small shares mean weak masks: with the defaults and
    ``B = 300`` that is 2^-15 per entry. Prefer :func:`cross_product`'s ring shares (2^-40) where the consumer
    can work in the ring.
    """
    m = np.asarray(mine, dtype=np.float64)
    if m.ndim == 1:
        m = m[:, None]
    if m.ndim != 2:
        raise ShapeMismatchError(explain(f"data of {comm.name}", m.shape, "an n x k matrix", "pass a 2-D array"))
    theirs = comm.exchange(peer, [int(m.shape[0]), int(m.shape[1])], label="ip.shape")
    if not isinstance(theirs, list) or len(theirs) != 2 or not all(isinstance(v, int) for v in theirs):
        raise MalformedMessageError(explain(f"shape from {peer}", theirs, "[rows, cols]", "out of step"))
    if theirs[0] != m.shape[0]:
        raise ShapeMismatchError(explain(f"record count of {peer}", theirs[0], f"{m.shape[0]} (as {comm.name})",
                                         "both holders must hold the same records, in the same order"))
    names = (comm.name, peer) if left else (peer, comm.name)
    cols = (m.shape[1], theirs[1]) if left else (theirs[1], m.shape[1])
    bound = float(options.get("bound", 1.0))
    # Real shares must stay below share_bound (callers that add grid noise to a share need them small), so
    # the statistical mask gets the bits left between the product's bound and share_bound, at most 40.
    result_bound = int(m.shape[0]) * bound * bound
    fitting = int(np.floor(np.log2(float(options.get("share_bound", 2.0**24)) / (2 * result_bound))))
    mask_bits = int(options.get("mask_bits", max(1, min(40, fitting))))
    chosen: Backend
    if backend == "ckks":
        share_bits = int(np.floor(np.log2(float(options.get("share_bound", 2.0**24))))) - 1
        chosen = CkksBackend(mask_bits=max(1, min(23, share_bits)))
    elif backend == "shares" and "dealer" in options:
        chosen = SharesBackend(dealer=str(options["dealer"]))
    elif backend in ("shares", "paillier"):
        chosen = PaillierBackend(key_bits=int(options.get("key_bits", 2048)),
                                 mask_bits=mask_bits,
                                 insecure_for_tests=bool(options.get("insecure_for_tests", False)))
    else:
        raise ParameterError(explain("backend", backend, "'shares', 'paillier' or 'ckks'", "pick a backend"))
    spec = CrossProductSpec(names[0], names[1], int(m.shape[0]), int(cols[0]), int(cols[1]), chosen, bound=bound)
    data = _as_matrix(m, spec.rows, m.shape[1], bound, comm.name)
    if isinstance(chosen, PaillierBackend):
        result = _paillier_holder(comm, spec, data, options.get("keys") if left else None, real=True)
    else:
        out = cross_product(comm, data, spec)
        if out is None:  # pragma: no cover - holders always get a result
            raise ParameterError("no share")
        result = out
    if result.real:
        real: npt.NDArray[np.float64] = np.asarray(result.share, dtype=np.float64)
        return real
    # Ring shares (dealer triple): move to real shares with a bounded integer mask of mask_bits bits.
    return _ring_to_real(comm, peer, spec, result.share, left=left, mask_bits=mask_bits)


def _ring_to_real(comm: Comm, peer: str, spec: CrossProductSpec, share: RingArray, *, left: bool,
                  mask_bits: int) -> npt.NDArray[np.float64]:
    """Ring shares of V (|V| 2^(2f) < 2^(l-2)) -> real shares: the right holder masks its share with an integer
    R < 2^(bits(bound) + mask_bits) and sends it; the left holder opens V + R (exact: no wrap), the right keeps -R."""
    fmt, ring = spec.fmt, spec.fmt.ring
    bound_bits = int(np.ceil(np.log2(spec.result_bound + 1))) + spec.scale_bits
    mask_bits = min(mask_bits, fmt.raw_capacity_bits - bound_bits)  # the ring must hold V + R exactly
    bits = bound_bits + mask_bits
    if mask_bits < 1:
        raise PrecisionError(explain("mask_bits", mask_bits, f"<= {fmt.raw_capacity_bits - bound_bits} in {fmt}",
                                     "use fewer mask bits or FixedPointFormat(128, ...)"))
    shape = (spec.left_cols, spec.right_cols)
    if not left:
        r = comm.rng.randbelow_many(1 << bits, int(np.prod(shape)))
        mask = np.empty(len(r), dtype=object)
        mask[:] = r
        comm.send(peer, ring.add(share, ring.from_int(mask.reshape(shape))), label="ip.real")
        real_share: npt.NDArray[np.float64] = -mask.reshape(shape).astype(np.float64) * 2.0 ** -spec.scale_bits
        return real_share
    theirs = _check_ring(comm.recv(peer, label="ip.real"), spec, shape, f"masked share from {peer}")
    return fmt.decode(ring.add(share, theirs), scale_bits=spec.scale_bits)


def simulate_cross_product(X: Any, Y: Any, spec: CrossProductSpec, *, rng: RandomSource | None = None,
                           keys: Any = None, timeout: float = 120.0) -> ProtocolRun[Any]:
    """Run ``cross_product`` with every party in a thread of this process (tests, simulation, benchmarks).

    ``keys``: the left holder's Paillier key pair or CKKS secret context to reuse; ``timeout``: seconds a party
    waits for a message (a 45,222-row Paillier encryption takes minutes).
    """
    roles: dict[str, Any] = {
        spec.left: lambda c: cross_product(c, X, spec, keys=keys),
        spec.right: lambda c: cross_product(c, Y, spec),
    }
    if isinstance(spec.backend, SharesBackend):
        roles[spec.backend.dealer] = lambda c: cross_product(c, None, spec)
    return run_protocol(roles, rng=rng, timeout=timeout)
