"""The planner: a masked-wire program is built once, ahead of the online phase, into nodes and a dealer plan.

A :class:`Program` records a computation on shapes, scales and public bounds only (no data): additively shared
:class:`Value` s, masked :class:`Wire` s (``v = delta - lambda``), and the interactive steps between them. Each
``open`` is one round and may open many values at once: a ``plain`` opening of ``x + r`` (the mask ``r`` is one
atom), a ``trunc`` one (the wrap-corrected shift of :mod:`mpdp.crypto.beaver`, whose mask is ``A + s B`` with the
public sign ``s``) or an ``owned`` one (a party's own value). Everything else is local: products of wires (their
cross terms are dealt, so a multiply-and-truncate layer is one round whatever its degree), comparisons of a wire
with public thresholds from one key whose payload carries other wires' masks (an indicator times a masked value
is then local), functions of a wire from one table, and linear maps of values and wires.

:meth:`Program.compile` returns a :class:`Compiled` program: the nodes the parties execute
(:mod:`~mpdp.protocols.mpc.masked.run`) and the :class:`~mpdp.crypto.masked.plan.MaskedPlan` of every
correlation they consume, which the dealer deals before the online phase (one request, no mid-step fetch).

Bit growth
----------
Every value carries a public bound, checked when it is made: a value must fit its ring as a signed number, a value
opened by a truncation must stay below ``2^(l-2)`` (the exact truncation's range), a value opened plainly into a
narrower ring below half of it, a table's partial sums within its ring (:meth:`~mpdp.crypto.masked.tables.TableSpec.
max_bits`). A program that breaks one raises :class:`~mpdp.errors.PrecisionError` while it is built, before any
opening. :attr:`Compiled.bits` lists the largest intermediate of every node (in bits), from the parameters alone.

Security
--------
The program is public. What it opens is uniformly masked (each opening's ``r`` is fresh); comparisons and tables
evaluate public points of dealt keys and tables. Semi-honest parties, a dealer that colludes with none.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.masked.plan import AtomRef, DcfItem, Item, MaskedPlan, MonoItem, OpenItem, TableItem
from mpdp.crypto.masked.tables import TableSpec
from mpdp.errors import ParameterError, PrecisionError, ShapeMismatchError, explain

__all__ = ["Cmp", "Compiled", "Owned", "Program", "Term", "Value", "Wire"]

Term = tuple[int, int, str, bool, tuple[int, ...] | None]
"""A mask term ``(coef, item, atom, signed, reshape)``: ``coef`` times the atom (times its opening's public sign
when ``signed``), reshaped."""


def _bits_ok(bits: int) -> None:
    if type(bits) is not int or not (bits == 128 or 2 <= bits <= 64):
        raise ParameterError(explain("ring bits", bits, "2..64 or 128", "pick a ring"))


def _fits(bound: float, scale: int, room: int, what: str) -> None:
    if not (math.isfinite(bound) and bound >= 0 and bound * 2.0**scale <= 2.0**room):
        raise PrecisionError(explain(what, f"|x| <= {bound:.6g} at scale 2^{scale}", f"raw values below 2^{room}",
                                     "declare tighter bounds, a lower scale or a wider ring"))


class _Handle:
    __slots__ = ("bits", "bound", "node", "prog", "scale", "shape")

    def __init__(self, prog: Program, node: int, shape: tuple[int, ...], bits: int, scale: int, bound: float) -> None:
        self.prog, self.node, self.shape, self.bits, self.scale, self.bound = prog, node, shape, bits, scale, bound

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def _same(self, other: _Handle) -> None:
        if other.prog is not self.prog or other.bits != self.bits or other.scale != self.scale:
            raise ParameterError(explain("operand", (other.bits, other.scale), f"the same program, ring {self.bits} "
                                         f"and scale {self.scale}", "align scales (lift) first"))


class Value(_Handle):
    """An additively shared value of a program (this party's shares at run time)."""

    def _new(self, op: tuple[Any, ...], shape: tuple[int, ...], bound: float, scale: int | None = None) -> Value:
        return self.prog._value(op, shape, self.bits, self.scale if scale is None else scale, bound)

    def __add__(self, other: Value) -> Value:
        self._same(other)
        return self._new(("add", self.node, other.node), _broadcast(self.shape, other.shape), self.bound + other.bound)

    def __sub__(self, other: Value) -> Value:
        self._same(other)
        return self._new(("sub", self.node, other.node), _broadcast(self.shape, other.shape), self.bound + other.bound)

    def __neg__(self) -> Value:
        return self._new(("mul_int", self.node, -1), self.shape, self.bound)

    def mul_const(self, name: str, shape: tuple[int, ...], bound: float, frac: int = 0) -> Value:
        """Times public reals the run passes as integers ``consts[name]`` at ``frac`` fractional bits (of ``shape``,
        broadcasting; reals bounded by ``bound``): constants that change between runs of one program (a step's
        coefficients). The scale grows by ``frac``."""
        self.prog.consts[name] = tuple(shape)
        return self._new(("mul_const", self.node, name), _broadcast(self.shape, tuple(shape)), self.bound * bound,
                         self.scale + frac)

    def mul_int(self, k: int | npt.NDArray[np.int64]) -> Value:
        """Times public integers (exact)."""
        arr = np.asarray(k, dtype=object)
        top = float(max(abs(int(v)) for v in arr.reshape(-1))) if arr.size else 0.0
        return self._new(("mul_int", self.node, k if isinstance(k, int) else np.asarray(k)),
                         _broadcast(self.shape, arr.shape), self.bound * top)

    def add_raw(self, k: int) -> Value:
        """Plus the public raw integer ``k`` (at this value's scale; the leader adds it)."""
        return self._new(("add_raw", self.node, int(k)), self.shape, self.bound + abs(k) * 2.0**-self.scale)

    def lift(self, k: int) -> Value:
        """Times ``2^k`` with the scale raised by ``k`` (the same real value, exact)."""
        return self._new(("lift", self.node, k), self.shape, self.bound, self.scale + k)

    def with_scale(self, scale: int, bound: float) -> Value:
        """The same raw shares read at another scale (``x 2^(self.scale - scale)``), with the caller's bound."""
        return self._new(("same", self.node), self.shape, bound, scale)

    def sum(self, axis: int | tuple[int, ...]) -> Value:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        count = math.prod(self.shape[a] for a in axes)
        shape = tuple(d for i, d in enumerate(self.shape) if i not in {a % len(self.shape) for a in axes})
        return self._new(("sum", self.node, axes), shape, self.bound * count)

    def reshape(self, *shape: Any) -> Value:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], tuple) else tuple(shape)
        if math.prod(target) != self.size:
            raise ShapeMismatchError(explain("reshape", target, f"{self.size} elements", "keep the size"))
        return self._new(("reshape", self.node, target), target, self.bound)

    def __getitem__(self, key: Any) -> Value:
        shape = np.empty(self.shape, dtype=np.uint8)[key].shape
        return self._new(("index", self.node, key), tuple(shape), self.bound)


class Owned(_Handle):
    """A party's own array, opened (masked) by an ``owned`` opening; only its ``owner`` passes its values."""

    __slots__ = ("owner",)
    owner: int


class Wire(_Handle):
    """A masked value ``delta - lambda`` of a program: public ``delta``, the mask ``lambda`` a sum of :data:`Term` s."""

    __slots__ = ("terms",)
    terms: tuple[Term, ...]

    def _new(self, op: tuple[Any, ...], terms: tuple[Term, ...], shape: tuple[int, ...], bound: float) -> Wire:
        return self.prog._wire(op, terms, shape, self.bits, self.scale, bound)

    def __add__(self, other: Wire) -> Wire:
        self._same(other)
        if other.shape != self.shape:
            raise ShapeMismatchError(explain("wire shapes", (self.shape, other.shape), "equal", "reshape first"))
        return self._new(("wadd", self.node, other.node, 1), self.terms + other.terms, self.shape,
                         self.bound + other.bound)

    def __sub__(self, other: Wire) -> Wire:
        self._same(other)
        if other.shape != self.shape:
            raise ShapeMismatchError(explain("wire shapes", (self.shape, other.shape), "equal", "reshape first"))
        negated = tuple((-c, i, a, s, r) for c, i, a, s, r in other.terms)
        return self._new(("wadd", self.node, other.node, -1), self.terms + negated, self.shape,
                         self.bound + other.bound)

    def mul_int(self, k: int) -> Wire:
        return self._new(("wmul", self.node, int(k)), tuple((c * k, i, a, s, r) for c, i, a, s, r in self.terms),
                         self.shape, self.bound * abs(k))

    def reshape(self, *shape: Any) -> Wire:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], tuple) else tuple(shape)
        if math.prod(target) != self.size:
            raise ShapeMismatchError(explain("reshape", target, f"{self.size} elements", "keep the size"))
        return self._new(("wreshape", self.node, target), tuple((c, i, a, s, target) for c, i, a, s, _ in self.terms),
                         target, self.bound)


class Cmp(_Handle):
    """Comparison results: shares of ``[x >= p_j] beta_m`` for every threshold ``p_j`` and payload entry ``beta_m``."""

    __slots__ = ("layout", "points")
    layout: tuple[tuple[int, tuple[Term, ...]], ...]
    points: tuple[int, ...]


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError as exc:
        raise ShapeMismatchError(explain("shapes", (a, b), "broadcastable", "reshape an operand")) from exc


@dataclass(frozen=True)
class Compiled:
    """A built program: its nodes (the parties execute them in order), its dealer plan, its interface."""

    nodes: tuple[tuple[Any, ...], ...]
    plan: MaskedPlan
    inputs: tuple[tuple[str, int], ...]
    """``(name, node)`` of every additive input."""
    owned: tuple[tuple[str, int], ...]
    """``(name, node)`` of every owned input."""
    outputs: tuple[tuple[str, int], ...]
    consts: dict[str, tuple[int, ...]]
    """The public constants each run passes, by name: their shapes."""
    meta: tuple[tuple[tuple[int, ...], int, int, float], ...]
    """Per node: ``(shape, bits, scale, bound)``."""
    terms: dict[int, tuple[Term, ...]]
    """Per wire node: its mask's terms."""
    rounds: int
    """How many online rounds the program takes (its ``open`` nodes)."""
    bits: tuple[float, ...]
    """Per node, the largest intermediate's size in bits (from the bounds and the tables' parameters)."""


class Program:
    """A masked-wire program under construction (see the module docstring)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[Any, ...]] = []
        self.meta: list[tuple[tuple[int, ...], int, int, float]] = []
        self.bits: list[float] = []
        self.items: list[Item] = []
        self.inputs: list[tuple[str, int]] = []
        self.owned_inputs: list[tuple[str, int]] = []
        self.outputs: list[tuple[str, int]] = []
        self._monos: dict[tuple[Any, ...], int] = {}
        self._weights: dict[tuple[int, str], int] = {}  # a B atom's power of two in its ring (absent: not a B atom)
        self.terms: dict[int, tuple[Term, ...]] = {}
        self.consts: dict[str, tuple[int, ...]] = {}

    # -- bookkeeping ------------------------------------------------------------------------------------------
    def _add(self, op: tuple[Any, ...], shape: tuple[int, ...], bits: int, scale: int, bound: float,
             size_bits: float | None = None) -> int:
        self.nodes.append(op)
        self.meta.append((shape, bits, scale, bound))
        raw = bound * 2.0**scale
        self.bits.append(size_bits if size_bits is not None else (math.log2(raw) if raw > 1 else 0.0))
        return len(self.nodes) - 1

    def _value(self, op: tuple[Any, ...], shape: tuple[int, ...], bits: int, scale: int, bound: float,
               size_bits: float | None = None) -> Value:
        _fits(bound, scale, bits - 1, "value")
        return Value(self, self._add(op, shape, bits, scale, bound, size_bits), shape, bits, scale, bound)

    def _wire(self, op: tuple[Any, ...], terms: tuple[Term, ...], shape: tuple[int, ...], bits: int, scale: int,
              bound: float) -> Wire:
        _fits(bound, scale, bits - 1, "masked value")
        w = Wire(self, self._add(op, shape, bits, scale, bound), shape, bits, scale, bound)
        w.terms = terms
        self.terms[w.node] = terms
        return w

    def _item(self, item: Item) -> int:
        self.items.append(item)
        return len(self.items) - 1

    def _ref(self, term: Term) -> AtomRef:
        return AtomRef(term[1], term[2], term[4])

    # -- inputs and outputs -----------------------------------------------------------------------------------
    def input(self, name: str, shape: tuple[int, ...], *, scale: int, bound: float, bits: int = 128) -> Value:
        """An additively shared input (a :class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` at run time)."""
        _bits_ok(bits)
        v = self._value(("input", name), tuple(shape), bits, scale, bound)
        self.inputs.append((name, v.node))
        return v

    def owned(self, name: str, owner: int, shape: tuple[int, ...], *, scale: int, bound: float,
              bits: int = 128) -> Owned:
        """Party ``owner``'s own array (float values at run time, encoded at ``scale``; refused beyond ``bound``)."""
        _bits_ok(bits)
        _fits(bound, scale, bits - 1, f"owned input {name}")
        o = Owned(self, self._add(("owned", name, owner), tuple(shape), bits, scale, bound), tuple(shape), bits,
                  scale, bound)
        o.owner = owner
        self.owned_inputs.append((name, o.node))
        return o

    def output(self, name: str, value: Value) -> None:
        self.outputs.append((name, value.node))

    def concat(self, values: Sequence[Value], axis: int = 0) -> Value:
        """``numpy.concatenate`` of values of one ring and scale (local)."""
        first = values[0]
        for v in values[1:]:
            first._same(v)
        shape = np.concatenate([np.empty(v.shape, dtype=np.uint8) for v in values], axis=axis).shape
        return self._value(("concat", tuple(v.node for v in values), axis), tuple(shape), first.bits, first.scale,
                           max(v.bound for v in values))

    # -- rounds -----------------------------------------------------------------------------------------------
    def open(self, entries: Sequence[Value | Owned], *, shifts: Sequence[int] | None = None,
             out_bits: Sequence[int | None] | None = None) -> list[Wire]:
        """Open every entry masked, in one round: a value with shift 0 plainly (into ``out_bits``, default its
        ring), with ``shift > 0`` by the exact truncation (``shift`` fewer fractional bits; into ``out_bits``), an
        owned array by its owner."""
        count = len(entries)
        shifts = [0] * count if shifts is None else list(shifts)
        outs = [None] * count if out_bits is None else list(out_bits)
        if len(shifts) != count or len(outs) != count or not count:
            raise ParameterError(explain("open", (count, len(shifts), len(outs)), "one shift and ring per entry",
                                         "pass matching lists"))
        plan: list[tuple[str, int, int, int]] = []
        made: list[tuple[tuple[Term, ...], int, float]] = []
        for e, k, out in zip(entries, shifts, outs, strict=True):
            ob = e.bits if out is None else out
            _bits_ok(ob)
            if ob > e.bits:
                raise ParameterError(explain("out_bits", ob, f"at most the entry's {e.bits}", "widen before"))
            if isinstance(e, Owned):
                if k or ob != e.bits:
                    raise ParameterError(explain("owned opening", (k, ob), "no shift, its own ring", "open it whole"))
                item = self._item(OpenItem("owned", e.shape, e.bits, e.bits, 0, e.owner))
                plan.append(("owned", e.node, item, 0))
                made.append((((1, item, "r", False, None),), e.scale, e.bound))
                continue
            if k == 0:
                _fits(e.bound, e.scale, ob - 1, "plainly opened value")
                item = self._item(OpenItem("plain", e.shape, e.bits, ob))
                plan.append(("plain", e.node, item, 0))
                made.append((((1, item, "r", False, None),), e.scale, e.bound))
                continue
            if not 1 <= k <= min(e.scale, e.bits - 2):
                raise ParameterError(explain("shift", k, f"1..{min(e.scale, e.bits - 2)}", "truncate fewer bits"))
            _fits(e.bound, e.scale, e.bits - 2, "truncated value")
            item = self._item(OpenItem("trunc", e.shape, e.bits, ob, k))
            weight = e.bits - 1 - k
            terms: tuple[Term, ...] = ((1, item, "A", False, None),)
            if weight < ob:  # B = -msb 2^weight vanishes in a ring of at most weight bits
                terms += ((1, item, "B", True, None),)
                self._weights[(item, "B")] = weight
            plan.append(("trunc", e.node, item, k))
            made.append((terms, e.scale - k, e.bound + 2.0 ** -(e.scale - k)))
        node = self._add(("open", tuple(plan)), (), 0, 0, 0.0)
        wires = []
        for (kind, _, item, _), (terms, scale, bound), e, out in zip(plan, made, entries, outs, strict=True):
            ob = e.bits if out is None else out
            wires.append(self._wire(("wire", node, item, kind), terms, e.shape, ob, scale, bound))
        return wires

    def unmask(self, w: Wire) -> Value:
        """The wire's additive shares (local): ``delta - lambda``."""
        return self._value(("unmask", w.node), w.shape, w.bits, w.scale, w.bound)

    # -- products -----------------------------------------------------------------------------------------------
    def product(self, factors: Sequence[Wire], *, reduce: tuple[int, ...] = (), bound: float | None = None) -> Value:
        """``prod(factors)`` (numpy broadcasting), summed over ``reduce`` axes, as additive shares at the sum of
        the scales: the cross terms of the masks are dealt (``mono`` items), so the product is local. A signed
        atom (a truncation's ``B``) may not be summed over by the dealer: the parties then sum after applying its
        sign (the dealt monomial keeps the summed axes). ``bound``: the caller's tighter bound, if any."""
        if not factors or any(f.prog is not self or f.bits != factors[0].bits for f in factors):
            raise ParameterError(explain("factors", len(factors), "wires of this program in one ring",
                                         "convert first"))
        bits = factors[0].bits
        shape = factors[0].shape
        for f in factors[1:]:
            shape = _broadcast(shape, f.shape)
        reduce = tuple(a % len(shape) for a in reduce) if shape else ()
        out_shape = tuple(d for i, d in enumerate(shape) if i not in reduce)
        top = math.prod(f.bound for f in factors) * math.prod(shape[a] for a in reduce)
        scale = sum(f.scale for f in factors)
        terms = []
        for choice in itertools.product(*[range(-1, len(f.terms)) for f in factors]):
            chosen = [(j, f.terms[c]) for j, (f, c) in enumerate(zip(factors, choice, strict=True)) if c >= 0]
            if self._vanishes([t for _, t in chosen], bits):
                continue
            mono = -1
            if len(chosen) >= 2:
                signed = any(t[3] for _, t in chosen)
                public = len(chosen) < len(factors)
                dealt_reduce = reduce if reduce and not signed and not public else ()
                mono = self._mono(tuple(self._ref(t) for _, t in chosen), dealt_reduce, bits)
                terms.append((choice, mono, bool(dealt_reduce)))
            else:
                terms.append((choice, mono, False))
        value = self._value(("product", tuple(f.node for f in factors), tuple(terms), reduce), out_shape, bits, scale,
                            top if bound is None else min(top, bound))
        return value

    def _vanishes(self, terms: list[Term], bits: int) -> bool:
        """Whether a product of atoms is 0 in the ring: its B atoms' powers of two add up to ``bits`` or more."""
        weight = sum(self._weights.get((t[1], t[2]), 0) for t in terms if (t[1], t[2]) in self._weights)
        return sum(1 for t in terms if (t[1], t[2]) in self._weights) >= 2 and weight >= bits

    def _mono(self, refs: tuple[AtomRef, ...], reduce: tuple[int, ...], bits: int) -> int:
        key = (tuple(sorted((r.item, r.name, r.shape or ()) for r in refs)), reduce, bits)
        known = self._monos.get(key)
        if known is None:
            known = self._monos[key] = self._item(MonoItem(refs, reduce, bits))
        return known

    # -- comparisons and tables ------------------------------------------------------------------------------
    def _view_terms(self, w: Wire, top: int) -> tuple[tuple[int, AtomRef], ...]:
        """The wire's mask modulo ``2^top`` as unsigned atoms: its B atoms must vanish there."""
        out = []
        for c, item, name, signed, shape in w.terms:
            if signed:
                if self._weights[(item, name)] < top:
                    raise ParameterError(explain("compared wire", f"a truncation's wrap term at bit "
                                                 f"{self._weights[(item, name)]}", f"none below bit {top}",
                                                 "truncate it by fewer bits or compare fewer bits"))
                continue
            out.append((c, AtomRef(item, name, shape)))
        return tuple(out)

    def _payload(self, wires: Sequence[Wire]) -> tuple[list[tuple[AtomRef, ...]], list[tuple[int, tuple[Term, ...]]]]:
        entries: list[tuple[AtomRef, ...]] = [()]
        layout = []
        for w in wires:
            layout.append((w.node, tuple(w.terms)))
            entries += [(self._ref(t),) for t in w.terms]
        return entries, layout

    def compare(self, w: Wire, points: Sequence[int], *, depth: int, shift: int = 0, offset: int = 0,
                payload: Sequence[Wire] = (), out_bits: int | None = None) -> Cmp:
        """Shares of ``[x' >= p_j]`` and of ``[x' >= p_j]`` times each ``payload`` wire's mask atoms, for the
        public thresholds ``points``, where ``x' = ((x - offset) >> shift) mod 2^depth`` (up to one unit: the
        shifted-off bits may carry one into it). One key per element, ``len(points) + 1`` evaluations."""
        ob = w.bits if out_bits is None else out_bits
        pts = [int(p) for p in points]
        if not pts or not all(1 <= p < 1 << depth for p in pts) or not 1 <= depth <= 64 \
                or shift < 0 or shift + depth > w.bits:
            raise ParameterError(explain("comparison", (depth, shift, pts[:3]), "thresholds in [1, 2^depth), depth "
                                         "<= 64, within the ring", "compare fewer bits"))
        for p in payload:
            if p.bits != ob or _broadcast(p.shape, w.shape) != w.shape:
                raise ParameterError(explain("payload", (p.bits, p.shape), f"wires of ring {ob} broadcasting to "
                                             f"{w.shape}", "reshape or convert them"))
        terms = self._view_terms(w, shift + depth)
        entries, layout = self._payload(payload)
        item = self._item(DcfItem(terms, w.bits, shift, depth, tuple(entries), ob, w.shape))
        node = self._add(("compare", w.node, item, tuple(pts), depth, shift, offset, tuple(layout)), w.shape, ob, 0,
                         1.0)
        c = Cmp(self, node, w.shape, ob, 0, 1.0)
        c.points = tuple(pts)
        c.layout = tuple(layout)
        return c

    def select(self, cmp: Cmp, coefs: Sequence[int] | npt.NDArray[Any], *, const: int = 0, times: Wire | None = None,
               scale: int, bound: float) -> Value:
        """``const + sum_j coefs_j [x' >= p_j]`` (``coefs``: one public integer per threshold, or an array whose
        first axis is the thresholds, broadcasting against the elements), times the payload wire ``times`` when
        given, as additive shares read at ``scale`` with the caller's ``bound``."""
        arr = np.asarray(coefs, dtype=object)
        if arr.shape[:1] != (len(cmp.points),):
            raise ParameterError(explain("coefs", arr.shape, f"({len(cmp.points)}, ...)", "one per threshold"))
        index = -1
        if times is not None:
            nodes = [n for n, _ in cmp.layout]
            if times.node not in nodes:
                raise ParameterError(explain("times", "a wire", "one of the comparison's payload wires",
                                             "pass it as payload to compare()"))
            index = nodes.index(times.node)
        return self._value(("select", cmp.node, arr, int(const), index), cmp.shape, cmp.bits, scale, bound)

    def table(self, w: Wire, spec: TableSpec, *, times: Wire | None = None, bound: float,
              out_bits: int = 128) -> Value:
        """``f(x)`` (times the wire ``times``, if given) from one dealt table (:mod:`mpdp.crypto.masked.tables`),
        as additive shares in ``out_bits`` (``times``' ring) at ``spec.out_frac`` (plus ``times``' scale), bounded
        by the caller's ``bound``."""
        if spec.in_frac != w.scale:
            raise ParameterError(explain("table", spec.in_frac, f"the wire's scale {w.scale}", "rescale the wire"))
        ob = out_bits if times is None else times.bits
        terms = self._view_terms(w, spec.view_bits)
        entries, layout = self._payload([] if times is None else [times])
        if times is not None and _broadcast(times.shape, w.shape) != w.shape:
            raise ShapeMismatchError(explain("times", times.shape, f"broadcasting to {w.shape}", "reshape it"))
        item = self._item(TableItem(terms, w.bits, spec, tuple(entries), ob, w.shape))
        scale = spec.out_frac + (0 if times is None else times.scale)
        extra = 0.0 if times is None else math.log2(max(times.bound * 2.0**times.scale, 1.0))
        return self._value(("table", w.node, item, spec, tuple(layout)), w.shape, ob, scale, bound,
                           size_bits=spec.max_bits() + extra)

    # -- compile ----------------------------------------------------------------------------------------------
    def compile(self) -> Compiled:
        """The executable program and its dealer plan (validated: :class:`~mpdp.crypto.masked.plan.MaskedPlan`)."""
        plan = MaskedPlan(tuple(self.items))
        rounds = sum(1 for op in self.nodes if op[0] == "open")
        return Compiled(tuple(self.nodes), plan, tuple(self.inputs), tuple(self.owned_inputs), tuple(self.outputs),
                        dict(self.consts), tuple(self.meta), dict(self.terms), rounds, tuple(self.bits))
