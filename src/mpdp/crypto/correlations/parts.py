"""The parts of a correlation each party holds: their shapes, and how a party draws its own from its stream.

Every party draws its uniform parts from the stream it shares with the dealer (:func:`draw`); the dealer
draws the same parts from every stream. :func:`draw_plan` fixes the order of the draws, which is the
protocol's: changing it changes every party's and the dealer's parts.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.correlations.specs import CORRECTED, OWNED, PUBLIC, CorrelationSpec, matmul_shape
from mpdp.crypto.ring import Z2_128, Ring, UniformSource

__all__ = ["draw", "draw_plan", "draw_shape", "product_shape"]


def draw(spec: CorrelationSpec, stream: UniformSource, *, index: int) -> dict[str, npt.NDArray[Any]]:
    """The uniform parts of the correlation of the party at position ``index`` among the computing parties,
    expanded from its dealer stream.

    Party 0 does not draw the parts the dealer corrects (:data:`CORRECTED`), nor does any party draw the
    :data:`PUBLIC` ones (the dealer sends them); in the :data:`OWNED` kinds only the owner draws ``a`` and only
    the others draw ``b``.
    """
    out: dict[str, npt.NDArray[Any]] = {}
    for name, how, shape, bits in draw_plan(spec, index):
        if how == 0:  # uniform words (Z_2^128 limbs as Z2_128.random draws them, XOR-shared words)
            out[name] = stream.uint64(shape)
        elif how == 1:  # elements of a one-word ring (Z2k.random)
            out[name] = stream.ring(shape, bits)
        else:  # bits
            out[name] = stream.bits(shape)
    return out


@functools.lru_cache(maxsize=4096)
def draw_plan(spec: CorrelationSpec, index: int) -> tuple[tuple[str, int, tuple[int, ...], int], ...]:
    """What :func:`draw` expands for the party at ``index``, in stream order: ``(name, how, array shape, bits)``
    per part (``how``: 0 uniform words, 1 elements of the one-word ring of ``bits``, 2 bits), the corrected parts
    skipped for party 0 and, in the :data:`OWNED` kinds, ``a`` for all but the owner and ``b`` for the owner:
    exactly the draws of ``Ring.random`` and the stream's ``uint64``/``bits``.
    The order is the protocol's: changing it changes every party's and the dealer's parts. A ``masked`` correlation
    draws its plan's parts (:meth:`~mpdp.crypto.masked.plan.MaskedPlan.draw_plan`)."""
    if spec.plan is not None:
        return spec.plan.draw_plan(index)
    ring, shape, kind = spec.ring, spec.shape, spec.kind
    parts: list[tuple[str, Ring, tuple[int, ...]] | tuple[str, None, tuple[int, ...]]] = []
    if spec.product:
        c_shape = product_shape(spec)
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
    elif kind == "dcf":  # r, the root seed, shares of r's bit d; the common corrections are public
        parts += [("r", ring, shape), ("seed", None, (*shape, 2)), ("b", ring, shape)]
    else:  # dabit
        parts += [("bit", None, shape), ("s", ring, shape)]
    skip = CORRECTED[kind] if index == 0 else PUBLIC.get(kind, ())
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
    if spec.plan is not None:
        return spec.plan.part_shape(name)
    if spec.product:
        if name in ("msb", "low"):  # the truncation's parts, in the output ring
            return layout(spec.out_ring, product_shape(spec))
        return layout(ring, {"a": spec.shape, "b": spec.shape_b}[name] if name in ("a", "b") else product_shape(spec))
    if kind == "wrap" and name != "r":
        return layout(spec.out_ring, spec.shape)
    if kind == "compare" and name == "bits":
        return (ring.words, *spec.shape)
    if kind == "dcf" and name in ("seed", "cw"):
        return (*spec.shape, 2) if name == "seed" else (spec.shift, 2 + ring.words, math.prod(spec.shape))
    if kind == "and" or (kind == "dabit" and name == "bit"):
        return spec.shape
    return layout(ring, spec.shape)


@functools.lru_cache(maxsize=4096)
def product_shape(spec: CorrelationSpec) -> tuple[int, ...]:
    """The shape of the product (of ``c``, ``msb``, ``low``) of a product kind."""
    if spec.product == "matmul":
        return matmul_shape(spec.shape, spec.shape_b)
    if spec.product == "square":
        return spec.shape
    return tuple(np.broadcast_shapes(spec.shape, spec.shape_b))

