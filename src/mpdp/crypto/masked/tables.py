"""Any univariate function of a masked value from one opening: the dealer's tables and the parties' public basis.

A value ``x`` (raw ``X = x 2^F``, in ``[lo, lo + span)`` raw) is held as the public ``delta = X - lo + lambda``
modulo ``2^n`` with ``lambda`` known to the dealer. Write ``delta = j 2^s + delta_l`` and
``lambda = lambda_h 2^s + lambda_l``. Whenever ``2^n >= span + 2^s``, the public index ``j`` alone tells the
dealer which interval of width ``2^s`` the input lies in: for entry ``j`` the input is

    X - lo = d 2^s - lambda_l + delta_l,      d = (j - lambda_h) mod 2^(n - s)

(no wrap is ambiguous: an input of entry ``lambda_h`` that wrapped around would lie beyond ``span``). So inside
entry ``j`` the input is the dealer's ``x_j`` (secret) plus the public offset ``delta_l 2^-F``, and any function
of it is a function of a *public* variable with secret parameters. The dealer fits, per element and entry, a
polynomial in ``tau = (delta_l - 2^(s-1)) / 2^(s-1)`` in ``[-1, 1)`` (Chebyshev interpolation of degree ``D`` on the
entry's interval, which has the public width ``w = 2^(s - F)``) and deals additive shares of its coefficients;
the parties pick entry ``j`` and combine the shares with the public basis ``T_i(tau)`` (or
``exp(tau w / 2) T_i(tau)``, the ``exp`` basis, which makes ``exp`` itself one coefficient per entry:
``exp(x_c + t) = exp(x_c) exp(t)``). The result is an additive sharing of ``f(x)`` at scale
``coef_frac + basis_frac``, with no opening beyond the one that made ``delta`` public.

Entries wholly outside the domain hold zeros; an entry straddling an end is fitted on its whole interval, so the
function must be smooth on ``[lo - w, lo + span + w]`` (checked by :meth:`TableSpec.__post_init__` for the
functions here: the reciprocal and roots need ``lo - w > 0``).

Accuracy
--------
Chebyshev interpolation of ``g`` (``f``, or ``f exp(-t)`` for the ``exp`` basis) of degree ``D`` on an interval of
width ``w``, plus roundings: every coefficient to ``2^-coef_frac`` (``|T_i| <= 1``) and every basis value to
``2^-basis_frac``. The interpolation coefficients satisfy ``|c_0| <= G`` and ``|c_i| <= 2 G`` (``G = max |g|`` on
the interval), which bounds the bits of the result (:meth:`TableSpec.max_bits`). The approximation error of each
table in :mod:`mpdp.protocols.mpc.masked.functions` is stated there and tested against float64.

Security
--------
The tables are dealt as additive shares (uniform to each party); the parties see only the public ``delta``, which
is uniform when ``lambda`` is.

References
----------
Boyle, Gilboa, Ishai et al., "Function secret sharing for mixed-mode and fixed-point secure computation",
Eurocrypt 2021 (functions of a masked input, the mask known to the dealer); Trefethen, "Approximation Theory and
Approximation Practice", SIAM 2013, ch. 4 and 8 (Chebyshev interpolation and its coefficients' bounds).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["FUNCTIONS", "TableFunction", "TableSpec"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class TableFunction:
    """A function the dealer tabulates: its values and a bound on ``|f|`` over an interval."""

    name: str
    values: Callable[[FloatArray], FloatArray]
    bound: Callable[[float, float], float]
    positive: bool = False
    """Defined (and smooth) only for ``x > 0``."""


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-np.logaddexp(0.0, -x))
    return out


def _recip(x: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / x
    return out


def _rsqrt(x: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / np.sqrt(x)
    return out


FUNCTIONS: dict[str, TableFunction] = {
    "exp": TableFunction("exp", np.exp, lambda lo, hi: math.exp(hi)),
    "sigmoid": TableFunction("sigmoid", _sigmoid, lambda lo, hi: 1.0),
    "recip": TableFunction("recip", _recip, lambda lo, hi: 1.0 / lo, positive=True),
    "rsqrt": TableFunction("rsqrt", _rsqrt, lambda lo, hi: lo**-0.5, positive=True),
    "sqrt": TableFunction("sqrt", np.sqrt, lambda lo, hi: hi**0.5, positive=True),
}
"""The functions a table may hold, by name (a plan names them; the dealer evaluates them)."""

_BASES = ("cheb", "exp")
_FIELDS = ("function", "in_frac", "lo", "span", "view_bits", "entry_bits", "degree", "basis", "coef_frac",
           "basis_frac")


@dataclass(frozen=True)
class TableSpec:
    """One table: the function, the input's format and range, the entries and the polynomial (module docstring).

    Parameters
    ----------
    function:
        A key of :data:`FUNCTIONS`.
    in_frac:
        ``F``: the input's fractional bits.
    lo, span:
        The domain, raw at scale ``2^F``: inputs ``X`` with ``lo <= X < lo + span``.
    view_bits:
        ``n``: the table looks at ``delta`` modulo ``2^n`` (at most 64; ``2^n >= span + 2^s``).
    entry_bits:
        ``s``: entries of width ``2^s`` raw (``w = 2^(s - F)``); ``2^(n - s)`` entries per element.
    degree:
        ``D``: the polynomial's degree in ``tau``.
    basis:
        ``"cheb"`` (``T_i(tau)``) or ``"exp"`` (``exp(tau w / 2) T_i(tau)``).
    coef_frac, basis_frac:
        Fractional bits of the dealt coefficients and of the public basis values.
    """

    function: str
    in_frac: int
    lo: int
    span: int
    view_bits: int
    entry_bits: int
    degree: int
    basis: str
    coef_frac: int
    basis_frac: int

    def __post_init__(self) -> None:
        ints = (self.in_frac, self.lo, self.span, self.view_bits, self.entry_bits, self.degree, self.coef_frac,
                self.basis_frac)
        if self.function not in FUNCTIONS or self.basis not in _BASES \
                or not all(type(v) is int for v in ints):
            raise ParameterError(explain("table", (self.function, self.basis), f"a function of {sorted(FUNCTIONS)}, "
                                         f"a basis of {_BASES} and int fields", "build it with TableSpec(...)"))
        n, s = self.view_bits, self.entry_bits
        if not (1 <= s < n <= 64 and 0 <= self.in_frac <= 120 and 0 <= self.degree <= 24 and self.span > 0
                and self.span + (1 << s) <= 1 << n and 0 <= self.coef_frac <= 124 and 0 <= self.basis_frac <= 60):
            raise ParameterError(explain("table parameters", ints, "1 <= s < n <= 64, 2^n >= span + 2^s, degree "
                                         "<= 24, coef_frac <= 124, basis_frac <= 60", "pick a valid table"))
        if self.basis == "exp" and self.width / 2 * math.log2(math.e) + self.basis_frac > 62:
            raise ParameterError(explain("basis_frac", self.basis_frac, "room for exp(w / 2) in a signed word",
                                         "lower basis_frac or the entry width"))
        if FUNCTIONS[self.function].positive and self.lo_real - self.width <= 0:
            raise ParameterError(explain("table domain", (self.lo_real, self.hi_real), f"lo - w > 0 for "
                                         f"{self.function} (entries straddling the end are fitted whole)",
                                         "raise lo or narrow the entries"))

    # -- derived ---------------------------------------------------------------------------------------------
    @property
    def entries(self) -> int:
        """``2^(n - s)``: the table's rows per element."""
        return 1 << (self.view_bits - self.entry_bits)

    @property
    def width(self) -> float:
        """``w``: an entry's width in input units."""
        return 2.0 ** (self.entry_bits - self.in_frac)

    @property
    def lo_real(self) -> float:
        return self.lo * 2.0**-self.in_frac

    @property
    def hi_real(self) -> float:
        return (self.lo + self.span) * 2.0**-self.in_frac

    @property
    def out_frac(self) -> int:
        """The fractional bits of the result: ``coef_frac + basis_frac``."""
        return self.coef_frac + self.basis_frac

    def g_bound(self) -> float:
        """``G``: a bound on ``|g|`` over every fitted interval (``[lo - w, lo + span + w]``)."""
        f = FUNCTIONS[self.function]
        if self.function == "exp" and self.basis == "exp":  # g = exp(x_c), centres within w / 2 of the domain
            return math.exp(self.hi_real + self.width / 2)
        lo, hi = self.lo_real - self.width, self.hi_real + self.width
        top = f.bound(lo, hi) if f.positive else max(f.bound(lo, hi), abs(float(f.values(np.array([lo]))[0])))
        return top * (math.exp(self.width / 2) if self.basis == "exp" else 1.0)

    def max_bits(self) -> float:
        """``log2`` of a bound on every partial sum ``sum_i |c_i phi_i|`` in raw units (the result's bit growth,
        from the parameters: ``|c_0| <= G``, ``|c_i| <= 2 G``, ``|phi_i| <= Phi``)."""
        phi = math.exp(self.width / 2) if self.basis == "exp" else 1.0
        coef = self.g_bound() * 2.0**self.coef_frac + 1
        basis = phi * 2.0**self.basis_frac + 1
        return math.log2((2 * self.degree + 1) * coef * basis)

    # -- the dealer's side -----------------------------------------------------------------------------------
    def coefficients(self, lam: npt.NDArray[np.uint64]) -> FloatArray:
        """The real coefficients ``(N, M, D + 1)`` of every entry of ``N`` elements whose masks (modulo ``2^n``) are
        ``lam`` (zeros for entries wholly outside the domain)."""
        s, m = self.entry_bits, self.entries
        lam = np.asarray(lam, dtype=np.uint64).reshape(-1)
        high = (lam >> np.uint64(s)).astype(np.int64)
        low = (lam & np.uint64((1 << s) - 1)).astype(np.float64)
        d = (np.arange(m, dtype=np.int64)[None, :] - high[:, None]) % m
        # raw X - lo at the entry's start: -low for d = 0 (that entry always meets [0, span)), else d 2^s - low >= 1,
        # compared with span exactly in words (d 2^s < 2^n <= 2^64)
        offset = (d.astype(np.uint64) << np.uint64(s)) - (lam & np.uint64((1 << s) - 1))[:, None]
        valid = (d == 0) | (offset < np.uint64(self.span))
        start = d.astype(np.float64) * 2.0**s - low[:, None]  # (the interval's position: float precision suffices)
        x0 = self.lo_real + np.where(valid, start, 0.0) * 2.0**-self.in_frac
        coef = self._fit(x0)
        coef[~valid] = 0.0
        return coef

    def _fit(self, x0: FloatArray) -> FloatArray:
        """Chebyshev interpolation coefficients of ``g`` on ``[x0, x0 + w]`` in ``tau``, ``(..., D + 1)``."""
        nodes, trans = _chebyshev(self.degree)
        half = self.width / 2
        x = x0[..., None] + half + half * nodes
        y = FUNCTIONS[self.function].values(x)
        if self.basis == "exp":
            y = y * np.exp(-half * nodes)
        out: FloatArray = y @ trans
        return out

    # -- the parties' side -----------------------------------------------------------------------------------
    def split(self, view: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """The entry index ``j`` and the low part ``delta_l`` of public views ``delta mod 2^n``."""
        s = np.uint64(self.entry_bits)
        return (view >> s).astype(np.int64), view & np.uint64((1 << self.entry_bits) - 1)

    def basis_ints(self, low: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """``round(phi_i(tau) 2^basis_frac)`` for the public low parts ``delta_l``, ``(..., D + 1)`` int64."""
        half = float(1 << (self.entry_bits - 1))
        tau = (low.astype(np.float64) - half) / half  # relative error below 2^-52 (exact for s <= 53)
        cheb = np.polynomial.chebyshev.chebvander(tau, self.degree)
        if self.basis == "exp":
            cheb = cheb * np.exp(tau * (self.width / 2))[..., None]
        out: npt.NDArray[np.int64] = np.rint(cheb * 2.0**self.basis_frac).astype(np.int64)
        return out

    # -- wire ------------------------------------------------------------------------------------------------
    def to_wire(self) -> list[Any]:
        return [getattr(self, name) for name in _FIELDS]

    @classmethod
    def from_wire(cls, wire: Any) -> TableSpec:
        if type(wire) is not list or len(wire) != len(_FIELDS) or type(wire[0]) is not str \
                or type(wire[7]) is not str or not all(type(v) is int for i, v in enumerate(wire) if i not in (0, 7)):
            raise MalformedMessageError(explain("table spec", wire, f"a list of {len(_FIELDS)} fields",
                                                "run the same mpdp version on every party"))
        try:
            return cls(*wire)
        except ParameterError as exc:
            raise MalformedMessageError(f"invalid table spec {wire!r}: {exc}") from exc


@functools.lru_cache(maxsize=32)
def _chebyshev(degree: int) -> tuple[FloatArray, FloatArray]:
    """The ``D + 1`` Chebyshev points of the first kind on ``[-1, 1]`` and the matrix taking values there to the
    interpolant's coefficients (``coef = values @ matrix``; read-only: shared by the cache)."""
    k = np.arange(degree + 1)
    angles = np.pi * (k + 0.5) / (degree + 1)
    nodes = np.cos(angles)
    trans = (2.0 / (degree + 1)) * np.cos(np.outer(angles, np.arange(degree + 1)))
    trans[:, 0] /= 2
    for a in (nodes, trans):
        a.flags.writeable = False
    return nodes, trans
