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

from mpdp.crypto.ring import Z2_128, Ring, RingArray, UniformSource, Z2k, ring_for_bits
from mpdp.errors import MalformedMessageError, ParameterError, explain

__all__ = ["CORRECTED", "KINDS", "MAX_ELEMENTS", "CorrelationSpec", "convert_unsigned", "deal", "draw", "draw_shape",
           "matmul_shape", "spec"]

KINDS = ("mul", "matmul", "square", "wrap", "compare", "and", "dabit", "mul_wrap", "matmul_wrap", "square_wrap")
_PRODUCTS = {"mul": "mul", "matmul": "matmul", "square": "square", "mul_wrap": "mul", "matmul_wrap": "matmul",
             "square_wrap": "square"}
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


@dataclass(frozen=True)
class CorrelationSpec:
    """What to deal: the kind, its ring(s) and shape(s).

    ``shape`` is the shape of the (first) operand; ``shape_b`` the second operand's for ``mul``/``matmul``;
    ``out_ring_bits`` and ``shift`` configure ``wrap`` (output ring, bits dropped).
    """

    kind: str
    ring_bits: int
    shape: tuple[int, ...]
    shape_b: tuple[int, ...] = ()
    out_ring_bits: int = 0
    shift: int = 0

    def __post_init__(self) -> None:
        # Protocols build the same few specs thousands of times (every operation names its correlation): a spec
        # whose fields were validated before takes the normalised fields of then instead of re-validating.
        try:
            key = (self.kind, self.ring_bits, self.shape, self.shape_b, self.out_ring_bits, self.shift)
            known = _VALIDATED.get(key)
        except TypeError:  # unhashable fields (e.g. a list shape): validate and normalise below
            key, known = None, None
        if known is not None:
            object.__setattr__(self, "shape", known[0])
            object.__setattr__(self, "shape_b", known[1])
            object.__setattr__(self, "out_ring_bits", known[2])
            return
        self._validate()
        if key is not None:
            if len(_VALIDATED) >= _MAX_VALIDATED:
                _VALIDATED.clear()
            _VALIDATED[key] = (self.shape, self.shape_b, self.out_ring_bits)

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
        if self.kind in ("mul", "mul_wrap"):
            try:
                np.broadcast_shapes(self.shape, self.shape_b)
            except ValueError as exc:
                raise ParameterError(explain("mul shapes", (self.shape, self.shape_b), "broadcastable shapes",
                                             "reshape the operands")) from exc
        if self.kind in ("matmul", "matmul_wrap"):
            matmul_shape(self.shape, self.shape_b)

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
        return {"kind": self.kind, "ring_bits": self.ring_bits, "shape": list(self.shape),
                "shape_b": list(self.shape_b), "out_ring_bits": self.out_ring_bits, "shift": self.shift}

    @classmethod
    def from_wire(cls, wire: Any) -> CorrelationSpec:
        if not isinstance(wire, dict) or set(wire) != {"kind", "ring_bits", "shape", "shape_b", "out_ring_bits",
                                                       "shift"}:
            raise MalformedMessageError(explain("correlation request", wire, "a CorrelationSpec wire dict",
                                                "run the same mpdp version on every party"))
        exact = all(type(wire[k]) is int for k in ("ring_bits", "out_ring_bits", "shift")) and all(
            type(wire[k]) is list and all(type(d) is int for d in wire[k]) for k in ("shape", "shape_b"))
        if type(wire["kind"]) is not str or not exact:
            raise MalformedMessageError(explain("correlation request", wire, "a str kind and int fields",
                                                "run the same mpdp version on every party"))
        try:
            return cls(wire["kind"], wire["ring_bits"], tuple(wire["shape"]), tuple(wire["shape_b"]),
                       wire["out_ring_bits"], wire["shift"])
        except (ParameterError, TypeError) as exc:
            raise MalformedMessageError(f"invalid correlation request {wire!r}: {exc}") from exc


def spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...] = (), out_ring_bits: int = 0,
         shift: int = 0) -> CorrelationSpec:
    """``CorrelationSpec(...)``, one shared (immutable) object per distinct spec: the engine names the
    correlation of every operation, often twice (a planning wrapper and the provider), thousands of times."""
    try:
        return _shared_spec(kind, ring_bits, shape, shape_b, out_ring_bits, shift)
    except TypeError:  # unhashable fields (a list shape): an unshared spec, which normalises them
        return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift)


@functools.lru_cache(maxsize=4096)
def _shared_spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...], out_ring_bits: int,
                 shift: int) -> CorrelationSpec:
    return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift)


_VALIDATED: dict[tuple[Any, ...], tuple[tuple[int, ...], tuple[int, ...], int]] = {}
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
             "square_wrap": ("c", "msb", "low")}
"""The parts of each kind that party 0 receives from the dealer instead of drawing them."""


def draw(spec: CorrelationSpec, stream: UniformSource, *, first: bool = False) -> dict[str, npt.NDArray[Any]]:
    """One party's uniform parts of the correlation, expanded from its dealer stream.

    With ``first`` (party 0) the parts the dealer corrects (:data:`CORRECTED`) are not drawn.
    """
    out: dict[str, npt.NDArray[Any]] = {}
    for name, how, shape, bits in _draw_plan(spec, first):
        if how == 0:  # uniform words (Z_2^128 limbs as Z2_128.random draws them, XOR-shared words)
            out[name] = stream.uint64(shape)
        elif how == 1:  # elements of a one-word ring (Z2k.random)
            out[name] = stream.ring(shape, bits)
        else:  # bits
            out[name] = stream.bits(shape)
    return out


@functools.lru_cache(maxsize=4096)
def _draw_plan(spec: CorrelationSpec, first: bool) -> tuple[tuple[str, int, tuple[int, ...], int], ...]:
    """What :func:`draw` expands, in stream order: ``(name, how, array shape, bits)`` per part (``how``: 0
    uniform words, 1 elements of the one-word ring of ``bits``, 2 bits), the corrected parts skipped for
    ``first``: exactly the draws of ``Ring.random`` and the stream's ``uint64``/``bits``.
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
    skip = CORRECTED[kind] if first else ()
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
    # 0-d operands make numpy scalars; the wire carries arrays.
    return {k: np.asarray(v, dtype=np.uint64) for k, v in _deal(spec, streams, own).items()}


def _deal(spec: CorrelationSpec, streams: Sequence[UniformSource],
          own: UniformSource | None) -> dict[str, RingArray]:
    parts = [draw(spec, s, first=i == 0) for i, s in enumerate(streams)]
    ring, kind = spec.ring, spec.kind

    def total(name: str, r: Ring = ring) -> RingArray:
        return _ring_sum(r, [p[name] for p in parts])

    def others(name: str, r: Ring = ring) -> RingArray:
        rest = [p[name] for p in parts[1:]]
        return _ring_sum(r, rest) if rest else r.zeros(_c_shape(spec) if spec.product else spec.shape)

    def wrap_parts(r: RingArray, out: Ring) -> dict[str, RingArray]:
        msb = convert_unsigned(ring.msb(r), Z2k(64), out)  # the bit as an element of the output ring
        low = convert_unsigned(ring.shr(ring.clear_msb(r), spec.shift), ring, out)
        return {"msb": out.sub(msb, others("msb", out)), "low": out.sub(low, others("low", out))}

    if spec.product:
        a = total("a")
        b = a if spec.product == "square" else total("b")
        c = ring.matmul(a, b) if spec.product == "matmul" else ring.mul(a, b)
        if own is None or not kind.endswith("_wrap"):
            return {"c": ring.sub(c, others("c"))}
        r = ring.random(own, _c_shape(spec))
        return {"c": ring.sub(ring.add(c, r), others("c")), **wrap_parts(r, spec.out_ring)}
    if kind == "wrap":
        return wrap_parts(total("r"), spec.out_ring)
    if kind == "compare":
        r = total("r")
        rest_bits = [p["bits"] for p in parts[1:]]
        words = ring.bit_words(r)
        return {"bits": words ^ _xor_sum(rest_bits) if rest_bits else words}
    if kind == "and":
        a = _xor_sum([p["a"] for p in parts])
        b = _xor_sum([p["b"] for p in parts])
        rest = [p["c"] for p in parts[1:]]
        return {"c": (a & b) ^ _xor_sum(rest) if rest else a & b}
    # dabit: the bit is the XOR of every party's drawn bit; only party 0's arithmetic share is corrected
    bit = _xor_sum([p["bit"] for p in parts]).astype(np.uint64)
    return {"s": ring.sub(bit if isinstance(ring, Z2k) else ring.from_int(bit), others("s"))}
