"""The dealer's side: party 0's corrections, which make the parties' drawn parts satisfy their relation.

The dealer expands every party's stream as the parties do (:func:`~mpdp.crypto.correlations.parts.draw`),
computes the secrets from the sums of the parts, and returns for party 0 the value each corrected part must
take so that the shares sum to the relation (:func:`deal`). Two implementations compute the same words:
:func:`ring_corrections` by the ring's methods (the reference), and :func:`word_corrections` on raw uint64
words written straight into a reply (every spec without a 0-d operand, :func:`word_path_applies`).

Security: party 0's corrections are uniform because they are offset by the other parties' parts, which
party 0 never sees.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from mpdp.crypto.correlations.parts import draw, draw_shape, product_shape
from mpdp.crypto.correlations.specs import OWNED, CorrelationSpec, corrected_parts
from mpdp.crypto.fss import dcf_gen
from mpdp.crypto.masked.deal import deal_plan
from mpdp.crypto.ring import Ring, RingArray, UniformSource, Z2k, convert_unsigned
from mpdp.errors import ParameterError, explain

__all__ = ["corrections", "deal", "ring_corrections", "word_corrections", "word_path_applies"]


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
    r = spec.ring.random(own, product_shape(spec)) if own is not None and spec.kind.endswith("_wrap") else None
    names = corrected_parts(spec)
    dests = tuple(np.empty(draw_shape(spec, name), dtype=np.uint64) for name in names)
    corrections(spec, parts, r, dests)
    return dict(zip(names, dests, strict=True))


def corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]], r: RingArray | None,
                 dests: Sequence[RingArray]) -> None:
    """Write party 0's corrections of ``spec`` into ``dests`` (uint64 arrays of the :func:`draw_shape` of the
    parts named in :data:`CORRECTED`, in that order) from every party's drawn ``parts`` (party 0's first)
    and, for the ``*_wrap`` kinds, the dealer's mask ``r`` (a uniform element of the ring); a ``masked``
    correlation's from its plan (:func:`mpdp.crypto.masked.deal.deal_plan`)."""
    if spec.plan is not None:
        dealt = deal_plan(spec.plan, parts)
        for dest, name in zip(dests, corrected_parts(spec), strict=True):
            dest[...] = dealt[name]
    elif spec.kind == "dcf":
        for dest, value in zip(dests, dcf_corrections(spec, parts), strict=True):
            dest[...] = value
    elif word_path_applies(spec):
        word_corrections(spec, parts, r, dests)
    else:
        for dest, value in zip(dests, ring_corrections(spec, parts, r), strict=True):
            dest[...] = value


def ring_corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]],
                      r: RingArray | None) -> tuple[RingArray, ...]:
    """:func:`corrections` by the ring's methods: the reference (and the path for 0-d operands)."""
    ring, kind = spec.ring, spec.kind
    if spec.plan is not None:
        dealt = deal_plan(spec.plan, parts)
        return tuple(dealt[name] for name in corrected_parts(spec))
    if kind == "dcf":
        return dcf_corrections(spec, parts)

    def total(name: str, r: Ring = ring) -> RingArray:  # over the parties that draw the part (OWNED: a or b)
        drawn = [p[name] for p in parts if name in p]
        return _ring_sum(r, drawn) if drawn else r.zeros({"a": spec.shape, "b": spec.shape_b}[name])

    def others(name: str, r: Ring = ring) -> RingArray:
        rest = [p[name] for p in parts[1:]]
        return _ring_sum(r, rest) if rest else r.zeros(product_shape(spec) if spec.product else spec.shape)

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


def dcf_corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]]) -> tuple[RingArray, ...]:
    """A ``dcf`` correlation's dealt parts: party 0's share of ``b`` (bit ``d`` of ``r``, ``d`` the depth), and the
    DCF keys' common corrections ``cw`` and ``last`` for ``alpha = r mod 2^d`` and payload ``beta = 1 - 2 b``
    (:func:`mpdp.crypto.fss.dcf_gen` on the two parties' drawn root seeds). Two computing parties only."""
    if len(parts) != 2:
        raise ParameterError(explain("computing parties", len(parts), "2 for a DCF key (two-party FSS)",
                                     "use the circuit comparisons with more parties"))
    ring, depth = spec.ring, spec.shift
    r = ring.add(parts[0]["r"], parts[1]["r"])
    low = (r[0] if ring.words == 2 else r).reshape(-1)
    alpha = low & np.uint64((1 << depth) - 1)
    bit = (low >> np.uint64(depth)) & np.uint64(1)
    b = bit if ring.words == 1 else np.stack([bit, np.zeros_like(bit)])
    beta = ring.add_int(ring.neg(ring.add(b, b)), 1)
    seeds = (parts[0]["seed"].reshape(-1, 2), parts[1]["seed"].reshape(-1, 2))
    cw, last = dcf_gen(alpha, beta, seeds, depth, ring)
    layout = draw_shape(spec, "b")
    return ring.sub(b.reshape(layout), parts[1]["b"]), cw, last.reshape(layout)


@functools.lru_cache(maxsize=4096)
def word_path_applies(spec: CorrelationSpec) -> bool:
    """Whether :func:`word_corrections` applies: no 0-d operand (numpy scalars would not take in-place
    ufuncs)."""
    if spec.kind in ("dcf", "masked"):
        return False
    shapes = (spec.shape, spec.shape_b, product_shape(spec)) if spec.product else (spec.shape,)
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


def word_corrections(spec: CorrelationSpec, parts: Sequence[dict[str, RingArray]], r: RingArray | None,
                      dests: Sequence[RingArray]) -> None:
    """:func:`corrections` on raw uint64 words, written straight into ``dests`` (a dealer's reply): one-word
    rings computed modulo 2^64 and reduced modulo 2^bits at the end (reduction commutes with +, - and *),
    Z_2^128 on its two limbs with explicit carries (its products by the ring's own methods). The same words
    as the ring-method path :func:`ring_corrections` (tests compare them); ``parts`` are not modified."""
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

    product = spec.product or None
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
