"""exp, sigmoid, reciprocal, inverse square root, square root and division on masked wires, in 2 to 4 rounds.

Each function is a program fragment (:mod:`~mpdp.protocols.mpc.masked.program`) and a wrapper for
:class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` inputs, which builds the fragment's program once per shape,
format and bound (cached), fetches its material and runs it.

exp and sigmoid (2 rounds standalone, 1 in a chain)
    Open ``x`` masked modulo ``2^n`` (round 1); one table (:mod:`mpdp.crypto.masked.tables`) gives ``f(x)`` at a
    high scale, additively shared; its truncation is round 2. exp's table holds one coefficient per entry in the
    exponential basis (``exp(x_c + t) = exp(x_c) exp(t)`` with ``t`` public); sigmoid's a degree-10 polynomial per
    entry of width 2.
reciprocal, inv_sqrt, sqrt (3 rounds standalone, 2 in a chain)
    Open ``x`` (round 1); one comparison key per element with the payload ``(1, lambda_x)`` gives the bits
    ``[x >= 4^j]`` and, from them, ``z = x 4^-k`` in ``[1/4, 1)`` and the power of two ``sigma`` the result needs,
    locally; open ``z`` (truncated) and ``sigma`` (round 2); a table gives ``f(z)`` (degree 12 per entry of width
    1/8), opened truncated (round 3); ``sigma f(z)`` is a product of two masked wires, local, and lands exactly at
    the format's scale.
div (4 rounds standalone)
    ``a sigma f(b's z)``: the reciprocal's three rounds and one multiply-and-truncate of three masked wires.

Domains: exp and sigmoid on ``[low, high]`` (:class:`~mpdp.crypto.approximations.ExpParams`' domain, default
``[-16, 16]``); the others on ``[2^L, 2^H]`` (:class:`~mpdp.crypto.approximations.ReciprocalParams` or
:class:`~mpdp.crypto.approximations.InvSqrtParams`, default ``[2^-10, 2^16]``). A public bound beyond the domain is
refused (:class:`~mpdp.errors.DomainError`) before anything is opened. Inputs below ``2^L`` (which no public bound
excludes) give meaningless results: the caller promises the lower end.

Accuracy
--------
Relative errors at ``HIGH_PRECISION`` (Z_2^128, f = 48), from :func:`error_bound`: exp ``2^-f e^-low`` (the
output's rounding at the domain's low end, 3.2e-8) plus the table's ``1e-10``; sigmoid ``2^-f / sigmoid(low)``
(3.2e-8) plus ``2e-8``; reciprocal, inv_sqrt and sqrt ``1e-8`` (the tables' ``1e-10``, ``f(z)``'s rounding to
``2^-30``..``2^-44`` and the output's); div ``5e-8`` plus ``2^-f / |a/b|``. Tested against float64 with
hypothesis over the domains, their ends and the masks' wrap boundaries.

Security
--------
Semi-honest, two computing parties and a dealer that colludes with neither (it knows every mask). Every opening
is masked by a fresh uniform ``r``; the comparison keys and tables are evaluated at public points.

References
----------
Boyle, Chandran, Gilboa, Gupta, Ishai, Kumar, Rathee, Eurocrypt 2021 (DCF, splines of a masked input); Patra,
Schneider, Suresh, Yalame, "ABY2.0", USENIX Security 2021, and Chaudhari, Rachuri, Suresh, "Trident", NDSS 2020
(masked wires, dealt cross terms); Catrina and Saxena, FC 2010 (normalisation by powers of two).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mpdp.crypto.approximations import ExpParams, InvSqrtParams, ReciprocalParams
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.masked.tables import TableSpec
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.protocols.mpc.masked.program import Compiled, Program, Value, Wire
from mpdp.protocols.mpc.masked.run import execute
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["NORMALISED", "applies", "div", "error_bound", "exp", "exp_of", "exp_table", "inv_sqrt", "normalise",
           "program", "reciprocal", "root_of", "root_table", "sigmoid", "sigmoid_table", "sqrt"]

_Z_FRAC = 60  # z's fractional bits for the tables
_Z_LOW = 0.25 - 2.0**-9  # the tables' domain starts here: z >= 1/4 - 2^-10 after a comparison rounded up


def _compare_frac(k_min: int) -> int:
    """The fractional bits of the normalisation's comparisons: enough that a comparison rounded up by one unit (the
    shifted-off bits' carry) moves ``z`` by at most ``2^-cf 4^-(k_min + 1) <= 2^-10`` below 1/4."""
    return max(8, 8 - 2 * k_min)


@dataclass(frozen=True)
class _Root:
    """How a normalised function's result is assembled: ``f(z) 2^(e k)`` for ``x = z 4^k``."""

    function: str
    exponent: int  # e: -2 (1/x), -1 (1/sqrt x), +1 (sqrt x)
    out_frac: int  # f(z)'s fractional bits after its truncation


NORMALISED = {"recip": _Root("recip", -2, 30), "rsqrt": _Root("rsqrt", -1, 39), "sqrt": _Root("sqrt", 1, 44)}
"""The functions computed from ``z = x 4^-k`` in ``[1/4, 1)``, for ``f = 48`` and ``x <= 2^16``; the other domains
adjust ``out_frac`` (:func:`_root_frac`)."""


def applies(x: SharedFixedPoint) -> bool:
    """Whether the masked functions take ``x``: a session whose provider deals masked plans, a Z_2^128 format."""
    return bool(x.session.provider.deals_masked_plans) and x.ring.bits == 128 and x.scale >= 24


# -- tables ----------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def exp_table(frac: int, low: float, high: float) -> TableSpec:
    """exp's table on ``[low, high]`` at ``frac`` fractional bits: entries of width 4, one coefficient each in the
    exponential basis (``exp(x_c) exp(t)``, ``|t| <= 2``)."""
    lo = math.floor(low * 2**frac)
    span = math.ceil(high * 2**frac) - lo + 1
    entry = frac + 2  # entries of width 4: one coefficient each, times the public exp(t), |t| <= 2
    view = max(entry + 1, math.ceil(math.log2(span + (1 << entry))))
    top = math.log2(math.exp(high + 2.0)) + 2.9  # exp(x_c) exp(t) with |t| <= 2
    coef = min(64, 124 - math.ceil(top) - 36)
    return TableSpec("exp", frac, lo, span, view, entry, 0, "exp", coef, 36)


@functools.lru_cache(maxsize=64)
def sigmoid_table(frac: int, low: float, high: float) -> TableSpec:
    """sigmoid's table on ``[low, high]``: entries of width 2, degree 10 (Chebyshev error about 7e-9 relative)."""
    lo = math.floor(low * 2**frac)
    span = math.ceil(high * 2**frac) - lo + 1
    entry = frac + 1  # entries of width 2, degree 10
    view = max(entry + 1, math.ceil(math.log2(span + (1 << entry))))
    return TableSpec("sigmoid", frac, lo, span, view, entry, 10, "cheb", 62, 58)


@functools.lru_cache(maxsize=16)
def root_table(function: str) -> TableSpec:
    """The table of ``f(z)`` for ``z`` in ``[1/4 - 2^-12, 1)`` at 60 fractional bits: degree 12, entries of width
    1/8 (Chebyshev interpolation error below 1e-11 for 1/z, z^-1/2, z^1/2 there)."""
    lo = math.floor(_Z_LOW * 2**_Z_FRAC)
    return TableSpec(function, _Z_FRAC, lo, (1 << _Z_FRAC) - lo, _Z_FRAC, _Z_FRAC - 3, 12, "cheb", 58, 58)


# -- fragments -----------------------------------------------------------------------------------------------
def _root_frac(root: _Root, frac: int, low_exp: int, high_exp: int) -> tuple[int, int, int]:
    """``(k_min, k_max, out_frac)`` of the buckets ``x in [4^(k-1), 4^k)`` covering ``[2^L, 2^H]``, and ``f(z)``'s
    fractional bits so that ``f(z) 2^(e k)`` lands on the grid ``2^-frac`` with an integer power of two."""
    k_min, k_max = math.floor(low_exp / 2) + 1, math.floor(high_exp / 2) + 1
    shift = frac + root.exponent * (k_max if root.exponent < 0 else k_min)  # the smallest 2^(frac + e k) exponent
    return k_min, k_max, min(root.out_frac, shift)


def normalise(p: Program, w: Wire, low_exp: int, high_exp: int, root: _Root) -> tuple[Value, Value]:
    """``z = x 4^-k`` (at scale ``frac + 2 k_max``) and ``sigma = 2^(frac + e k - out_frac)`` (an integer), additively
    shared, for the bucket ``x in [4^(k-1), 4^k)`` of the masked ``x`` in ``[2^L, 2^H]``: one key per element with
    the payload ``(1, lambda_x)``, compared with ``4^j`` at :func:`_compare_frac` fractional bits (16 for ``L >=
    -11``)."""
    frac = w.scale
    k_min, k_max, out_frac = _root_frac(root, frac, low_exp, high_exp)
    cf = _compare_frac(k_min)
    depth = high_exp + cf + 2
    points = [1 << (2 * j + cf) for j in range(k_min, k_max)]
    cmp = p.compare(w, points, depth=depth, shift=frac - cf, payload=[w])
    scales = [2 ** (2 * (k_max - k)) for k in range(k_min, k_max + 1)]  # z = x scales_k 2^-(2 k_max)
    steps = [scales[i + 1] - scales[i] for i in range(len(points))]
    z = p.select(cmp, steps, const=scales[0], times=w, scale=frac + 2 * k_max, bound=1.0)
    sig = [2 ** (frac + root.exponent * k - out_frac) for k in range(k_min, k_max + 1)]
    sigma = p.select(cmp, [sig[i + 1] - sig[i] for i in range(len(points))], const=sig[0], scale=0,
                     bound=float(max(sig)))
    return z, sigma


def _normalised(p: Program, w: Wire, low_exp: int, high_exp: int, root: _Root) -> tuple[Wire, Wire]:
    """Rounds 2 and 3 of a normalised function of the masked ``x``: ``sigma`` and ``f(z)`` rounded to ``out_frac``
    bits, both masked, with ``sigma f(z) = f(x)`` at scale ``frac`` exactly."""
    out_frac = _root_frac(root, w.scale, low_exp, high_exp)[2]
    z, sigma = normalise(p, w, low_exp, high_exp, root)
    if z.scale < _Z_FRAC:  # a narrow domain: z's scale below the table's, lifted exactly
        z = z.lift(_Z_FRAC - z.scale)
    zw, sw = p.open([z, sigma], shifts=[z.scale - _Z_FRAC, 0])
    spec = root_table(root.function)
    top = {"recip": 1 / _Z_LOW, "rsqrt": _Z_LOW**-0.5, "sqrt": 1.0}[root.function] * (1 + 1e-6)
    fz = p.table(zw, spec, bound=top)
    (fw,) = p.open([fz], shifts=[spec.out_frac - out_frac])
    return sw, fw


def exp_of(p: Program, w: Wire, *, low: float = -16.0, high: float = 16.0, name: str = "exp") -> Wire:
    """``exp(x)`` (or ``sigmoid``, ``name``) of a wire already masked, in one round: the table and its truncated
    opening, at ``w``'s scale. ``w``'s mask must be exact modulo the table's view (a plain opening's, or a
    truncation's whose wrap term lies above it)."""
    spec = (exp_table if name == "exp" else sigmoid_table)(w.scale, low, high)
    top = math.exp(high) if name == "exp" else 1.0
    v = p.table(w, spec, bound=top * (1 + 1e-6))
    (o,) = p.open([v], shifts=[spec.out_frac - w.scale])
    return o


def root_of(p: Program, w: Wire, function: str, *, low_exp: int = -10, high_exp: int = 16) -> Value:
    """``1/x``, ``1/sqrt(x)`` or ``sqrt(x)`` (``function`` ``recip``, ``rsqrt``, ``sqrt``) of a Z_2^128 wire already
    masked by a plain opening, in two rounds, as additive shares at ``w``'s scale."""
    sw, fw = _normalised(p, w, low_exp, high_exp, NORMALISED[function])
    top = 2.0 ** (-low_exp if function == "recip" else -low_exp / 2 if function == "rsqrt" else high_exp / 2)
    return p.product([sw, fw]).with_scale(w.scale, top * (1 + 1e-6) + 2.0**-w.scale)


# -- public entry points -------------------------------------------------------------------------------------
def _check_format(x: SharedFixedPoint) -> FixedPointFormat:
    if not applies(x):
        raise ParameterError(explain("masked function input", f"{x.fmt} via {type(x.session.provider).__name__}",
                                     "a Z_2^128 value of a session whose provider deals masked plans",
                                     "use the circuit functions (mpdp.protocols.mpc.functions)"))
    return x.fmt


def _run(prog: Compiled, x: dict[str, SharedFixedPoint], fmt: FixedPointFormat) -> SharedFixedPoint:
    session = next(iter(x.values())).session
    return execute(session, prog, x, {}, fmt=fmt)["y"]


@functools.lru_cache(maxsize=128)
def _exp_program(name: str, shape: tuple[int, ...], frac: int, bound: float, low: float, high: float) -> Compiled:
    p = Program()
    x = p.input("x", shape, scale=frac, bound=bound)
    spec = (exp_table if name == "exp" else sigmoid_table)(frac, low, high)
    (w,) = p.open([x], out_bits=[spec.view_bits])
    p.output("y", p.unmask(exp_of(p, w, low=low, high=high, name=name)))
    return p.compile()


def exp(x: SharedFixedPoint, params: ExpParams | None = None) -> SharedFixedPoint:
    """``exp(x)`` on ``params``' domain (default ``[-16, 16]``) in 2 rounds (module docstring)."""
    return _tabulated("exp", x, params)


def sigmoid(x: SharedFixedPoint, params: ExpParams | None = None) -> SharedFixedPoint:
    """``1 / (1 + exp(-x))`` on ``params``' domain (default ``[-16, 16]``) in 2 rounds."""
    return _tabulated("sigmoid", x, params)


def _tabulated(name: str, x: SharedFixedPoint, params: ExpParams | None) -> SharedFixedPoint:
    p = params or ExpParams()
    if not isinstance(p, ExpParams):
        raise ParameterError(explain("params", p, "an ExpParams (its low and high)", "pass ExpParams(...)"))
    fmt = _check_format(x)
    x = x.rescale()
    if x.bound > min(-p.low, p.high):
        raise DomainError(explain(f"{name} input bound", x.bound, f"<= {min(-p.low, p.high):g} (the domain "
                                  f"[{p.low:g}, {p.high:g}])", "clip first or declare a tighter bound"))
    prog = _exp_program(name, x.shape, x.scale, x.bound, p.low, p.high)
    return _run(prog, {"x": x}, fmt)


@functools.lru_cache(maxsize=128)
def _root_program(function: str, shape: tuple[int, ...], frac: int, bound: float, low_exp: int,
                  high_exp: int) -> Compiled:
    p = Program()
    x = p.input("x", shape, scale=frac, bound=bound)
    (w,) = p.open([x])
    p.output("y", root_of(p, w, function, low_exp=low_exp, high_exp=high_exp))
    return p.compile()


def _domain(x: SharedFixedPoint, params: ReciprocalParams | InvSqrtParams, name: str) -> SharedFixedPoint:
    x = x.rescale()
    if x.bound > 2.0**params.high_exp:
        raise DomainError(explain(f"{name} input bound", x.bound, f"<= 2^{params.high_exp}",
                                  "clip first or declare a tighter bound"))
    low, high = params.low_exp, params.high_exp
    cf = _compare_frac(math.floor(low / 2) + 1)
    if high + cf + 2 > 64 or cf > x.scale:
        raise ParameterError(explain("domain", (low, high), f"H + {cf} + 2 <= 64 and {cf} <= the input's fractional "
                                     f"bits ({x.scale}), {cf} being the comparisons' bits for L = {low}",
                                     "narrow the domain"))
    return x


def reciprocal(x: SharedFixedPoint, params: ReciprocalParams | None = None) -> SharedFixedPoint:
    """``1/x`` on ``[2^L, 2^H]`` (default ``[2^-10, 2^16]``) in 3 rounds."""
    p = params or ReciprocalParams()
    fmt = _check_format(x)
    x = _domain(x, p, "reciprocal")
    return _run(_root_program("recip", x.shape, x.scale, x.bound, p.low_exp, p.high_exp), {"x": x}, fmt)


def inv_sqrt(x: SharedFixedPoint, params: InvSqrtParams | None = None) -> SharedFixedPoint:
    """``1/sqrt(x)`` on ``[2^L, 2^H]`` in 3 rounds."""
    p = params or InvSqrtParams()
    fmt = _check_format(x)
    x = _domain(x, p, "inv_sqrt")
    return _run(_root_program("rsqrt", x.shape, x.scale, x.bound, p.low_exp, p.high_exp), {"x": x}, fmt)


def sqrt(x: SharedFixedPoint, params: InvSqrtParams | None = None) -> SharedFixedPoint:
    """``sqrt(x)`` on ``[2^L, 2^H]`` in 3 rounds."""
    p = params or InvSqrtParams()
    fmt = _check_format(x)
    x = _domain(x, p, "sqrt")
    return _run(_root_program("sqrt", x.shape, x.scale, x.bound, p.low_exp, p.high_exp), {"x": x}, fmt)


@functools.lru_cache(maxsize=128)
def _div_program(shape: tuple[int, ...], frac: int, a_bound: float, b_bound: float, low_exp: int,
                 high_exp: int, out_frac: int) -> Compiled:
    root = NORMALISED["recip"]
    p = Program()
    a = p.input("a", shape, scale=frac, bound=a_bound)
    b = p.input("b", shape, scale=frac, bound=b_bound)
    aw, bw = p.open([a, b])
    sw, fw = _normalised(p, bw, low_exp, high_exp, root)
    prod = p.product([aw, sw, fw])  # a sigma f(z), raw: (a / b) 2^(2 frac)
    quotient = prod.with_scale(2 * frac, a_bound * 2.0**-low_exp * (1 + 1e-6))
    (o,) = p.open([quotient], shifts=[2 * frac - out_frac])
    p.output("y", p.unmask(o))
    return p.compile()


def div(a: SharedFixedPoint, b: SharedFixedPoint, params: ReciprocalParams | None = None) -> SharedFixedPoint:
    """``a / b`` for ``b`` in ``[2^L, 2^H]`` in 4 rounds; the quotient at the format's scale plus up to 8 bits (as
    many as its bound leaves: small quotients keep their relative precision)."""
    p = params or ReciprocalParams()
    fmt = _check_format(b)
    a._check_peer(b)
    b = _domain(b, p, "div")
    a = a.rescale()
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    a, b = (v if v.shape == shape else v.broadcast_to(shape) for v in (a, b))
    quotient = max(a.bound, 2.0**-a.scale) * 2.0**-p.low_exp
    out_frac = a.scale + max(0, min(8, 124 - a.scale - math.ceil(math.log2(quotient))))
    prog = _div_program(a.shape, a.scale, a.bound, b.bound, p.low_exp, p.high_exp, out_frac)
    return _run(prog, {"a": a, "b": b}, fmt)


def program(name: str, shape: tuple[int, ...], frac: int = 48) -> Compiled:
    """The compiled program of function ``name`` (``exp``, ``sigmoid``, ``recip``, ``rsqrt``, ``sqrt``, ``div``) on the
    default domains for inputs of ``shape`` at ``frac`` fractional bits (its plan, rounds and bits)."""
    if name in ("exp", "sigmoid"):
        return _exp_program(name, shape, frac, 16.0, -16.0, 16.0)
    if name in NORMALISED:
        return _root_program(name, shape, frac, 2.0**16, -10, 16)
    if name == "div":
        return _div_program(shape, frac, 2.0**16, 2.0**16, -10, 16, frac + 8)
    raise ParameterError(explain("name", name, "exp, sigmoid, recip, rsqrt, sqrt or div", "name a function"))


def error_bound(name: str, fmt: FixedPointFormat, low: float = -16.0) -> float:
    """The stated relative error of ``name`` for inputs of ``fmt`` (see Accuracy): the tests hold the functions
    to it."""
    u = fmt.resolution
    if name == "exp":
        return u * math.exp(-low) + 1e-10
    if name == "sigmoid":
        return u * (1 + math.exp(-low)) + 2e-8
    if name in ("recip", "rsqrt", "sqrt"):
        return 1e-8
    if name == "div":
        return 5e-8
    raise ParameterError(explain("name", name, "exp, sigmoid, recip, rsqrt, sqrt or div", "name a function"))
