"""Correlated randomness for secret-shared computation: what each kind is and how it is dealt.

A *correlation* is input-independent randomness, additively shared among the n computing parties, with a
known relation between its parts (Beaver 1991). Every kind here is described by a
:class:`CorrelationSpec` and produced in a seed-compressed way:

* each party ``i`` expands its own stream (a :class:`~mpdp.randomness.RandomSource` it shares with the
  dealer only) into uniform parts with :func:`draw`;
* the dealer expands all n streams the same way, computes the secrets, and :func:`deal` returns the
  *corrections* that replace some of party 0's parts so that the relation holds.

So a dealer sends only party 0's corrections; parties 1..n-1 receive nothing per correlation. Because
:func:`deal` calls :func:`draw` for every stream, the two sides cannot drift apart.

Kinds (shares of ring elements unless stated; ``+`` is ring addition, ``^`` XOR of words):

==========  ======================================================================================
``mul``     Beaver triple: a, b, c with c = a * b (elementwise, numpy broadcasting of a and b)
``matmul``  matrix triple: A, B, C with C = A @ B
``square``  square pair: a, c with c = a * a
``wrap``    wrap mask for truncation and ring conversion: r uniform in the input ring; ``msb`` = the top
            bit of r and ``low`` = (r mod 2^(l-1)) >> shift, both shared in the output ring
``compare`` comparison mask: r shared in the ring, and the bits of r XOR-shared as 64-bit words
``and``     bitwise AND triple on 64-bit words, XOR-shared: c = a & b
``dabit``   a random bit shared both ways: XOR-shared (uint8 0/1) and additively in the ring
``*_wrap``  ``mul_wrap``, ``matmul_wrap``, ``square_wrap``: a product correlation whose ``c`` is the
            product *plus* a wrap mask ``r`` (a uniform ring element only the dealer knows), with
            ``msb`` and ``low`` of that ``r`` as in ``wrap`` (in the output ring: the ring, or a narrower
            one when the truncation also leaves the ring): a Beaver product then yields shares of
            ``x y + r`` directly, ready to open for its truncation, and ``r`` is never shared (one
            uniform element per value fewer than a triple plus a wrap mask)
``owned``   ``matmul_owned_wrap``, ``mul_owned_wrap``: ``matmul_wrap`` and ``mul_wrap`` for a left operand
            one party (``owner``) holds in the clear: ``A`` is drawn by the owner alone (it knows all of it),
            ``B`` by the other parties alone (the owner's share of it is zero), ``c = A @ B + r`` (``A * B
            + r``) shared by all (:func:`mpdp.protocols.mpc.arithmetic.matmul_owned` and ``mul_owned``: the
            owner never shares its operand)
==========  ======================================================================================

Security: a party's parts are uniform given everything it receives; party 0's corrections are uniform
because they are offset by the other parties' parts, which party 0 never sees. The dealer learns the
correlations but never a masked value of the online phase (it receives no online message).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import Z2_128, Ring, RingArray, UniformSource, Z2k, ring_for_bits
from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["CORRECTED", "KINDS", "MAX_ELEMENTS", "OWNED", "CorrelationBatch", "CorrelationSpec", "batch",
           "convert_unsigned", "deal", "draw", "draw_shape", "matmul_shape", "spec"]

KINDS = ("mul", "matmul", "square", "wrap", "compare", "and", "dabit", "mul_wrap", "matmul_wrap", "square_wrap",
         "matmul_owned_wrap", "mul_owned_wrap")
_PRODUCTS = {"mul": "mul", "matmul": "matmul", "square": "square", "mul_wrap": "mul", "matmul_wrap": "matmul",
             "square_wrap": "square", "matmul_owned_wrap": "matmul", "mul_owned_wrap": "mul"}
OWNED = frozenset({"matmul_owned_wrap", "mul_owned_wrap"})
"""The kinds whose first operand's mask belongs to one party, ``CorrelationSpec.owner`` (its position)."""
MAX_ELEMENTS = 1 << 28  # one request may not ask for more than 2^28 elements (2 GiB of words)


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``A @ B`` under numpy's matmul rules, or ShapeMismatchError."""
    from mpdp.errors import ShapeMismatchError

    if len(a) == 0 or len(b) == 0:
        raise ShapeMismatchError(explain("matmul operand", (a, b), "at least 1-D operands", "use * for scalars"))
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeMismatchError(
            explain("matmul shapes", (a, b), "inner dimensions that agree (…, m, k) @ (…, k, n)",
                    "transpose one operand")
        )
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError as exc:
        raise ShapeMismatchError(explain("matmul batch shapes", (a, b), "broadcastable batch dimensions",
                                         "reshape the operands")) from exc
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _shape(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in value):
        raise ParameterError(explain(what, value, "a tuple of non-negative ints", "pass a numpy shape"))
    return tuple(int(d) for d in value)


@dataclass(frozen=True, init=False)
class CorrelationSpec:
    """What to deal: the kind, its ring(s) and shape(s).

    ``shape`` is the shape of the (first) operand; ``shape_b`` the second operand's for ``mul``/``matmul``;
    ``out_ring_bits`` and ``shift`` configure ``wrap`` (output ring, bits dropped); ``owner``, the position of
    the party holding the left operand among the computing parties, the :data:`OWNED` kinds (-1 elsewhere).
    """

    kind: str
    ring_bits: int
    shape: tuple[int, ...]
    shape_b: tuple[int, ...] = ()
    out_ring_bits: int = 0
    shift: int = 0
    owner: int = -1

    def __init__(self, kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...] = (),
                 out_ring_bits: int = 0, shift: int = 0, owner: int = -1) -> None:
        # Protocols build the same few specs thousands of times (every operation names its correlation): a spec
        # whose fields were validated before takes the normalised fields of then instead of re-validating,
        # written in one go (the fields of a frozen instance, set once here, as a generated __init__ would).
        fields = self.__dict__
        try:
            key = (kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner)
            known = _VALIDATED.get(key)
        except TypeError:  # unhashable fields (e.g. a list shape): validate and normalise below
            key, known = None, None
        if known is not None:
            fields.update(known)
            return
        fields.update(kind=kind, ring_bits=ring_bits, shape=shape, shape_b=shape_b, out_ring_bits=out_ring_bits,
                      shift=shift, owner=owner)
        self._validate()
        # the hash of the fields, once (specs key the plans, layouts and remembered requests of every step)
        fields["_hash"] = hash((self.kind, self.ring_bits, self.shape, self.shape_b, self.out_ring_bits, self.shift,
                                self.owner))
        if key is not None:
            if len(_VALIDATED) >= _MAX_VALIDATED:
                _VALIDATED.clear()
            _VALIDATED[key] = dict(fields)

    def __hash__(self) -> int:
        value: int = self.__dict__["_hash"]
        return value

    def _validate(self) -> None:
        if self.kind not in KINDS:
            raise ParameterError(explain("kind", self.kind, f"one of {KINDS}", "request a known correlation"))
        ring_for_bits(self.ring_bits)
        object.__setattr__(self, "shape", _shape(self.shape, "shape"))
        object.__setattr__(self, "shape_b", _shape(self.shape_b, "shape_b"))
        out_bits = self.out_ring_bits or self.ring_bits
        ring_for_bits(out_bits)
        object.__setattr__(self, "out_ring_bits", out_bits)
        if not isinstance(self.shift, int) or not 0 <= self.shift < self.ring_bits:
            raise ParameterError(explain("shift", self.shift, f"0 <= shift < {self.ring_bits}", "shift fewer bits"))
        total = math.prod(self.shape) + math.prod(self.shape_b)
        if total > MAX_ELEMENTS:
            raise ParameterError(explain("correlation size", total, f"<= {MAX_ELEMENTS} elements",
                                         "split the computation into smaller batches"))
        if self.kind.endswith("_wrap") and self.out_ring_bits > self.ring_bits:
            raise ParameterError(explain("out_ring_bits", self.out_ring_bits, f"<= {self.ring_bits} for {self.kind}",
                                         "truncate within the product's ring or into a narrower one; widen with a "
                                         "'wrap' conversion"))
        if self.kind in ("mul", "mul_wrap", "mul_owned_wrap"):
            try:
                np.broadcast_shapes(self.shape, self.shape_b)
            except ValueError as exc:
                raise ParameterError(explain("mul shapes", (self.shape, self.shape_b), "broadcastable shapes",
                                             "reshape the operands")) from exc
        if self.kind in ("matmul", "matmul_wrap", "matmul_owned_wrap"):
            matmul_shape(self.shape, self.shape_b)
        owned = self.kind in OWNED
        if type(self.owner) is not int or (self.owner < 0 if owned else self.owner != -1):
            raise ParameterError(explain("owner", self.owner, f"{'a party position >= 0' if owned else '-1'} for "
                                         f"{self.kind}", "name the operand's holder for the owned kinds only"))

    @property
    def product(self) -> str:
        """``mul``, ``matmul`` or ``square`` for the product kinds (with or without a wrap mask), else ``""``."""
        return _PRODUCTS.get(self.kind, "")

    @property
    def ring(self) -> Ring:
        return ring_for_bits(self.ring_bits)

    @property
    def out_ring(self) -> Ring:
        return ring_for_bits(self.out_ring_bits)

    def to_wire(self) -> dict[str, Any]:
        wire = {"kind": self.kind, "ring_bits": self.ring_bits, "shape": list(self.shape),
                "shape_b": list(self.shape_b), "out_ring_bits": self.out_ring_bits, "shift": self.shift}
        if self.owner != -1:  # only the owned kinds carry it (the others' requests are as before)
            wire["owner"] = self.owner
        return wire

    @classmethod
    def from_wire(cls, wire: Any) -> CorrelationSpec:
        if not isinstance(wire, dict) or set(wire) - {"owner"} != _WIRE_KEYS:
            raise MalformedMessageError(explain("correlation request", wire, "a CorrelationSpec wire dict",
                                                "run the same mpdp version on every party"))
        ints = ("ring_bits", "out_ring_bits", "shift", "owner") if "owner" in wire else \
            ("ring_bits", "out_ring_bits", "shift")
        exact = all(type(wire[k]) is int for k in ints) and all(
            type(wire[k]) is list and all(type(d) is int for d in wire[k]) for k in ("shape", "shape_b"))
        if type(wire["kind"]) is not str or not exact:
            raise MalformedMessageError(explain("correlation request", wire, "a str kind and int fields",
                                                "run the same mpdp version on every party"))
        try:
            return cls(wire["kind"], wire["ring_bits"], tuple(wire["shape"]), tuple(wire["shape_b"]),
                       wire["out_ring_bits"], wire["shift"], wire.get("owner", -1))
        except (ParameterError, TypeError) as exc:
            raise MalformedMessageError(f"invalid correlation request {wire!r}: {exc}") from exc


_WIRE_KEYS = frozenset({"kind", "ring_bits", "shape", "shape_b", "out_ring_bits", "shift"})


def spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...] = (), out_ring_bits: int = 0,
         shift: int = 0, owner: int = -1) -> CorrelationSpec:
    """``CorrelationSpec(...)``, one shared (immutable) object per distinct spec: the engine names the
    correlation of every operation, often twice (a planning wrapper and the provider), thousands of times."""
    try:
        return _shared_spec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner)
    except TypeError:  # unhashable fields (a list shape): an unshared spec, which normalises them
        return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner)


@functools.lru_cache(maxsize=4096)
def _shared_spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...], out_ring_bits: int,
                 shift: int, owner: int) -> CorrelationSpec:
    return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner)


_VALIDATED: dict[tuple[Any, ...], dict[str, Any]] = {}  # the normalised fields of validated specs
_MAX_VALIDATED = 4096  # distinct specs remembered (a long program uses a few hundred)


def convert_unsigned(a: RingArray, src: Ring, dst: Ring) -> RingArray:
    """Residues ``a`` of ``src`` read as unsigned integers, reduced into ``dst``."""
    if src == dst:
        return a
    if isinstance(dst, Z2_128):
        if isinstance(src, Z2_128):  # pragma: no cover - equal rings handled above
            return a
        return np.stack([a, np.zeros_like(a)])
    low = a[0] if isinstance(src, Z2_128) else a
    if isinstance(dst, Z2k) and dst.bits < 64:
        return low & np.uint64((1 << dst.bits) - 1)
    return np.array(low, copy=True)


CORRECTED = {"mul": ("c",), "matmul": ("c",), "square": ("c",), "wrap": ("msb", "low"), "compare": ("bits",),
             "and": ("c",), "dabit": ("s",), "mul_wrap": ("c", "msb", "low"), "matmul_wrap": ("c", "msb", "low"),
             "square_wrap": ("c", "msb", "low"), "matmul_owned_wrap": ("c", "msb", "low"),
             "mul_owned_wrap": ("c", "msb", "low")}
"""The parts of each kind that party 0 receives from the dealer instead of drawing them."""


def draw(spec: CorrelationSpec, stream: UniformSource, *, index: int) -> dict[str, npt.NDArray[Any]]:
    """The uniform parts of the correlation of the party at position ``index`` among the computing parties,
    expanded from its dealer stream.

    Party 0 does not draw the parts the dealer corrects (:data:`CORRECTED`); in the :data:`OWNED` kinds only
    the owner draws ``a`` and only the others draw ``b``.
    """
    out: dict[str, npt.NDArray[Any]] = {}
    for name, how, shape, bits in _draw_plan(spec, index):
        if how == 0:  # uniform words (Z_2^128 limbs as Z2_128.random draws them, XOR-shared words)
            out[name] = stream.uint64(shape)
        elif how == 1:  # elements of a one-word ring (Z2k.random)
            out[name] = stream.ring(shape, bits)
        else:  # bits
            out[name] = stream.bits(shape)
    return out


@functools.lru_cache(maxsize=4096)
def _draw_plan(spec: CorrelationSpec, index: int) -> tuple[tuple[str, int, tuple[int, ...], int], ...]:
    """What :func:`draw` expands for the party at ``index``, in stream order: ``(name, how, array shape, bits)``
    per part (``how``: 0 uniform words, 1 elements of the one-word ring of ``bits``, 2 bits), the corrected parts
    skipped for party 0 and, in the :data:`OWNED` kinds, ``a`` for all but the owner and ``b`` for the owner:
    exactly the draws of ``Ring.random`` and the stream's ``uint64``/``bits``.
    The order is the protocol's: changing it changes every party's and the dealer's parts."""
    ring, shape, kind = spec.ring, spec.shape, spec.kind
    parts: list[tuple[str, Ring, tuple[int, ...]] | tuple[str, None, tuple[int, ...]]] = []
    if spec.product:
        c_shape = _c_shape(spec)
        parts.append(("a", ring, shape))
        if spec.product != "square":
            parts.append(("b", ring, spec.shape_b))
        parts.append(("c", ring, c_shape))
        if kind.endswith("_wrap"):
            parts += [("msb", spec.out_ring, c_shape), ("low", spec.out_ring, c_shape)]
    elif kind == "wrap":
        parts += [("r", ring, shape), ("msb", spec.out_ring, shape), ("low", spec.out_ring, shape)]
    elif kind == "compare":
        parts += [("r", ring, shape), ("bits", None, (ring.words, *shape))]
    elif kind == "and":
        parts += [("a", None, shape), ("b", None, shape), ("c", None, shape)]
    else:  # dabit
        parts += [("bit", None, shape), ("s", ring, shape)]
    skip = CORRECTED[kind] if index == 0 else ()
    if kind in OWNED:
        skip = (*skip, "b" if index == spec.owner else "a")
    plan = []
    for name, part_ring, part_shape in parts:
        if name in skip:
            continue
        if part_ring is None:  # words, or bits for the daBit's XOR share
            plan.append((name, 2 if name == "bit" else 0, part_shape, 64))
        elif isinstance(part_ring, Z2_128):
            plan.append((name, 0, (2, *part_shape), 128))
        else:
            plan.append((name, 1, part_shape, part_ring.bits))
    return tuple(plan)


@functools.lru_cache(maxsize=8192)
def draw_shape(spec: CorrelationSpec, name: str) -> tuple[int, ...]:
    """The array shape of part ``name`` of a correlation (ring layout included)."""

    def layout(ring: Ring, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (2, *shape) if isinstance(ring, Z2_128) else shape

    kind, ring = spec.kind, spec.ring
    if spec.product:
        if name in ("msb", "low"):  # the truncation's parts, in the output ring
            return layout(spec.out_ring, _c_shape(spec))
        return layout(ring, {"a": spec.shape, "b": spec.shape_b}[name] if name in ("a", "b") else _c_shape(spec))
    if kind == "wrap" and name != "r":
        return layout(spec.out_ring, spec.shape)
    if kind == "compare" and name == "bits":
        return (ring.words, *spec.shape)
    if kind == "and" or (kind == "dabit" and name == "bit"):
        return spec.shape
    return layout(ring, spec.shape)


@functools.lru_cache(maxsize=4096)
def _c_shape(spec: CorrelationSpec) -> tuple[int, ...]:
    """The shape of the product (of ``c``, ``msb``, ``low``) of a product kind."""
    if spec.product == "matmul":
        return matmul_shape(spec.shape, spec.shape_b)
    if spec.product == "square":
        return spec.shape
    return tuple(np.broadcast_shapes(spec.shape, spec.shape_b))


def _ring_sum(ring: Ring, parts: Sequence[RingArray]) -> RingArray:
    total = parts[0]
    for p in parts[1:]:
        total = ring.add(total, p)
    return total


def _xor_sum(parts: Sequence[RingArray]) -> RingArray:
    total = np.array(parts[0], copy=True)
    for p in parts[1:]:
        total ^= p
    return total


def deal(spec: CorrelationSpec, streams: Sequence[UniformSource], *,
         own: UniformSource | None = None) -> dict[str, RingArray]:
    """The dealer's side: expand every party's stream and return party 0's corrections.

    Party 0 replaces the parts named in the result by the returned arrays; the other parties keep their
    drawn parts unchanged. ``own`` is the dealer's private stream, for the masks of the ``*_wrap`` kinds.
    """
    if spec.kind.endswith("_wrap") and own is None:
        raise ParameterError(explain("own", None, f"the dealer's own random stream for {spec.kind}",
                                     "pass own=AesCtrPrg(secret key)"))
    if spec.kind in OWNED and spec.owner >= len(streams):
        raise ParameterError(explain("owner", spec.owner, f"a party position below {len(streams)}",
                                     "name one of the computing parties"))
    parts = [draw(spec, s, index=i) for i, s in enumerate(streams)]
    r = spec.ring.random(own, _c_shape(spec)) if own is not None and spec.kind.endswith("_wrap") else None
    names = CORRECTED[spec.kind]
    dests = tuple(np.empty(draw_shape(spec, name), dtype=np.uint64) for name in names)
    _corrections(spec, parts, r, dests)
    return dict(zip(names, dests, strict=True))


def _corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]], r: RingArray | None,
                 dests: Sequence[RingArray]) -> None:
    """Write party 0's corrections of ``spec`` into ``dests`` (uint64 arrays of the :func:`draw_shape` of the
    parts named in :data:`CORRECTED`, in that order) from every party's drawn ``parts`` (party 0's first)
    and, for the ``*_wrap`` kinds, the dealer's mask ``r`` (a uniform element of the ring)."""
    if _fast(spec):
        _fast_corrections(spec, parts, r, dests)
    else:
        for dest, value in zip(dests, _ring_corrections(spec, parts, r), strict=True):
            dest[...] = value


def _ring_corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]],
                      r: RingArray | None) -> tuple[RingArray, ...]:
    """:func:`_corrections` by the ring's methods: the reference (and the path for 0-d operands)."""
    ring, kind = spec.ring, spec.kind

    def total(name: str, r: Ring = ring) -> RingArray:  # over the parties that draw the part (OWNED: a or b)
        drawn = [p[name] for p in parts if name in p]
        return _ring_sum(r, drawn) if drawn else r.zeros({"a": spec.shape, "b": spec.shape_b}[name])

    def others(name: str, r: Ring = ring) -> RingArray:
        rest = [p[name] for p in parts[1:]]
        return _ring_sum(r, rest) if rest else r.zeros(_c_shape(spec) if spec.product else spec.shape)

    def wrap_parts(r: RingArray, out: Ring) -> tuple[RingArray, RingArray]:
        msb = convert_unsigned(ring.msb(r), _Z64, out)  # the bit as an element of the output ring
        low = convert_unsigned(ring.shr(ring.clear_msb(r), spec.shift), ring, out)
        return out.sub(msb, others("msb", out)), out.sub(low, others("low", out))

    if spec.product:
        a = total("a")
        b = a if spec.product == "square" else total("b")
        c = ring.matmul(a, b) if spec.product == "matmul" else ring.mul(a, b)
        if r is None or not kind.endswith("_wrap"):
            return (ring.sub(c, others("c")),)
        return (ring.sub(ring.add(c, r), others("c")), *wrap_parts(r, spec.out_ring))
    if kind == "wrap":
        return wrap_parts(total("r"), spec.out_ring)
    if kind == "compare":
        r = total("r")
        rest_bits = [p["bits"] for p in parts[1:]]
        words = ring.bit_words(r)
        return (words ^ _xor_sum(rest_bits) if rest_bits else words,)
    if kind == "and":
        a = _xor_sum([p["a"] for p in parts])
        b = _xor_sum([p["b"] for p in parts])
        rest = [p["c"] for p in parts[1:]]
        return ((a & b) ^ _xor_sum(rest) if rest else a & b,)
    # dabit: the bit is the XOR of every party's drawn bit; only party 0's arithmetic share is corrected
    bit = _xor_sum([p["bit"] for p in parts]).astype(np.uint64)
    return (ring.sub(bit if isinstance(ring, Z2k) else ring.from_int(bit), others("s")),)


_Z64 = Z2k(64)


@functools.lru_cache(maxsize=4096)
def _fast(spec: CorrelationSpec) -> bool:
    """Whether :func:`_fast_corrections` applies: no 0-d operand (numpy scalars would not take in-place
    ufuncs)."""
    shapes = (spec.shape, spec.shape_b, _c_shape(spec)) if spec.product else (spec.shape,)
    return all(len(s) > 0 for s in shapes)


_TOP = np.uint64((1 << 63) - 1)


def _sub_into(v: RingArray, o: RingArray, bits: int) -> None:
    """``v -= o`` in Z_2^bits on raw words (one-word rings unreduced; Z_2^128 as (low, high) limbs)."""
    if bits == 128:
        borrow = np.less(v[0], o[0])
        np.subtract(v, o, out=v)
        np.subtract(v[1], borrow, out=v[1])
    else:
        np.subtract(v, o, out=v)


def _fast_corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]], r: RingArray | None,
                      dests: Sequence[RingArray]) -> None:
    """:func:`_corrections` on raw uint64 words, written straight into ``dests`` (a dealer's reply): one-word
    rings computed modulo 2^64 and reduced modulo 2^bits at the end (reduction commutes with +, - and *),
    Z_2^128 on its two limbs with explicit carries (its products by the ring's own methods). The same words
    as the ring-method path :func:`_ring_corrections` (tests compare them); ``parts`` are not modified."""
    kind, bits, out_bits, rest = spec.kind, spec.ring_bits, spec.out_ring_bits, parts[1:]
    first = parts[0]

    def total(name: str) -> RingArray:  # a fresh array: the sum of the part over the parties that draw it
        drawn = [p[name] for p in parts if name in p] if kind in OWNED else [p[name] for p in parts]
        if not drawn:  # an owned product's B with no party but the owner: zero
            return np.zeros(draw_shape(spec, name), dtype=np.uint64)
        x = drawn[0]
        if len(drawn) == 1:
            return x.copy()
        o = drawn[1]
        out: RingArray = np.add(x, o)
        if bits == 128:
            np.add(out[1], np.less(out[0], o[0]), out=out[1])  # carry
        for o in drawn[2:]:
            np.add(out, o, out=out)
            if bits == 128:
                np.add(out[1], np.less(out[0], o[0]), out=out[1])
        if bits < 64:
            np.bitwise_and(out, np.uint64((1 << bits) - 1), out=out)
        return out

    def fix(lo: RingArray, hi: RingArray | None, name: str, out_bits: int, dest: RingArray) -> None:
        # dest = value - the others' parts, reduced; value = lo in a one-word ring, (lo, hi) in Z_2^128
        # (hi None: a value below 2^64)
        if out_bits == 128:
            if not rest:
                dest[0] = lo
                dest[1] = 0 if hi is None else hi
                return
            o = rest[0][name]
            borrow = np.less(lo, o[0])
            np.subtract(lo, o[0], out=dest[0])
            if hi is None:
                np.negative(o[1], out=dest[1])
            else:
                np.subtract(hi, o[1], out=dest[1])
            np.subtract(dest[1], borrow, out=dest[1])
            for p in rest[1:]:
                _sub_into(dest, p[name], 128)
            return
        if rest:
            np.subtract(lo, rest[0][name], out=dest)
            for p in rest[1:]:
                np.subtract(dest, p[name], out=dest)
        else:
            dest[...] = lo
        if out_bits < 64:
            np.bitwise_and(dest, np.uint64((1 << out_bits) - 1), out=dest)

    def wrap_parts(r: RingArray, msb_dest: RingArray, low_dest: RingArray) -> None:  # r: reduced residues
        shift = spec.shift
        if bits == 128:  # msb: the high limb's top bit; low: (r mod 2^127) >> shift on two limbs
            msb = np.right_shift(r[1], np.uint64(63))
            high = np.bitwise_and(r[1], _TOP)
            if shift == 0:
                low, low_high = r[0], high
            elif shift < 64:
                low = np.right_shift(r[0], np.uint64(shift))
                np.bitwise_or(low, np.left_shift(high, np.uint64(64 - shift)), out=low)
                low_high = np.right_shift(high, np.uint64(shift), out=high)
            else:
                low, low_high = np.right_shift(high, np.uint64(shift - 64), out=high), None
        else:
            msb = np.right_shift(r, np.uint64(bits - 1))
            low, low_high = np.bitwise_and(r, np.uint64((1 << (bits - 1)) - 1)), None
            if shift:
                np.right_shift(low, np.uint64(shift), out=low)
        fix(msb, None, "msb", out_bits, msb_dest)
        fix(low, low_high if out_bits == 128 else None, "low", out_bits, low_dest)

    product = _PRODUCTS.get(kind)
    if product is not None:
        a = total("a")
        if product == "square":
            c = spec.ring.mul(a, a) if bits == 128 else np.multiply(a, a)
        else:
            b = total("b")
            if product == "matmul":
                c = spec.ring.matmul(a, b)
            else:
                c = spec.ring.mul(a, b) if bits == 128 else np.multiply(a, b)
        if r is not None and kind.endswith("_wrap"):
            np.add(c, r, out=c)
            if bits == 128:
                np.add(c[1], np.less(c[0], r[0]), out=c[1])  # carry
            wrap_parts(r, dests[1], dests[2])
        if bits == 128:
            fix(c[0], c[1], "c", 128, dests[0])
        else:
            fix(c, None, "c", bits, dests[0])
        return
    if kind == "wrap" or kind == "compare":
        r = total("r")
        if kind == "wrap":
            wrap_parts(r, dests[0], dests[1])
            return
        words = r if bits == 128 else r.reshape((1, *r.shape))  # the ring's bit words: the residue itself
        dest = dests[0]
        if rest:
            np.bitwise_xor(words, rest[0]["bits"], out=dest)
            for p in rest[1:]:
                np.bitwise_xor(dest, p["bits"], out=dest)
        else:
            dest[...] = words
        return
    if kind == "and":
        a, b = first["a"], first["b"]
        if rest:
            a, b = np.bitwise_xor(a, rest[0]["a"]), np.bitwise_xor(b, rest[0]["b"])
            for p in rest[1:]:
                np.bitwise_xor(a, p["a"], out=a)
                np.bitwise_xor(b, p["b"], out=b)
        dest = dests[0]
        np.bitwise_and(a, b, out=dest)
        for p in rest:
            np.bitwise_xor(dest, p["c"], out=dest)
        return
    # dabit: the bit is the XOR of every party's drawn bit; only party 0's arithmetic share is corrected
    bit = first["bit"]
    if rest:
        bit = np.bitwise_xor(bit, rest[0]["bit"])
        for p in rest[1:]:
            np.bitwise_xor(bit, p["bit"], out=bit)
    fix(bit.astype(np.uint64), None, "s", bits, dests[0])


class CorrelationBatch:
    """The correlations of one request, laid out once for every stream and reply.

    A planned protocol step requests the same list of correlations every step; laying the list out once
    (which words of a stream each part takes, where each correction sits in the dealer's reply) leaves
    per request one keystream call per stream and a slice per part, instead of a draw call per part.
    The parts are exactly those of :func:`draw` and :func:`deal` called spec by spec in list order (a
    stream serves its words in order however the draws are split; other streams fall back to that loop).

    Parameters
    ----------
    specs:
        The correlations, in request order.
    """

    __slots__ = ("_draw_layouts", "_fast", "_own_layout", "correction_layout", "elements", "reply_offsets", "specs")

    def __init__(self, specs: Sequence[CorrelationSpec]) -> None:
        self.specs = tuple(specs)
        self._draw_layouts: dict[int, tuple[int, tuple[tuple[tuple[str, int, int, int, tuple[int, ...], int],
                                                               ...], ...]]] = {}
        own: list[tuple[int, int, tuple[int, ...], int] | None] = []
        pos = 0
        for s in self.specs:  # the dealer's masks of the *_wrap kinds, in request order
            if s.kind.endswith("_wrap"):
                shape = draw_shape(s, "c")
                own.append((pos, pos + math.prod(shape), shape, s.ring_bits))
                pos += math.prod(shape)
            else:
                own.append(None)
        self._own_layout = (pos, tuple(own))
        layout, offsets, pos = [], [0], 0
        for s in self.specs:  # party 0's corrections, as they follow each other in a reply
            entry = []
            for name in CORRECTED[s.kind]:
                shape = draw_shape(s, name)
                entry.append((name, shape, pos, pos + math.prod(shape)))
                pos += math.prod(shape)
            layout.append(tuple(entry))
            offsets.append(pos)
        self.correction_layout: tuple[tuple[tuple[str, tuple[int, ...], int, int], ...], ...] = tuple(layout)
        """Per correlation: ``(name, shape, start, stop)`` of each correction in the words of a full reply."""
        self.reply_offsets = tuple(offsets)
        """Where correlation ``i``'s corrections start in the words of a full reply (and the total, last)."""
        self.elements = sum(math.prod(s.shape) + math.prod(s.shape_b) for s in self.specs)
        self._fast = tuple(_fast(s) for s in self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def _draw_layout(self, index: int) -> tuple[int, tuple[tuple[tuple[str, int, int, int, tuple[int, ...], int],
                                                                   ...], ...]]:
        known = self._draw_layouts.get(index)
        if known is None:
            pos, per_spec = 0, []
            for s in self.specs:
                entry = []
                for name, how, shape, bits in _draw_plan(s, index):
                    count = math.prod(shape)
                    words = (count + 63) // 64 if how == 2 else count
                    entry.append((name, how, pos, pos + words, shape, bits if how == 1 else count))
                    pos += words
                per_spec.append(tuple(entry))
            known = self._draw_layouts[index] = (pos, tuple(per_spec))
        return known

    def draw(self, stream: UniformSource, *, index: int) -> list[dict[str, npt.NDArray[Any]]]:
        """Every correlation's parts from ``stream``, the party at ``index``'s (:func:`draw` for each spec, in
        order)."""
        if type(stream) is not AesCtrPrg:
            return [draw(s, stream, index=index) for s in self.specs]
        total, per_spec = self._draw_layout(index)
        words = stream.uint64(total)
        out = []
        for entry in per_spec:
            parts: dict[str, npt.NDArray[Any]] = {}
            for name, how, start, stop, shape, arg in entry:
                w = words[start:stop]
                if how == 2:  # bits: arg is their count
                    parts[name] = np.unpackbits(w.view(np.uint8), count=arg, bitorder="little").reshape(shape)
                    continue
                if how == 1 and arg < 64:  # elements of a narrow ring: arg is its bits
                    np.bitwise_and(w, np.uint64((1 << arg) - 1), out=w)
                parts[name] = w if len(shape) == 1 else w.reshape(shape)  # a slice is already 1-D
            out.append(parts)
        return out

    def masks(self, own: UniformSource) -> list[RingArray | None]:
        """The dealer's masks ``r`` of the ``*_wrap`` correlations from its own stream (``None`` elsewhere)."""
        total, layout = self._own_layout
        if type(own) is not AesCtrPrg:
            return [None if at is None else s.ring.random(own, _c_shape(s)) for s, at in zip(self.specs, layout,
                                                                                              strict=True)]
        words = own.uint64(total)
        out: list[RingArray | None] = []
        for at in layout:
            if at is None:
                out.append(None)
                continue
            start, stop, shape, bits = at
            w = words[start:stop]
            if bits < 64:
                np.bitwise_and(w, np.uint64((1 << bits) - 1), out=w)
            out.append(w.reshape(shape))
        return out

    def corrections(self, parts: Sequence[Sequence[dict[str, RingArray]]], masks: Sequence[RingArray | None],
                    start: int = 0, stop: int | None = None) -> npt.NDArray[np.uint64]:
        """Party 0's corrections of correlations ``start:stop``, flat: the words of a reply.

        ``parts`` holds each party's :meth:`draw` (party 0's first), ``masks`` the :meth:`masks`.
        """
        stop = len(self.specs) if stop is None else stop
        offset = self.reply_offsets[start]
        out = np.empty(self.reply_offsets[stop] - offset, dtype=np.uint64)
        specs, fast, layout = self.specs, self._fast, self.correction_layout
        for i in range(start, stop):
            dests = [view if len(shape) == 1 else view.reshape(shape)  # a slice is already 1-D
                     for _, shape, lo, hi in layout[i] for view in (out[lo - offset : hi - offset],)]
            if fast[i]:
                _fast_corrections(specs[i], [p[i] for p in parts], masks[i], dests)
            else:
                _corrections(specs[i], [p[i] for p in parts], masks[i], dests)
        return out


@functools.lru_cache(maxsize=512)
def batch(specs: tuple[CorrelationSpec, ...]) -> CorrelationBatch:
    """The :class:`CorrelationBatch` of ``specs``, one shared object per distinct list (a planned step's
    request repeats every step)."""
    return CorrelationBatch(specs)
