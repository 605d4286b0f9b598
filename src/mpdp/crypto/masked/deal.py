"""The dealer's side of a masked-wire plan: every party's drawn parts in, party 0's corrections and the public parts
out.

The dealer expands each party's stream exactly as the party does (:meth:`~mpdp.crypto.masked.plan.MaskedPlan.
draw_plan`), so it knows every mask: an opening's ``r`` is the sum of the parties' drawn shares (an owned opening's
is its owner's), and its atoms follow from ``r``. It then walks the items in order and computes each secret from the
atoms: products of atoms (``mono``), the comparison keys of the masks' views with their payloads (``dcf``, two
computing parties), the function tables (``table``). Party 0's correction of a secret ``S`` is ``S`` minus the other
parties' drawn shares of it.

Security: see :mod:`mpdp.crypto.masked.plan`; the corrections are uniform to party 0 because the other parties'
shares are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fss_payload import dcf_gen_payload
from mpdp.crypto.masked.plan import AtomRef, DcfItem, MaskedPlan, MonoItem, OpenItem, TableItem
from mpdp.crypto.ring import Ring, RingArray, Z2k, convert_unsigned, ring_for_bits
from mpdp.errors import ParameterError, explain

__all__ = ["deal_plan", "mask_view"]

_Z64 = Z2k(64)


def _sum(ring: Ring, arrays: Sequence[RingArray]) -> RingArray:
    total = arrays[0]
    for a in arrays[1:]:
        total = ring.add(total, a)
    return total


def mask_view(ring: Ring, mask: RingArray, shift: int, bits: int) -> npt.NDArray[np.uint64]:
    """``(mask >> shift) mod 2^bits`` as uint64 words, one per value (``shift + bits`` within the ring)."""
    shifted = ring.shr(mask, shift) if shift else mask
    low = shifted[0] if ring.bits == 128 else shifted
    out: npt.NDArray[np.uint64] = np.array(low, dtype=np.uint64, copy=True)
    if bits < 64:
        out &= np.uint64((1 << bits) - 1)
    return out


class _Dealer:
    """The atoms of a plan and the secrets of its items, from every party's drawn parts (party 0's first)."""

    def __init__(self, plan: MaskedPlan, parts: Sequence[dict[str, RingArray]]) -> None:
        self.plan = plan
        self.parts = parts
        self.atoms: dict[tuple[int, str], RingArray] = {}
        self.out: dict[str, RingArray] = {}

    def atom(self, ref: AtomRef) -> RingArray:
        value = self.atoms[(ref.item, ref.name)]
        if ref.shape is None:
            return value
        _, bits = self.plan.atoms[(ref.item, ref.name)]
        return ring_for_bits(bits).reshape(value, ref.shape)

    def monomial(self, refs: tuple[AtomRef, ...], ring: Ring, shape: tuple[int, ...] | None = None) -> RingArray:
        """The product of the atoms ``refs`` (numpy broadcasting), broadcast to ``shape`` if given (the empty
        product: 1)."""
        if not refs:
            return ring.from_int(np.ones(() if shape is None else shape, dtype=np.int64))
        value = self.atom(refs[0])
        for ref in refs[1:]:
            value = ring.mul(value, self.atom(ref))
        return ring.broadcast_to(value, shape) if shape is not None and ring.shape(value) != shape else value

    def correct(self, name: str, ring: Ring, secret: RingArray) -> None:
        """Party 0's part of ``secret``: the secret minus the other parties' drawn parts."""
        others = [p[name] for p in self.parts[1:]]
        self.out[name] = ring.sub(secret, _sum(ring, others)) if others else secret

    def view(self, terms: tuple[tuple[int, AtomRef], ...], ring: Ring, shift: int,
             bits: int) -> npt.NDArray[np.uint64]:
        mask = ring.zeros(ring.shape(self.atom(terms[0][1])))
        for coef, ref in terms:
            mask = ring.add(mask, ring.mul_int(self.atom(ref), coef))
        return mask_view(ring, mask, shift, bits).reshape(-1)

    def run(self) -> dict[str, RingArray]:
        for i, item in enumerate(self.plan.items):
            if isinstance(item, OpenItem):
                self.open(i, item)
            elif isinstance(item, MonoItem):
                ring = ring_for_bits(item.bits)
                value = self.monomial(item.factors, ring)
                if item.reduce:
                    value = ring.sum(value, item.reduce)
                self.correct(f"{i}.v", ring, value)
            elif isinstance(item, DcfItem):
                self.dcf(i, item)
            else:
                self.table(i, item)
        return self.out

    def open(self, i: int, item: OpenItem) -> None:
        ring_in, ring_out = ring_for_bits(item.in_bits), ring_for_bits(item.out_bits)
        if item.kind == "owned":
            self.atoms[(i, "r")] = self.parts[item.owner][f"{i}.r"]
            return
        r = _sum(ring_in if item.kind == "trunc" else ring_out, [p[f"{i}.r"] for p in self.parts])
        if item.kind == "plain":
            self.atoms[(i, "r")] = r
            return
        k, bits = item.shift, item.in_bits
        msb = convert_unsigned(ring_in.msb(r), _Z64, ring_out)
        low = convert_unsigned(ring_in.shr(ring_in.clear_msb(r), k), ring_in, ring_out)
        self.correct(f"{i}.msb", ring_out, msb)
        self.correct(f"{i}.low", ring_out, low)
        weight = bits - 1 - k
        b = ring_out.neg(ring_out.shl(msb, weight)) if weight < ring_out.bits else ring_out.zeros(item.shape)
        self.atoms[(i, "A")] = low
        self.atoms[(i, "B")] = b

    def dcf(self, i: int, item: DcfItem) -> None:
        if len(self.parts) != 2:
            raise ParameterError(explain("computing parties", len(self.parts), "2 for a comparison key",
                                         "run masked comparisons with two computing parties"))
        ring, out = ring_for_bits(item.bits), ring_for_bits(item.out_bits)
        alpha = self.view(item.terms, ring, item.shift, item.depth)
        n = alpha.shape[0]
        beta = out.stack([out.reshape(self.monomial(m, out, item.shape), (n,)) for m in item.payload], 0)
        seeds = (self.parts[0][f"{i}.seed"], self.parts[1][f"{i}.seed"])
        cw, last = dcf_gen_payload(alpha, beta, seeds, item.depth, out)
        self.correct(f"{i}.beta", out, beta)
        self.out[f"{i}.cw"] = cw
        self.out[f"{i}.last"] = last

    def table(self, i: int, item: TableItem) -> None:
        ring, out = ring_for_bits(item.bits), ring_for_bits(item.out_bits)
        t = item.table
        lam = self.view(item.terms, ring, 0, t.view_bits)
        coef = out.from_rounded_float(np.rint(t.coefficients(lam) * 2.0**t.coef_frac))  # (N, M, D + 1)
        n = math.prod(item.shape)
        rows = []
        for mono in item.extras:
            if not mono:
                rows.append(coef)
                continue
            extra = out.reshape(self.monomial(mono, out, item.shape), (n, 1, 1))
            rows.append(out.mul(coef, extra))
        self.correct(f"{i}.coef", out, out.stack(rows, 0))


def deal_plan(plan: MaskedPlan, parts: Sequence[dict[str, RingArray]]) -> dict[str, RingArray]:
    """Party 0's corrections and the public parts of ``plan`` (name -> array), from every computing party's drawn
    ``parts`` (party 0's first)."""
    if len(parts) < 2:
        raise ParameterError(explain("computing parties", len(parts), "at least 2", "share among two or more parties"))
    for item in plan.items:
        if isinstance(item, OpenItem) and item.kind == "owned" and item.owner >= len(parts):
            raise ParameterError(explain("owner", item.owner, f"a position below {len(parts)}",
                                         "name one of the computing parties"))
    return _Dealer(plan, parts).run()
