"""The public side of an ``X^T Y`` computation: the backends' parameters, the spec and the holders' result.

Everything here is a function of public values, so every party builds the same :class:`CrossProductSpec` and
refuses the same bad ones before any message is sent. Each backend class carries its own parameters, the check it
adds to a spec (:meth:`SharesBackend.check`, :meth:`CkksBackend.check`, ...) and its per-entry error bound
(``error_bound``); :class:`CrossProductSpec` calls them at construction and in
:attr:`CrossProductSpec.error_bound`. The protocols themselves are in the backend modules
(:mod:`~mpdp.protocols.inner_product.shares`, :mod:`~mpdp.protocols.inner_product.paillier`,
:mod:`~mpdp.protocols.inner_product.ckks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.errors import ParameterError, PrecisionError, explain
from mpdp.numeric import positive_finite

__all__ = ["Backend", "CkksBackend", "CrossProduct", "CrossProductSpec", "PaillierBackend", "SharesBackend"]


def _rounding_error_bound(spec: CrossProductSpec) -> float:
    """The exact backends' bound: the inputs rounded to the grid 2^-f, then exact products and sums, plus one
    ulp of the 2^(2f) scale: ``n (2 bound 2^-(f+1) + 2^-(2f+2)) + 2^-(2f)`` per entry."""
    f = spec.fmt.frac_bits
    return spec.rows * (2 * spec.bound * 2.0 ** -(f + 1) + 2.0 ** -(2 * f + 2)) + 2.0 ** -(2 * f)


@dataclass(frozen=True)
class SharesBackend:
    """Secret sharing with a dealer's matrix triple. ``dealer`` is the party that deals (no inputs, no output)."""

    dealer: str = "dealer"
    name: str = "shares"

    def check(self, spec: CrossProductSpec) -> None:
        """The dealer must be a third party: a holder that dealt would know the other's masks."""
        if self.dealer in (spec.left, spec.right):
            raise ParameterError(explain("dealer", self.dealer, "a third party", "name a separate dealer"))

    def error_bound(self, spec: CrossProductSpec) -> float:
        """Exact ring arithmetic on the rounded inputs (:meth:`CrossProductSpec.error_bound`)."""
        return _rounding_error_bound(spec)


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
        if isinstance(self.key_bits, bool) or not isinstance(self.key_bits, int) or not 512 <= self.key_bits <= 16384:
            raise ParameterError(explain("key_bits", self.key_bits, "an int in [512, 16384] (2048 or more unless "
                                         "insecure_for_tests)", "use 2048 or 3072"))
        if not isinstance(self.randomizer, str) or self.randomizer not in ("crt", "fixed-base"):
            raise ParameterError(explain("randomizer", self.randomizer, "'crt' or 'fixed-base'", "pick one"))
        if not isinstance(self.mask_bits, int) or not 1 <= self.mask_bits <= 256:
            raise ParameterError(explain("mask_bits", self.mask_bits, "an int in [1, 256]", "use 40"))

    def check(self, spec: CrossProductSpec) -> None:
        """Nothing beyond the spec's own checks: packing sizes its slots from the key at run time."""

    def error_bound(self, spec: CrossProductSpec) -> float:
        """Exact integer arithmetic on the rounded inputs (:meth:`CrossProductSpec.error_bound`)."""
        return _rounding_error_bound(spec)


@dataclass(frozen=True)
class CkksBackend:
    """CKKS (:mod:`mpdp.crypto.ckks`), key owned by ``left``; see :mod:`mpdp.protocols.inner_product.ckks`.

    ``mask_bits`` (at most 23) is ``k``: a shared entry is masked uniformly on ``[-2^k, 2^k]``, which hides it
    within ``B / 2^k`` for ``B = rows bound^2`` (far weaker than the exact backends' 2^-40).
    """

    mask_bits: int = 23
    name: str = "ckks"

    def __post_init__(self) -> None:
        if not isinstance(self.mask_bits, int) or not 1 <= self.mask_bits <= 23:
            raise ParameterError(explain("mask_bits", self.mask_bits, "an int in [1, 23] (CKKS plaintext range)",
                                         "use the default 23"))

    def check(self, spec: CrossProductSpec) -> None:
        """Shared products must keep their slots and masked entries within the slot period
        (:func:`~mpdp.protocols.inner_product.ckks_parameters.check_slot_period`); a product revealed to the key
        owner has no masks."""
        if spec.reveal_to != spec.left:
            from mpdp.protocols.inner_product.ckks_parameters import check_slot_period

            check_slot_period(spec.rows, float(spec.bound), self.mask_bits)

    def error_bound(self, spec: CrossProductSpec) -> float:
        """The documented CKKS bound (:func:`~mpdp.protocols.inner_product.ckks_parameters.ckks_error_bound`)."""
        from mpdp.protocols.inner_product.ckks_parameters import ckks_error_bound

        return ckks_error_bound(spec.rows, float(spec.bound), 0 if spec.reveal_to == spec.left else self.mask_bits)


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
        for name in ("left", "right"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ParameterError(explain(name, getattr(self, name), "a party name", "name the two holders"))
        if self.left == self.right:
            raise ParameterError(explain("right", self.right, "a party other than left", "name two holders"))
        for name in ("rows", "left_cols", "right_cols"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(explain(name, value, "an int >= 1", "pass the matrix dimensions"))
        object.__setattr__(self, "bound", positive_finite(self.bound, "bound"))
        if not (self.reveal_to is None or (isinstance(self.reveal_to, str) and self.reveal_to in (self.left,
                                                                                                 self.right))):
            raise ParameterError(explain("reveal_to", self.reveal_to, f"None, {self.left!r} or {self.right!r}",
                                         "reveal to one of the two holders, or keep shares"))
        if not isinstance(self.backend, SharesBackend | PaillierBackend | CkksBackend):
            raise ParameterError(explain("backend", self.backend, "SharesBackend(), PaillierBackend() or "
                                         "CkksBackend()", "pass one of the three backends"))
        if not isinstance(self.fmt, FixedPointFormat):
            raise ParameterError(explain("fmt", self.fmt, "a FixedPointFormat", "pass e.g. FAST"))
        if self.rows > 1 << 40:
            raise ParameterError(explain("rows", self.rows, "at most 2^40", "split the product"))
        self.backend.check(self)
        if not self.fmt.raw_bound_ok(self.result_bound, 2 * self.fmt.frac_bits):
            raise PrecisionError(
                explain("X^T Y capacity", f"{self.rows} rows x bound^2 = {self.result_bound:g} at scale 2^(2f)",
                        f"below 2^{self.fmt.raw_capacity_bits} in {self.fmt}",
                        "use fewer fractional bits, a smaller bound, or FixedPointFormat(128, ...)")
            )

    @property
    def result_bound(self) -> float:
        """Public bound on |entries of X^T Y|: rows * bound^2."""
        return self.rows * float(self.bound) * float(self.bound)  # inf (refused) rather than OverflowError

    @property
    def scale_bits(self) -> int:
        """Shares are at scale 2^(2f)."""
        return 2 * self.fmt.frac_bits

    @property
    def error_bound(self) -> float:
        """Worst-case |result - X^T Y| per entry, the backend's: rounding the inputs to the grid 2^-f (plus one
        ulp) for ``shares`` and ``paillier``, the documented CKKS bound for ``ckks``."""
        return self.backend.error_bound(self)


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
