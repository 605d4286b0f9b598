"""What to deal: the kinds of correlation, and :class:`CorrelationSpec`, one request for one of them.

A spec names the kind, its ring(s) and operand shape(s); it is validated once, hashable, and travels on the
wire as a dict of public fields (:meth:`CorrelationSpec.to_wire`, decoded strictly by
:meth:`CorrelationSpec.from_wire`). :func:`spec` returns one shared object per distinct spec.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpdp.crypto.masked.plan import MaskedPlan
from mpdp.crypto.ring import Ring, ring_for_bits
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError, explain

__all__ = ["CORRECTED", "KINDS", "MAX_ELEMENTS", "OWNED", "PUBLIC", "CorrelationSpec", "corrected_parts",
           "matmul_shape", "public_parts", "spec"]

KINDS = ("mul", "matmul", "square", "wrap", "compare", "and", "dabit", "mul_wrap", "matmul_wrap", "square_wrap",
         "matmul_owned_wrap", "mul_owned_wrap", "dcf", "masked")
_PRODUCTS = {"mul": "mul", "matmul": "matmul", "square": "square", "mul_wrap": "mul", "matmul_wrap": "matmul",
             "square_wrap": "square", "matmul_owned_wrap": "matmul", "mul_owned_wrap": "mul"}
OWNED = frozenset({"matmul_owned_wrap", "mul_owned_wrap"})
"""The kinds whose first operand's mask belongs to one party, ``CorrelationSpec.owner`` (its position)."""
MAX_ELEMENTS = 1 << 28  # one request may not ask for more than 2^28 elements (2 GiB of words)
CORRECTED = {"mul": ("c",), "matmul": ("c",), "square": ("c",), "wrap": ("msb", "low"), "compare": ("bits",),
             "and": ("c",), "dabit": ("s",), "mul_wrap": ("c", "msb", "low"), "matmul_wrap": ("c", "msb", "low"),
             "square_wrap": ("c", "msb", "low"), "matmul_owned_wrap": ("c", "msb", "low"),
             "mul_owned_wrap": ("c", "msb", "low"), "dcf": ("b", "cw", "last")}
"""The parts of each kind that party 0 receives from the dealer instead of drawing them."""
PUBLIC = {"dcf": ("cw", "last")}
"""The parts common to every party's correlation, which the dealer sends to the others too (a DCF key's
corrections: :mod:`mpdp.crypto.fss`)."""


def corrected_parts(spec: CorrelationSpec) -> tuple[str, ...]:
    """The parts of ``spec`` party 0 receives instead of drawing: :data:`CORRECTED`, or a masked plan's own."""
    return spec.plan.corrected() if spec.plan is not None else CORRECTED[spec.kind]


def public_parts(spec: CorrelationSpec) -> tuple[str, ...]:
    """The parts of ``spec`` every party receives: :data:`PUBLIC`, or a masked plan's own."""
    return spec.plan.public() if spec.plan is not None else PUBLIC.get(spec.kind, ())


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``A @ B`` under numpy's matmul rules, or ShapeMismatchError."""
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
    ``out_ring_bits`` and ``shift`` configure ``wrap`` (output ring, bits dropped); for ``dcf``, ``shift`` is
    the key's depth ``d`` (the comparison's bit width minus one, at most 63 and below ``ring_bits``);
    ``owner``, the position of the party holding the left operand among the computing parties, the
    :data:`OWNED` kinds (-1 elsewhere); ``plan``, the :class:`~mpdp.crypto.masked.plan.MaskedPlan` of a ``masked``
    correlation (every correlation of a masked-wire program, :mod:`mpdp.crypto.masked`; None elsewhere).
    """

    kind: str
    ring_bits: int
    shape: tuple[int, ...]
    shape_b: tuple[int, ...] = ()
    out_ring_bits: int = 0
    shift: int = 0
    owner: int = -1
    plan: MaskedPlan | None = None

    def __init__(self, kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...] = (),
                 out_ring_bits: int = 0, shift: int = 0, owner: int = -1, plan: MaskedPlan | None = None) -> None:
        # Protocols build the same few specs thousands of times (every operation names its correlation): a spec
        # whose fields were validated once takes the normalised fields of that validation instead of validating
        # again, written in one go (the fields of a frozen instance, set once here, as a generated __init__ would).
        fields = self.__dict__
        try:
            key = (kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner, plan)
            known = _VALIDATED.get(key)
        except TypeError:  # unhashable fields (e.g. a list shape): validate and normalise below
            key, known = None, None
        if known is not None:
            fields.update(known)
            return
        fields.update(kind=kind, ring_bits=ring_bits, shape=shape, shape_b=shape_b, out_ring_bits=out_ring_bits,
                      shift=shift, owner=owner, plan=plan)
        self._validate()
        # the hash of the fields, once (specs key the plans, layouts and remembered requests of every step)
        fields["_hash"] = hash((self.kind, self.ring_bits, self.shape, self.shape_b, self.out_ring_bits, self.shift,
                                self.owner, self.plan))
        if key is not None:
            if len(_VALIDATED) >= _MAX_VALIDATED:
                _VALIDATED.clear()
            _VALIDATED[key] = dict(fields)

    def __hash__(self) -> int:
        value: int = self.__dict__["_hash"]
        return value

    def _validate(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ParameterError(explain("kind", self.kind, f"one of {KINDS}", "request a known correlation"))
        ring_for_bits(self.ring_bits)
        object.__setattr__(self, "shape", _shape(self.shape, "shape"))
        object.__setattr__(self, "shape_b", _shape(self.shape_b, "shape_b"))
        out_bits = self.out_ring_bits or self.ring_bits
        ring_for_bits(out_bits)
        object.__setattr__(self, "out_ring_bits", out_bits)
        if not isinstance(self.shift, int) or not 0 <= self.shift < self.ring_bits:
            raise ParameterError(explain("shift", self.shift, f"0 <= shift < {self.ring_bits}", "shift fewer bits"))
        if (self.kind == "masked") != isinstance(self.plan, MaskedPlan) or (
                self.kind == "masked" and (self.shape or self.shape_b or self.shift or self.ring_bits != 128)):
            raise ParameterError(explain("plan", type(self.plan).__name__, "a MaskedPlan for kind 'masked' (ring 128, "
                                         "no shapes or shift), None for the other kinds",
                                         "request masked plans with spec('masked', 128, (), plan=...)"))
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
        if self.kind == "dcf" and not 1 <= self.shift <= min(63, self.ring_bits - 1):
            raise ParameterError(explain("dcf depth (shift)", self.shift, f"in [1, {min(63, self.ring_bits - 1)}]",
                                         "compare values of at most 64 bits"))
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
        if self.owner != -1:  # only the owned kinds carry it (the other kinds' requests have no owner field)
            wire["owner"] = self.owner
        if self.plan is not None:  # only masked correlations carry a plan
            wire["plan"] = self.plan.to_wire()
        return wire

    @classmethod
    def from_wire(cls, wire: Any) -> CorrelationSpec:
        if not isinstance(wire, dict) or set(wire) - {"owner", "plan"} != _WIRE_KEYS:
            raise MalformedMessageError(explain("correlation request", wire, "a CorrelationSpec wire dict",
                                                "run the same mpdp version on every party"))
        ints = ("ring_bits", "out_ring_bits", "shift", "owner") if "owner" in wire else \
            ("ring_bits", "out_ring_bits", "shift")
        exact = all(type(wire[k]) is int for k in ints) and all(
            type(wire[k]) is list and all(type(d) is int for d in wire[k]) for k in ("shape", "shape_b"))
        if type(wire["kind"]) is not str or not exact:
            raise MalformedMessageError(explain("correlation request", wire, "a str kind and int fields",
                                                "run the same mpdp version on every party"))
        plan = MaskedPlan.from_wire(wire["plan"]) if "plan" in wire else None
        try:
            return cls(wire["kind"], wire["ring_bits"], tuple(wire["shape"]), tuple(wire["shape_b"]),
                       wire["out_ring_bits"], wire["shift"], wire.get("owner", -1), plan)
        except (ParameterError, TypeError) as exc:
            raise MalformedMessageError(f"invalid correlation request {wire!r}: {exc}") from exc


_WIRE_KEYS = frozenset({"kind", "ring_bits", "shape", "shape_b", "out_ring_bits", "shift"})


def spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...] = (), out_ring_bits: int = 0,
         shift: int = 0, owner: int = -1, plan: MaskedPlan | None = None) -> CorrelationSpec:
    """``CorrelationSpec(...)``, one shared (immutable) object per distinct spec: the engine names the
    correlation of every operation, often twice (a planning wrapper and the provider), thousands of times."""
    try:
        return _shared_spec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner, plan)
    except TypeError:  # unhashable fields (a list shape): an unshared spec, which normalises them
        return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner, plan)


@functools.lru_cache(maxsize=4096)
def _shared_spec(kind: str, ring_bits: int, shape: tuple[int, ...], shape_b: tuple[int, ...], out_ring_bits: int,
                 shift: int, owner: int, plan: MaskedPlan | None) -> CorrelationSpec:
    return CorrelationSpec(kind, ring_bits, shape, shape_b, out_ring_bits, shift, owner, plan)


_VALIDATED: dict[tuple[Any, ...], dict[str, Any]] = {}  # the normalised fields of validated specs
_MAX_VALIDATED = 4096  # distinct specs remembered (a long program uses a few hundred)
