"""A masked-wire plan: every correlation of a function (or a whole protocol step) in the order it is used.

A computation on masked wires (:mod:`mpdp.protocols.mpc.masked`) holds each value ``v`` as a public ``delta`` and a
mask ``lambda`` known to the dealer and additively shared, ``v = delta - lambda``. The dealer must know every mask
*before* the online phase, so a program is compiled ahead of time into a :class:`MaskedPlan`, the list of its
correlated items, which names masks by *atoms*:

``open``
    An opening; its masks are atoms. ``plain``: ``c = x + r`` (in ``out_bits``, which may drop high bits), atom
    ``r``. ``trunc``: the wrap-corrected shift of :mod:`mpdp.crypto.beaver` opened as a masked wire, ``z = (c >> k) -
    2^(l-2-k) - A - s B`` with ``A = (r mod 2^(l-1)) >> k``, ``B = -r_msb 2^(l-1-k)`` (in ``out_bits``) and the public
    sign ``s = 1 - 2 msb(c)``: atoms ``A`` and ``B``. ``owned``: a party's own value ``x + r`` with ``r`` known to that
    party alone (its owner), atom ``r``.
``mono``
    Shares of a product of atoms (each optionally reshaped; numpy broadcasting), summed over ``reduce`` axes: the
    cross terms of a product of masked wires.
``dcf``
    A comparison key with a payload (:mod:`mpdp.crypto.fss_payload`): ``alpha = ((sum_t c_t atom_t) >> shift) mod
    2^depth``, the comparison's view of the input's mask; payload entries are products of atoms (the empty product
    is 1); the parties also get shares of the payload itself.
``table``
    The coefficients of a function of the input (:mod:`mpdp.crypto.masked.tables`), for the input's mask
    ``(sum_t c_t atom_t) mod 2^n``, dealt once per ``extras`` entry (a product of atoms, the empty one 1) times the
    coefficients: a function of one masked value times other masked values stays local.

Parts, seed-compressed as :mod:`mpdp.crypto.correlations` deals: an item's part is drawn by every party from its
dealer stream (``both``), by one party only (``owner``), drawn by parties 1.. and *corrected* for party 0 (who
receives ``secret - sum of the others' parts``), or ``public`` (sent to every party: the keys' corrections).
:meth:`MaskedPlan.draw_plan` lists what a party draws, in stream order; part names are ``"<item>.<part>"``.

Security
--------
As :mod:`mpdp.crypto.correlations`: a party's parts are uniform given everything it receives, party 0's
corrections being offset by the other parties' parts. The plan itself is public (shapes, atoms, tables); it carries
no data.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpdp.crypto.fss_payload import MAX_WIDTH
from mpdp.crypto.masked.tables import TableSpec
from mpdp.errors import MalformedMessageError, ParameterError, PrecisionError, explain

__all__ = ["MAX_PLAN_ELEMENTS", "AtomRef", "DcfItem", "Item", "MaskedPlan", "MonoItem", "OpenItem", "TableItem"]

MAX_PLAN_ELEMENTS = 1 << 28
"""The most ring elements one plan may ask the dealer for (2-4 GiB of words)."""

_ATOMS = {"plain": ("r",), "trunc": ("A", "B"), "owned": ("r",)}


def _bits_ok(bits: Any) -> bool:
    return type(bits) is int and (bits == 128 or 2 <= bits <= 64)


def _shape_ok(shape: Any) -> bool:
    return type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape)


def _layout(bits: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The array shape of ring elements of ``shape`` (Z_2^128: a leading limb axis)."""
    return (2, *shape) if bits == 128 else shape


def _refuse(what: str, got: Any, expected: str) -> ParameterError:
    return ParameterError(explain(what, got, expected, "build plans with mpdp.protocols.mpc.masked"))


@dataclass(frozen=True)
class AtomRef:
    """Atom ``name`` of open item ``item``, reshaped to ``shape`` (``None``: its own shape)."""

    item: int
    name: str
    shape: tuple[int, ...] | None = None

    def to_wire(self) -> list[Any]:
        return [self.item, self.name] if self.shape is None else [self.item, self.name, list(self.shape)]


@dataclass(frozen=True)
class OpenItem:
    """An opening (``kind`` ``plain``, ``trunc`` or ``owned``) of a value of ``shape`` in ``in_bits``; its atoms live in
    ``out_bits``; ``shift`` is a ``trunc`` opening's truncation, ``owner`` an ``owned`` opening's party."""

    kind: str
    shape: tuple[int, ...]
    in_bits: int
    out_bits: int
    shift: int = 0
    owner: int = -1


@dataclass(frozen=True)
class MonoItem:
    """Shares of ``prod(factors)`` (broadcast) summed over ``reduce``, in ``bits``."""

    factors: tuple[AtomRef, ...]
    reduce: tuple[int, ...]
    bits: int


@dataclass(frozen=True)
class DcfItem:
    """A comparison key per element of ``shape`` (see the module docstring)."""

    terms: tuple[tuple[int, AtomRef], ...]
    bits: int
    shift: int
    depth: int
    payload: tuple[tuple[AtomRef, ...], ...]
    out_bits: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class TableItem:
    """A function table per element of ``shape`` (see the module docstring)."""

    terms: tuple[tuple[int, AtomRef], ...]
    bits: int
    table: TableSpec
    extras: tuple[tuple[AtomRef, ...], ...]
    out_bits: int
    shape: tuple[int, ...]


Item = OpenItem | MonoItem | DcfItem | TableItem


class MaskedPlan:
    """The correlated items of a masked-wire program, validated (see the module docstring). Immutable and hashable
    (by its wire encoding): a :class:`~mpdp.crypto.correlations.CorrelationSpec` of kind ``masked`` carries one."""

    __slots__ = ("_key", "atoms", "dcf_keys", "elements", "items", "shapes")

    def __init__(self, items: tuple[Item, ...]) -> None:
        self.items = tuple(items)
        self.atoms: dict[tuple[int, str], tuple[tuple[int, ...], int]] = {}
        """``(item, name) -> (shape, bits)`` of every atom."""
        self.shapes: list[tuple[int, ...]] = []
        """Per item: its result's value shape (an open's value, a mono's product, a key's or table's elements)."""
        for i, item in enumerate(self.items):
            self.shapes.append(self._check(i, item))
        self.dcf_keys = sum(math.prod(it.shape) for it in self.items if isinstance(it, DcfItem))
        """How many comparison keys the plan deals (counted against a dealer's ``max_dcf_keys``)."""
        self.elements = sum(math.prod(shape) for _, _, shape, _ in self._parts_all())
        if self.elements > MAX_PLAN_ELEMENTS:
            raise _refuse("plan size", self.elements, f"at most {MAX_PLAN_ELEMENTS} words")
        self._key = repr(self.to_wire()).encode()  # canonical: lists of ints and strings

    # -- identity ---------------------------------------------------------------------------------------------
    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MaskedPlan) and other._key == self._key

    def __repr__(self) -> str:
        return f"MaskedPlan({len(self.items)} items, digest {self.digest.hex()[:16]})"

    @property
    def digest(self) -> bytes:
        """SHA-256 of the plan's canonical encoding: what material dealt for this plan is bound to."""
        return _digest(self._key)

    # -- validation -------------------------------------------------------------------------------------------
    def _atom(self, i: int, ref: Any) -> tuple[tuple[int, ...], int]:
        if not isinstance(ref, AtomRef) or type(ref.item) is not int or not 0 <= ref.item < i \
                or (ref.item, ref.name) not in self.atoms:
            raise _refuse(f"atom of item {i}", ref, "an atom of an earlier open item")
        shape, bits = self.atoms[(ref.item, ref.name)]
        if ref.shape is not None:
            if not _shape_ok(ref.shape) or math.prod(ref.shape) != math.prod(shape):
                raise _refuse(f"atom reshape of item {i}", ref.shape, f"a shape of {math.prod(shape)} elements")
            shape = ref.shape
        return shape, bits

    def _monomial(self, i: int, factors: Any, bits: int, what: str) -> tuple[int, ...]:
        if type(factors) is not tuple:
            raise _refuse(what, factors, "a tuple of atoms")
        shapes = []
        for ref in factors:
            shape, b = self._atom(i, ref)
            if b != bits:
                raise _refuse(what, b, f"atoms of the {bits}-bit ring")
            shapes.append(shape)
        try:
            return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError as exc:
            raise _refuse(what, shapes, "broadcastable atom shapes") from exc

    def _view(self, i: int, terms: Any, bits: int, shape: tuple[int, ...]) -> None:
        if type(terms) is not tuple or not terms:
            raise _refuse(f"mask terms of item {i}", terms, "a non-empty tuple of (coefficient, atom)")
        for term in terms:
            if type(term) is not tuple or len(term) != 2 or type(term[0]) is not int:
                raise _refuse(f"mask term of item {i}", term, "(int coefficient, atom)")
            got, b = self._atom(i, term[1])
            if b != bits or got != shape:
                raise _refuse(f"mask atom of item {i}", (got, b), f"shape {shape} in the {bits}-bit ring")

    def _check(self, i: int, item: Any) -> tuple[int, ...]:
        if isinstance(item, OpenItem):
            ok = item.kind in _ATOMS and _shape_ok(item.shape) and _bits_ok(item.in_bits) and _bits_ok(item.out_bits) \
                and type(item.shift) is int and type(item.owner) is int and item.out_bits <= item.in_bits
            if ok and item.kind == "trunc":
                ok = 1 <= item.shift <= item.in_bits - 2 and item.owner == -1
            elif ok and item.kind == "plain":
                ok = item.shift == 0 and item.owner == -1
            elif ok:
                ok = item.shift == 0 and item.owner >= 0 and item.in_bits == item.out_bits
            if not ok:
                raise _refuse(f"open item {i}", item, "a plain, trunc or owned opening with valid rings and shift")
            for name in _ATOMS[item.kind]:
                self.atoms[(i, name)] = (item.shape, item.out_bits)
            return item.shape
        if isinstance(item, MonoItem):
            if not _bits_ok(item.bits) or type(item.factors) is not tuple or len(item.factors) < 2:
                raise _refuse(f"mono item {i}", item, "at least two atoms of one ring")
            full = self._monomial(i, item.factors, item.bits, f"mono item {i}")
            if type(item.reduce) is not tuple or len(set(item.reduce)) != len(item.reduce) \
                    or not all(type(a) is int and 0 <= a < len(full) for a in item.reduce):
                raise _refuse(f"mono item {i} reduce", item.reduce, f"distinct axes of the {len(full)}-d product")
            return tuple(d for a, d in enumerate(full) if a not in item.reduce)
        if isinstance(item, DcfItem):
            ok = _bits_ok(item.bits) and _bits_ok(item.out_bits) and _shape_ok(item.shape) \
                and type(item.shift) is int and type(item.depth) is int and 1 <= item.depth <= 64 \
                and 0 <= item.shift and item.shift + item.depth <= item.bits \
                and type(item.payload) is tuple and 1 <= len(item.payload) <= MAX_WIDTH
            if not ok:
                raise _refuse(f"dcf item {i}", item, f"a key of depth 1..64 within the ring, 1..{MAX_WIDTH} payloads")
            self._view(i, item.terms, item.bits, item.shape)
            for mono in item.payload:
                self._fits(i, self._monomial(i, mono, item.out_bits, f"payload of item {i}"), item.shape)
            return item.shape
        if isinstance(item, TableItem):
            ok = _bits_ok(item.bits) and _bits_ok(item.out_bits) and _shape_ok(item.shape) \
                and isinstance(item.table, TableSpec) and item.table.view_bits <= item.bits \
                and type(item.extras) is tuple and 1 <= len(item.extras) <= 16
            if not ok:
                raise _refuse(f"table item {i}", item, "a table whose view fits the ring, 1..16 extras")
            if item.table.max_bits() > item.out_bits - 2:
                raise PrecisionError(explain(f"table item {i}", f"up to 2^{item.table.max_bits():.1f} raw",
                                             f"below 2^{item.out_bits - 2} in the {item.out_bits}-bit ring",
                                             "lower the table's coef_frac or basis_frac"))
            self._view(i, item.terms, item.bits, item.shape)
            for mono in item.extras:
                self._fits(i, self._monomial(i, mono, item.out_bits, f"extra of item {i}"), item.shape)
            return item.shape
        raise _refuse(f"item {i}", type(item).__name__, "an OpenItem, MonoItem, DcfItem or TableItem")

    @staticmethod
    def _fits(i: int, shape: tuple[int, ...], target: tuple[int, ...]) -> None:
        try:
            if tuple(np.broadcast_shapes(shape, target)) == target:
                return
        except ValueError:
            pass
        raise _refuse(f"monomial of item {i}", shape, f"a shape broadcasting to {target}")

    # -- parts --------------------------------------------------------------------------------------------------
    def _parts(self, i: int) -> list[tuple[str, str, tuple[int, ...], int]]:
        """Item ``i``'s parts: ``(name, role, array shape, bits)`` with ``bits`` 0 for raw words."""
        item, shape = self.items[i], self.shapes[i]
        if isinstance(item, OpenItem):
            if item.kind == "plain":
                return [("r", "both", _layout(item.out_bits, shape), item.out_bits)]
            if item.kind == "owned":
                return [("r", "owner", _layout(item.in_bits, shape), item.in_bits)]
            out = _layout(item.out_bits, shape)
            return [("r", "both", _layout(item.in_bits, shape), item.in_bits), ("msb", "corrected", out, item.out_bits),
                    ("low", "corrected", out, item.out_bits)]
        if isinstance(item, MonoItem):
            return [("v", "corrected", _layout(item.bits, shape), item.bits)]
        n = math.prod(shape)
        words = 2 if item.out_bits == 128 else 1
        if isinstance(item, DcfItem):
            width = len(item.payload)
            payload = _layout(item.out_bits, (width, n))
            return [("seed", "both", (n, 2), 0), ("beta", "corrected", payload, item.out_bits),
                    ("cw", "public", (item.depth, 2 + width * words, n), 0), ("last", "public", payload, item.out_bits)]
        t = item.table
        value = (len(item.extras), n, t.entries, t.degree + 1)
        return [("coef", "corrected", _layout(item.out_bits, value), item.out_bits)]

    def _parts_all(self) -> list[tuple[str, str, tuple[int, ...], int]]:
        return [(f"{i}.{name}", role, shape, bits) for i in range(len(self.items))
                for name, role, shape, bits in self._parts(i)]

    def draw_plan(self, index: int) -> tuple[tuple[str, int, tuple[int, ...], int], ...]:
        """What the party at position ``index`` draws from its dealer stream, in order: ``(name, how, array shape,
        bits)`` with ``how`` 0 for raw words (and Z_2^128 limbs), 1 for elements of the one-word ring of ``bits``
        (the layout :func:`mpdp.crypto.correlations.parts.draw_plan` uses)."""
        return _draw_plan(self, index)

    def corrected(self) -> tuple[str, ...]:
        """The parts party 0 receives from the dealer instead of drawing them, in order."""
        return tuple(name for name, role, _, _ in self._parts_all() if role in ("corrected", "public"))

    def public(self) -> tuple[str, ...]:
        """The parts every party receives (the comparison keys' corrections)."""
        return tuple(name for name, role, _, _ in self._parts_all() if role == "public")

    def part_shape(self, name: str) -> tuple[int, ...]:
        """The array shape of part ``name``."""
        return _part_shapes(self)[name]

    def part_bits(self, name: str) -> int:
        """The ring of part ``name`` (0 for raw words)."""
        return _part_bits(self)[name]

    # -- wire -------------------------------------------------------------------------------------------------
    def to_wire(self) -> list[Any]:
        return [_item_wire(item) for item in self.items]

    @classmethod
    def from_wire(cls, wire: Any) -> MaskedPlan:
        if type(wire) is not list:
            raise MalformedMessageError(explain("masked plan", type(wire).__name__, "a list of items",
                                                "run the same mpdp version on every party"))
        try:
            return cls(tuple(_item_from_wire(w) for w in wire))
        except (ParameterError, TypeError, ValueError) as exc:
            raise MalformedMessageError(f"invalid masked plan: {exc}") from exc


@functools.lru_cache(maxsize=256)
def _draw_plan(plan: MaskedPlan, index: int) -> tuple[tuple[str, int, tuple[int, ...], int], ...]:
    out = []
    for i, item in enumerate(plan.items):
        for name, role, shape, bits in plan._parts(i):
            owner = isinstance(item, OpenItem) and item.owner == index
            if role == "public" or (role == "corrected" and index == 0) or (role == "owner" and not owner):
                continue
            out.append((f"{i}.{name}", 1 if 0 < bits < 128 else 0, shape, bits if 0 < bits < 128 else 64))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _part_shapes(plan: MaskedPlan) -> dict[str, tuple[int, ...]]:
    return {name: shape for name, _, shape, _ in plan._parts_all()}


@functools.lru_cache(maxsize=256)
def _part_bits(plan: MaskedPlan) -> dict[str, int]:
    return {name: bits for name, _, _, bits in plan._parts_all()}


@functools.lru_cache(maxsize=256)
def _digest(key: bytes) -> bytes:
    return hashlib.sha256(b"mpdp.masked plan:" + key).digest()


def _ref_from_wire(w: Any) -> AtomRef:
    if type(w) is not list or len(w) not in (2, 3) or type(w[0]) is not int or type(w[1]) is not str:
        raise ParameterError(f"atom reference {w!r}")
    if len(w) == 2:
        return AtomRef(w[0], w[1])
    if type(w[2]) is not list or not all(type(d) is int for d in w[2]):
        raise ParameterError(f"atom reshape {w[2]!r}")
    return AtomRef(w[0], w[1], tuple(w[2]))


def _mono_from_wire(w: Any) -> tuple[AtomRef, ...]:
    if type(w) is not list:
        raise ParameterError(f"monomial {w!r}")
    return tuple(_ref_from_wire(r) for r in w)


def _terms_from_wire(w: Any) -> tuple[tuple[int, AtomRef], ...]:
    if type(w) is not list or not all(type(t) is list and len(t) == 2 and type(t[0]) is int for t in w):
        raise ParameterError(f"mask terms {w!r}")
    return tuple((t[0], _ref_from_wire(t[1])) for t in w)


def _shape_from_wire(w: Any) -> tuple[int, ...]:
    if type(w) is not list or not all(type(d) is int for d in w):
        raise ParameterError(f"shape {w!r}")
    return tuple(w)


def _item_wire(item: Item) -> list[Any]:
    if isinstance(item, OpenItem):
        return ["open", item.kind, list(item.shape), item.in_bits, item.out_bits, item.shift, item.owner]
    if isinstance(item, MonoItem):
        return ["mono", [r.to_wire() for r in item.factors], list(item.reduce), item.bits]
    terms = [[c, r.to_wire()] for c, r in item.terms]
    if isinstance(item, DcfItem):
        return ["dcf", terms, item.bits, item.shift, item.depth, [[r.to_wire() for r in m] for m in item.payload],
                item.out_bits, list(item.shape)]
    return ["table", terms, item.bits, item.table.to_wire(), [[r.to_wire() for r in m] for m in item.extras],
            item.out_bits, list(item.shape)]


def _item_from_wire(w: Any) -> Item:
    if type(w) is not list or not w or type(w[0]) is not str:
        raise ParameterError(f"plan item {w!r}")
    tag, rest = w[0], w[1:]
    if tag == "open" and len(rest) == 6 and type(rest[0]) is str:
        return OpenItem(rest[0], _shape_from_wire(rest[1]), *rest[2:])
    if tag == "mono" and len(rest) == 3:
        return MonoItem(_mono_from_wire(rest[0]), _shape_from_wire(rest[1]), rest[2])
    if tag == "dcf" and len(rest) == 7 and type(rest[4]) is list:
        payload = tuple(_mono_from_wire(m) for m in rest[4])
        shape = _shape_from_wire(rest[6])
        return DcfItem(_terms_from_wire(rest[0]), rest[1], rest[2], rest[3], payload, rest[5], shape)
    if tag == "table" and len(rest) == 6 and type(rest[3]) is list:
        return TableItem(_terms_from_wire(rest[0]), rest[1], TableSpec.from_wire(rest[2]),
                         tuple(_mono_from_wire(m) for m in rest[3]), rest[4], _shape_from_wire(rest[5]))
    raise ParameterError(f"plan item {w!r}")
