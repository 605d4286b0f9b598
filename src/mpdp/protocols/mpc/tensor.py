"""SharedFixedPoint: an array of secret-shared fixed-point numbers, one party's view.

Each computing party holds its own ``SharedFixedPoint`` object with *its* additive shares (in the ring of
its :class:`~mpdp.crypto.fixed_point.FixedPointFormat`); the value is the ring sum of all parties' shares,
read as ``raw / 2^scale``. Operators behave like numpy arrays:

* ``+``, ``-``, unary ``-``, multiplication/addition by public scalars or arrays, ``sum``, indexing,
  ``reshape``, ``T`` are local (no messages);
* ``x * y`` and ``x @ y`` on two shared values run Beaver's protocol with a triple from the session's
  provider (one round) and, if needed, a truncation (one round); ``/`` by a shared value runs
  Newton-Raphson division (:mod:`mpdp.protocols.mpc.functions`);
* ``reveal()`` opens the value to every computing party; ``reveal_to(name)`` to one.

Where the operators live
------------------------
This module implements the local operations and the openings. The interactive operators and methods
(``*``, ``@``, ``/``, ``**``, ``square``, ``truncate``, ``to_format``, comparisons, ``max``, ``exp``, ``sqrt``,
...) dispatch through the value's session, ``x.session.ops`` (:class:`Operations`), to the modules that
implement them (:mod:`~mpdp.protocols.mpc.arithmetic`, :mod:`~mpdp.protocols.mpc.comparison`,
:mod:`~mpdp.protocols.mpc.functions`). Those modules import this one; this one imports none of them:
:class:`~mpdp.protocols.mpc.session.MPCSession` binds them. :class:`Session` states what a value needs of its
session: the :class:`~mpdp.protocols.mpc.channel.Channel` interface, the operations and public values.

Public bounds
-------------
Every shared value carries ``bound``, a *public* upper bound on its magnitude, propagated through each
operation (``|x + y| <= bx + by``, ``|x y| <= bx by``, ...). An operation whose raw integers could leave
the exact range of the protocols (``|raw| < 2^(l-2)``, see :mod:`mpdp.crypto.fixed_point`) raises
:class:`~mpdp.errors.PrecisionError` *before* computing, instead of wrapping around silently. Bounds of
inputs are declared by their owners (:meth:`~mpdp.protocols.mpc.session.MPCSession.input`).
``assume_bound`` tightens a bound the program knows better (a promise, not checked).

Truncation never fails silently: its result is always one of the two grid neighbours of the exact value
for raw integers within ``2^(l-2)`` (no probabilistic wrap-around, unlike the 2-party local truncation of
SecureML or CrypTen, whose failures of size ~2^(l-f) occur with probability ~|x| 2^-l per element), and
the public bounds keep every operand within that range. The probability of a silent wrong result is
therefore 0, unless a caller promises a false bound with ``assume_bound``.

Accuracy
--------
Addition and public integer products are exact. A product of shared values (or with a non-integer public
constant) is truncated back to ``f`` fractional bits with stochastic rounding: the result differs from the
exact product of the *encoded* operands by less than ``2^-f`` (one unit in the last place), and is unbiased.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import KeyMismatchError, ParameterError, PrecisionError, ShapeMismatchError, explain
from mpdp.protocols.mpc.channel import Channel

__all__ = ["Operations", "Session", "SharedFixedPoint", "broadcast_shape", "concatenate", "stack"]

Operand = Any  # SharedFixedPoint, a number or an array-like of numbers


class Operations(Protocol):
    """The interactive operations behind :class:`SharedFixedPoint`'s operators and methods, reached through the
    value's session (``x.session.ops``): products, truncation and conversion
    (:mod:`~mpdp.protocols.mpc.arithmetic`), comparisons (:mod:`~mpdp.protocols.mpc.comparison`) and functions
    (:mod:`~mpdp.protocols.mpc.functions`). Those modules import this one, never the reverse:
    :class:`~mpdp.protocols.mpc.session.MPCSession` binds them."""

    def mul(self, x: SharedFixedPoint, y: SharedFixedPoint, /) -> SharedFixedPoint: ...
    def mul_public(self, x: SharedFixedPoint, c: npt.NDArray[np.float64], /) -> SharedFixedPoint: ...
    def square(self, x: SharedFixedPoint, /) -> SharedFixedPoint: ...
    def mul_split(self, x: SharedFixedPoint, y: SharedFixedPoint, /) -> SharedFixedPoint: ...
    def matmul(self, x: SharedFixedPoint, y: SharedFixedPoint, /) -> SharedFixedPoint: ...
    def matmul_public(self, x: SharedFixedPoint, c: npt.NDArray[np.float64], /, *,
                      left: bool) -> SharedFixedPoint: ...
    def truncate(self, x: SharedFixedPoint, bits: int, /) -> SharedFixedPoint: ...
    def convert(self, x: SharedFixedPoint, fmt: FixedPointFormat, /) -> SharedFixedPoint: ...
    def less(self, x: SharedFixedPoint, y: Operand, /) -> SharedFixedPoint: ...
    def greater(self, x: SharedFixedPoint, y: Operand, /) -> SharedFixedPoint: ...
    def max_along(self, x: SharedFixedPoint, axis: int = -1, /) -> SharedFixedPoint: ...
    def div(self, a: SharedFixedPoint, b: SharedFixedPoint, /) -> SharedFixedPoint: ...
    def reciprocal(self, x: SharedFixedPoint, params: Any = None, /) -> SharedFixedPoint: ...
    def exp(self, x: SharedFixedPoint, params: Any = None, /) -> SharedFixedPoint: ...
    def sigmoid(self, x: SharedFixedPoint, params: Any = None, /) -> SharedFixedPoint: ...
    def sqrt(self, x: SharedFixedPoint, params: Any = None, /) -> SharedFixedPoint: ...
    def inv_sqrt(self, x: SharedFixedPoint, params: Any = None, /) -> SharedFixedPoint: ...


class Session(Channel, Protocol):
    """What a shared value needs of its session: a :class:`~mpdp.protocols.mpc.channel.Channel` that also
    carries the engine's :class:`Operations` and makes public values.
    :class:`~mpdp.protocols.mpc.session.MPCSession` implements it."""

    @property
    def ops(self) -> Operations:
        """The operations behind the operators of this session's values."""
        ...

    def public(self, values: Any, *, fmt: FixedPointFormat | None = None) -> SharedFixedPoint:
        """A public value as a (trivially) shared one."""
        ...


class SharedFixedPoint:
    """This party's shares of an array of fixed-point numbers (see the module docstring)."""

    __array_ufunc__ = None  # numpy defers to our reflected operators: array * shared -> shared.__rmul__
    __slots__ = ("bound", "fmt", "ring", "scale", "session", "share", "sharing_id")
    ring: Ring
    """The ring of the shares, ``fmt.ring`` (an attribute: operations read it often)."""

    def __init__(self, session: Session, share: RingArray, *, fmt: FixedPointFormat, scale: int, bound: float,
                 sharing_id: bytes) -> None:
        self.session = session
        self.share = share
        self.fmt = fmt
        self.ring = fmt.ring
        self.scale = scale = int(scale)
        self.bound = bound = float(bound)
        self.sharing_id = sharing_id
        limit = fmt.bound_limits.get(scale)  # fmt.raw_bound_ok(bound, scale), without a call
        if not (_NEG_INF < bound <= limit if limit is not None else fmt.raw_bound_ok(bound, scale)):
            raise _capacity_error(fmt, scale, bound)

    # -- description --------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.ring.shape(self.share)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d shared value")
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"SharedFixedPoint(shape={self.shape}, bound={self.bound:.6g}, {self.fmt}, "
                f"party={self.session.comm.name!r})")

    def __bool__(self) -> bool:
        raise TypeError("a shared value has no public truth value; reveal() it or use secure comparisons")

    # -- construction helpers -----------------------------------------------------------------------------
    def derive(self, share: RingArray, *, scale: int | None = None, bound: float | None = None,
               fmt: FixedPointFormat | None = None) -> SharedFixedPoint:
        """A new shared value of the same session with a fresh sharing id."""
        # __init__'s work without its call (most shared values are derived): the same fields, the same check,
        # skipped when format, scale and bound are this value's (checked when it was built)
        new = _new(SharedFixedPoint)
        new.session = session = self.session
        new.share = share
        new.sharing_id = session.new_id()
        if scale is None and bound is None and fmt is None:
            new.fmt, new.ring, new.scale, new.bound = self.fmt, self.ring, self.scale, self.bound
            return new
        new.fmt = fmt = self.fmt if fmt is None else fmt
        new.ring = fmt.ring
        new.scale = scale = self.scale if scale is None else int(scale)
        new.bound = bound = self.bound if bound is None else float(bound)
        limit = fmt.bound_limits.get(scale)
        if not (_NEG_INF < bound <= limit if limit is not None else fmt.raw_bound_ok(bound, scale)):
            raise _capacity_error(fmt, scale, bound)
        return new

    def assume_bound(self, bound: float) -> SharedFixedPoint:
        """The same shares with a tighter public bound that the program knows to hold (not checked)."""
        if not bound >= 0:
            raise ParameterError(explain("bound", bound, "a number >= 0", "pass a public bound on |x|"))
        return self.derive(self.share, bound=float(bound))

    def _check_peer(self, other: SharedFixedPoint) -> None:
        if other.session is not self.session:
            raise KeyMismatchError(
                explain("operand", repr(other), f"a value of session {self.session.session_id.hex()}",
                        "combine only values shared in the same MPCSession")
            )
        if other.fmt is not self.fmt and other.fmt != self.fmt:  # identity first: the dataclass __eq__ is a call
            raise ParameterError(
                explain("operand format", str(other.fmt), str(self.fmt), "convert with x.to_format(fmt) first")
            )

    def _public(self, value: Operand) -> npt.NDArray[np.float64]:
        arr = np.asarray(value, dtype=np.float64)
        if not np.logical_and.reduce(np.isfinite(arr), axis=None):  # (the ufunc: no Python-level wrapper)
            raise ParameterError(explain("public operand", "NaN or inf", "finite numbers", "clean the constant"))
        return arr

    def _lift(self, scale: int) -> SharedFixedPoint:
        """The same value at a higher scale (exact: multiply the raw integers by 2^(scale - self.scale))."""
        if scale == self.scale:
            return self
        return self.derive(self.ring.mul_int(self.share, 1 << (scale - self.scale)), scale=scale)

    def _aligned(self, other: SharedFixedPoint) -> tuple[SharedFixedPoint, SharedFixedPoint]:
        self._check_peer(other)
        s = max(self.scale, other.scale)
        return self._lift(s), other._lift(s)

    # -- linear, local ------------------------------------------------------------------------------------
    def __add__(self, other: Operand) -> SharedFixedPoint:
        if isinstance(other, SharedFixedPoint):
            a, b = self._aligned(other)
            broadcast_shape(a.shape, b.shape)
            return a.derive(a.ring.add(a.share, b.share), bound=a.bound + b.bound)
        c = self._public(other)
        broadcast_shape(self.shape, c.shape)
        bound = self.bound + (float(np.abs(c).max()) if c.size else 0.0)
        encoded = self.fmt.encode(c, scale_bits=self.scale, name="public addend")
        if c.ndim == 0:  # one constant (the common case): only the leader's shares change, no broadcasting
            k = int(self.ring.to_object(encoded, signed=False))
            return self.derive(self.ring.add_int(self.share, k) if self.session.leader else self.share, bound=bound)
        share = self.ring.add(self.share, encoded) if self.session.leader else \
            self.ring.add(self.share, self.ring.zeros(c.shape))
        return self.derive(share, bound=bound)

    __radd__ = __add__

    def __neg__(self) -> SharedFixedPoint:
        return self.derive(self.ring.neg(self.share))

    def __sub__(self, other: Operand) -> SharedFixedPoint:
        if isinstance(other, SharedFixedPoint):
            return self + (-other)
        return self + (-self._public(other))

    def __rsub__(self, other: Operand) -> SharedFixedPoint:
        return (-self).__add__(other)

    def __pos__(self) -> SharedFixedPoint:
        return self

    # -- products -----------------------------------------------------------------------------------------
    def __mul__(self, other: Operand) -> SharedFixedPoint:
        if isinstance(other, SharedFixedPoint):
            return self.session.ops.mul(self, other)
        return self.session.ops.mul_public(self, self._public(other))

    __rmul__ = __mul__

    def __truediv__(self, other: Operand) -> SharedFixedPoint:
        if isinstance(other, SharedFixedPoint):
            return self.session.ops.div(self, other)
        c = self._public(other)
        if np.any(c == 0):
            raise ParameterError(explain("divisor", "0", "non-zero public numbers", "do not divide by zero"))
        return self * (1.0 / c)

    def __rtruediv__(self, other: Operand) -> SharedFixedPoint:
        return self.session.ops.reciprocal(self) * self._public(other)

    def __matmul__(self, other: Operand) -> SharedFixedPoint:
        if isinstance(other, SharedFixedPoint):
            return self.session.ops.matmul(self, other)
        return self.session.ops.matmul_public(self, self._public(other), left=False)

    def __rmatmul__(self, other: Operand) -> SharedFixedPoint:
        return self.session.ops.matmul_public(self, self._public(other), left=True)

    def __pow__(self, exponent: int) -> SharedFixedPoint:
        if not isinstance(exponent, int) or exponent < 1:
            raise ParameterError(explain("exponent", exponent, "an int >= 1", "use reciprocal()/sqrt() otherwise"))
        result: SharedFixedPoint | None = None
        base: SharedFixedPoint = self
        while exponent:
            if exponent & 1:
                result = base if result is None else result * base
            exponent >>= 1
            if exponent:
                base = base.square()
        if result is None:  # pragma: no cover - exponent >= 1
            raise ParameterError("empty power")
        return result

    def square(self) -> SharedFixedPoint:
        """``x * x`` with a square pair (opens one value instead of two)."""
        return self.session.ops.square(self)

    def mul_split(self, other: SharedFixedPoint) -> SharedFixedPoint:
        """Paper 002's integer/fraction split product: ``|x y| < max_value`` instead of ``product_capacity``."""
        return self.session.ops.mul_split(self, other)

    def dot(self, other: Operand) -> SharedFixedPoint:
        """Inner product over the last axis (``sum(x * y, -1)`` with one truncation, via ``@``)."""
        if isinstance(other, SharedFixedPoint):
            return (self.reshape((*self.shape[:-1], 1, self.shape[-1])) @
                    other.reshape((*other.shape[:-1], other.shape[-1], 1))).reshape(
                tuple(np.broadcast_shapes(self.shape[:-1], other.shape[:-1])))
        c = self._public(other)
        return self @ c if c.ndim == 1 else (self * c).sum(axis=-1)

    # -- reductions and shape -----------------------------------------------------------------------------
    def sum(self, axis: int | tuple[int, ...] | None = None) -> SharedFixedPoint:
        count = self.size if axis is None else math.prod(
            self.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return self.derive(self.ring.sum(self.share, axis), bound=self.bound * max(count, 1))

    def mean(self, axis: int | tuple[int, ...] | None = None) -> SharedFixedPoint:
        count = self.size if axis is None else math.prod(
            self.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return self.sum(axis) * (1.0 / max(count, 1))

    def _reshape_op(self, fn: Callable[[Any], Any]) -> SharedFixedPoint:
        return self.derive(self.ring.apply(self.share, fn))

    def reshape(self, *shape: Any) -> SharedFixedPoint:
        target = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self.derive(self.ring.reshape(self.share, tuple(target)))

    def transpose(self, *axes: int) -> SharedFixedPoint:
        return self.derive(self.ring.transpose(self.share, axes))

    @property
    def T(self) -> SharedFixedPoint:  # noqa: N802 - numpy's name
        return self.transpose()

    def flatten(self) -> SharedFixedPoint:
        return self.reshape(-1)

    def __getitem__(self, key: Any) -> SharedFixedPoint:
        if isinstance(key, SharedFixedPoint):
            raise ParameterError(explain("index", "a shared value", "a public index", "reveal the index first"))
        return self.derive(self.ring.index(self.share, key))

    def broadcast_to(self, shape: tuple[int, ...]) -> SharedFixedPoint:
        return self.derive(self.ring.broadcast_to(self.share, tuple(shape)))

    def times_pow2(self, k: int) -> SharedFixedPoint:
        """``x * 2^k`` exactly and locally: for ``k < 0`` only the scale changes (no rounding at all)."""
        if not isinstance(k, int):
            raise ParameterError(explain("k", k, "an int", "pass the power of two"))
        if k <= 0:
            return self.derive(self.share, scale=self.scale - k, bound=self.bound * 2.0**k)
        return self.derive(self.ring.shl(self.share, k), bound=self.bound * 2.0**k)

    # -- precision ----------------------------------------------------------------------------------------
    def truncate(self, bits: int) -> SharedFixedPoint:
        """Divide the raw integers by ``2^bits`` (one round): the value keeps, the scale drops by ``bits``."""
        return self.session.ops.truncate(self, bits)

    def rescale(self) -> SharedFixedPoint:
        """Truncate back to the format's ``f`` fractional bits if the scale is higher (no-op otherwise)."""
        if self.scale <= self.fmt.frac_bits:
            return self._lift(self.fmt.frac_bits)
        return self.truncate(self.scale - self.fmt.frac_bits)

    def to_format(self, fmt: FixedPointFormat) -> SharedFixedPoint:
        """The same value in another format (ring and/or fractional bits); one round unless only lifting."""
        return self.session.ops.convert(self, fmt)

    # -- functions and comparisons (x.session.ops: mpdp.protocols.mpc.functions / .comparison) -----------
    def exp(self, params: Any = None) -> SharedFixedPoint:
        """``exp(x)``; see :func:`mpdp.protocols.mpc.functions.exp`."""
        return self.session.ops.exp(self, params)

    def sigmoid(self, params: Any = None) -> SharedFixedPoint:
        """``1 / (1 + exp(-x))``; see :func:`mpdp.protocols.mpc.functions.sigmoid`."""
        return self.session.ops.sigmoid(self, params)

    def reciprocal(self, params: Any = None) -> SharedFixedPoint:
        """``1/x``; see :func:`mpdp.protocols.mpc.functions.reciprocal`."""
        return self.session.ops.reciprocal(self, params)

    def sqrt(self, params: Any = None) -> SharedFixedPoint:
        """``sqrt(x)``; see :func:`mpdp.protocols.mpc.functions.sqrt`."""
        return self.session.ops.sqrt(self, params)

    def inv_sqrt(self, params: Any = None) -> SharedFixedPoint:
        """``1/sqrt(x)``; see :func:`mpdp.protocols.mpc.functions.inv_sqrt`."""
        return self.session.ops.inv_sqrt(self, params)

    def __lt__(self, other: Operand) -> SharedFixedPoint:
        """``[x < y]`` as a shared bit (scale 0); see :mod:`mpdp.protocols.mpc.comparison`."""
        return self.session.ops.less(self, other)

    def __gt__(self, other: Operand) -> SharedFixedPoint:
        return self.session.ops.greater(self, other)

    def __le__(self, other: Operand) -> SharedFixedPoint:
        return 1 - self.__gt__(other)

    def __ge__(self, other: Operand) -> SharedFixedPoint:
        return 1 - self.__lt__(other)

    def max(self, axis: int = -1) -> SharedFixedPoint:
        """The maximum along ``axis`` (tournament of secure comparisons)."""
        return self.session.ops.max_along(self, axis)

    # -- opening ------------------------------------------------------------------------------------------
    def reveal(self) -> npt.NDArray[np.float64]:
        """Open the value to every computing party (one round) and decode it."""
        (total,) = self.session.open(self.ring, [self.share], sharing_id=self.sharing_id, label="mpc.reveal")
        return self.fmt.decode(total, scale_bits=self.scale)

    def reveal_to(self, party: str) -> npt.NDArray[np.float64] | None:
        """Open the value to ``party`` only: its decoded value there, None on the other parties."""
        opened = self.session.open_to(self.ring, [self.share], party, sharing_id=self.sharing_id,
                                      label="mpc.reveal_to")
        return None if opened is None else self.fmt.decode(opened[0], scale_bits=self.scale)


_new = object.__new__
_NEG_INF = -math.inf


def _capacity_error(fmt: FixedPointFormat, scale: int, bound: float) -> PrecisionError:
    return PrecisionError(
        explain("value bound", f"|x| <= {bound:.6g} at scale 2^{scale}",
                f"|x| < {2.0 ** (fmt.raw_capacity_bits - scale):.6g} for {fmt}",
                "use tighter input bounds, rescale the data, or a wider format (ring_bits=128)")
    )


def _joined(values: Sequence[SharedFixedPoint], fn: Callable[[Ring, list[RingArray]], RingArray]) -> SharedFixedPoint:
    if not values:
        raise _not_shared(values)
    for v in values:
        if not isinstance(v, SharedFixedPoint):
            raise _not_shared(values)
    first = values[0]
    session, fmt, scale, bound = first.session, first.fmt, first.scale, first.bound
    for v in values:  # (without generators: a stack or concatenation of a few values is the common case)
        if v.session is not session or (v.fmt is not fmt and v.fmt != fmt):
            first._check_peer(v)  # raises
        if v.scale > scale:
            scale = v.scale
        if v.bound > bound:
            bound = v.bound
    try:
        share = fn(first.ring, [v.share if v.scale == scale else v._lift(scale).share for v in values])
    except ValueError as exc:
        raise ShapeMismatchError(explain("shapes", [v.shape for v in values], "shapes that fit together",
                                         "reshape the values (numpy concatenate/stack rules)")) from exc
    return first.derive(share, scale=scale, bound=bound)


def _not_shared(values: Any) -> ParameterError:
    return ParameterError(explain("values", values, "a non-empty sequence of shared values",
                                  "share public parts with session.public() first"))


def concatenate(values: Sequence[SharedFixedPoint], axis: int = 0) -> SharedFixedPoint:
    """``numpy.concatenate`` of shared values of one session (local)."""
    return _joined(values, lambda ring, arrays: ring.concatenate(arrays, axis))


def stack(values: Sequence[SharedFixedPoint], axis: int = 0) -> SharedFixedPoint:
    """``numpy.stack`` of shared values of one session (local)."""
    return _joined(values, lambda ring, arrays: ring.stack(arrays, axis))


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if a == b:  # the common case, without np.broadcast_shapes' overhead
        return tuple(a)
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError as exc:
        raise ShapeMismatchError(explain("operand shapes", (a, b), "broadcastable shapes",
                                         "reshape one operand (numpy broadcasting rules)")) from exc
