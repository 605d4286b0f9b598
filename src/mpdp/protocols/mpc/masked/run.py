"""The executor: one computing party runs a compiled masked-wire program on its shares and its dealt material.

:func:`execute` first checks everything it was given (the material is the plan's, dealt in this session, for
this party, every part of its shape; the inputs are of the program's shapes, rings and scales and within their
bounds) and only then walks the nodes: each ``open`` is one exchange with every peer (a plain or truncating
opening's share, an owned opening's masked values from their owner), everything else is local arithmetic on
this party's shares, the public openings and the dealt parts. The results are
:class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` values of the session.

Security: semi-honest; every opened value is masked by a fresh uniform ``r``. A party's parts and the public
values reveal nothing else (see :mod:`~mpdp.protocols.mpc.masked.program`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.crypto.fss_payload import dcf_eval_payload
from mpdp.crypto.masked.plan import DcfItem, Item, OpenItem, TableItem
from mpdp.crypto.ring import Ring, RingArray, Z2k, convert_unsigned, ring_for_bits
from mpdp.errors import DomainError, KeyMismatchError, MalformedMessageError, ParameterError, explain
from mpdp.protocols.mpc.channel import Channel
from mpdp.protocols.mpc.masked.program import Compiled, Term
from mpdp.protocols.mpc.provider import MaskedMaterial
from mpdp.protocols.mpc.tensor import Session, SharedFixedPoint

__all__ = ["check_material", "execute"]

_Z64 = Z2k(64)
_LABEL = "mpc.masked"


def _opening(item: Item) -> OpenItem:
    if not isinstance(item, OpenItem):  # pragma: no cover - compiled programs reference their own opens
        raise ParameterError(explain("atom's item", type(item).__name__, "an opening", "compile with Program"))
    return item


def check_material(session: Channel, prog: Compiled, material: MaskedMaterial) -> None:
    """Refuse material of another plan, session, party or shape (:class:`~mpdp.errors.KeyMismatchError`)."""
    plan = prog.plan
    issuer = session.provider.dcf_issuer
    if material.digest != plan.digest or material.issuer != issuer or material.party != session.index:
        raise KeyMismatchError(explain("masked material", (material.digest.hex()[:16], material.issuer.hex(),
                                                           material.party),
                                       f"plan {plan.digest.hex()[:16]} dealt in this session ({issuer.hex()}) to party "
                                       f"{session.index}", "fetch the material of this program from this session"))
    expected = [name for name, _, _, _ in plan.draw_plan(session.index)]
    expected += list(plan.corrected() if session.index == 0 else plan.public())
    for name in expected:
        part = material.parts.get(name)
        if not isinstance(part, np.ndarray) or part.shape != plan.part_shape(name):
            raise KeyMismatchError(explain(f"masked material part {name}", getattr(part, "shape", part),
                                           f"shape {plan.part_shape(name)}", "fetch the material of this program"))


class _Run:
    """The state of one execution: per node its shares, public values or comparison results."""

    def __init__(self, session: Session, prog: Compiled, parts: dict[str, RingArray]) -> None:
        self.s = session
        self.prog = prog
        self.parts = parts
        self.vals: dict[int, Any] = {}
        self.opened: dict[int, tuple[RingArray, npt.NDArray[np.uint64] | None]] = {}  # item -> (pub, msb of c)
        self.atoms: dict[tuple[int, str], RingArray] = {}
        self.publics: dict[int, RingArray] | None = None
        self.consts: dict[str, Any] = {}

    def ring(self, node: int) -> Ring:
        return ring_for_bits(self.prog.meta[node][1])

    # -- masks ------------------------------------------------------------------------------------------------
    def atom(self, item: int, name: str) -> RingArray:
        """This party's share of an atom (zeros for another party's owned atom)."""
        key = (item, name)
        share = self.atoms.get(key)
        if share is None:
            it = _opening(self.prog.plan.items[item])
            ring = ring_for_bits(it.out_bits)
            if name == "r":
                share = self.parts.get(f"{item}.r")
                if share is None:  # an owned atom of another party
                    share = ring.zeros(it.shape)
            elif name == "A":
                share = self.parts[f"{item}.low"]
            else:
                share = ring.neg(ring.shl(self.parts[f"{item}.msb"], it.in_bits - 1 - it.shift))
            self.atoms[key] = share
        return share

    def signed(self, ring: Ring, share: RingArray, term: Term) -> RingArray:
        """``coef * sign * share`` of a mask term (``share`` of the term's shape)."""
        coef, item, _, signed, shape = term
        if signed:
            msb = self.opened[item][1]
            if msb is not None:
                flip = msb if shape is None else msb.reshape(shape)
                share = np.where(flip.astype(bool), ring.neg(share), share)
        return share if coef == 1 else ring.mul_int(share, coef)

    def term_share(self, ring: Ring, term: Term) -> RingArray:
        share = self.atom(term[1], term[2])
        if term[4] is not None:
            share = ring.reshape(share, term[4])
        return self.signed(ring, share, term)

    def mask(self, ring: Ring, terms: tuple[Term, ...]) -> RingArray:
        total = self.term_share(ring, terms[0])
        for t in terms[1:]:
            total = ring.add(total, self.term_share(ring, t))
        return total

    # -- rounds -----------------------------------------------------------------------------------------------
    def open(self, entries: tuple[tuple[str, int, int, int], ...], owned: Mapping[int, RingArray]) -> None:
        """One round: this party's masked shares of the plain and truncating openings and its own owned values to
        every peer; theirs back; the public values (and a truncation's ``msb(c)``) recorded per item."""
        s, plan = self.s, self.prog.plan
        me = s.index
        shares, layout, own = [], [], []
        items = {item: _opening(plan.items[item]) for _, _, item, _ in entries}
        for kind, src, item, _ in entries:
            it = items[item]
            ring_in, ring_out = ring_for_bits(it.in_bits), ring_for_bits(it.out_bits)
            if kind == "owned":
                if it.owner == me:
                    own.append((item, ring_in.add(owned[src], self.parts[f"{item}.r"])))
                continue
            share = self.vals[src]
            if kind == "plain":
                masked = ring_out.add(convert_unsigned(share, ring_in, ring_out), self.parts[f"{item}.r"])
            else:
                masked = ring_in.add(share, self.parts[f"{item}.r"])
                if s.leader:
                    masked = ring_in.add_int(masked, 1 << (ring_in.bits - 2))
            shares.append(masked)
            layout.append(item)
        sid = s.new_id()
        comm = s.comm
        outgoing = shares + [v for _, v in own]
        for p in s.peers:
            comm.send_opening(p, sid, outgoing, label=_LABEL)
        totals = dict(zip(layout, shares, strict=True))
        pubs = dict(own)
        for p in s.peers:
            theirs = s.parties.index(p)
            want = [(item, True) for item in layout] + [
                (item, False) for kind, _, item, _ in entries if kind == "owned" and items[item].owner == theirs]
            got, body = comm.recv_opening(p, sid, len(want), label=_LABEL)
            if got is None:
                raise MalformedMessageError(explain(f"masked opening from {p}", type(body).__name__,
                                                    f"{len(want)} arrays", "run the same program on every party"))
            for (item, is_share), v in zip(want, got, strict=True):
                it = items[item]
                ring = ring_for_bits(it.in_bits if (is_share and it.kind == "trunc") else it.out_bits)
                v = ring.check(v, f"masked opening from {p}", received=True)
                if ring.shape(v) != it.shape:
                    raise MalformedMessageError(explain(f"masked opening from {p}", ring.shape(v), f"{it.shape}",
                                                        "run the same program on every party"))
                if is_share:
                    totals[item] = ring.add(totals[item], v)
                else:
                    pubs[item] = v
        if self.publics is not None:
            self.publics.update(totals)
            self.publics.update(pubs)
        for kind, _, item, shift in entries:
            if kind == "owned":
                self.opened[item] = (pubs[item], None)
            elif kind == "plain":
                self.opened[item] = (totals[item], None)
            else:
                it = items[item]
                ring_in, ring_out = ring_for_bits(it.in_bits), ring_for_bits(it.out_bits)
                c = totals[item]
                pub = convert_unsigned(ring_in.shr(c, shift), ring_in, ring_out)
                self.opened[item] = (ring_out.add_int(pub, -(1 << (ring_in.bits - 2 - shift))), ring_in.msb(c))

    # -- local nodes ------------------------------------------------------------------------------------------
    def product(self, node: int, op: tuple[Any, ...]) -> RingArray:
        """``prod(factors)`` from the expansion of ``prod(delta_f - lambda_f)``: the terms are grouped by the set of
        factors that contribute a mask atom, their (signed) shares summed within a group, and each group multiplied
        once by the product of the other factors' public values (Horner-free: one ring product per group). A
        reduction over the first axis of two factors shaped ``(B, s, 1)`` and ``(B, 1, K)`` is a matrix product."""
        _, factors, terms, reduce = op
        ring = self.ring(node)
        pubs = [self.vals[f] for f in factors]
        wterms = [self.prog.terms[f] for f in factors]
        groups: dict[int, RingArray] = {}
        reduced: RingArray | None = None
        for choice, mono, pre in terms:
            mask = sum(1 << j for j, c in enumerate(choice) if c >= 0)
            if not mask:
                continue
            if mono >= 0:
                share = self.parts[f"{mono}.v"]
                for j, c in enumerate(choice):
                    if c >= 0:
                        share = self.signed_like(ring, share, wterms[j][c])
            else:
                j = next(i for i, c in enumerate(choice) if c >= 0)
                share = self.term_share(ring, wterms[j][choice[j]])
            if pre:
                share = share if bin(mask).count("1") % 2 == 0 else ring.neg(share)
                reduced = share if reduced is None else ring.add(reduced, share)
            else:
                known = groups.get(mask)
                groups[mask] = share if known is None else ring.add(known, share)
        if self.s.leader:
            groups[0] = ring.zeros(())  # the public term: the product of every factor's public value
        shape = self.prog.meta[node][0]
        tn = self._matmul_pattern(factors, reduce)
        total: RingArray | None = None
        for mask, share in groups.items():
            rest = [pubs[j] for j in range(len(factors)) if not mask >> j & 1]
            if tn:  # the two sides of a^T b: this group's share on one side, the other factor's public value opposite
                left = pubs[0] if not mask & 1 else share
                right = pubs[1] if not mask & 2 else share
                value = ring.matmul(ring.transpose(ring.reshape(left, ring.shape(left)[:2])),
                                    ring.reshape(right, (ring.shape(right)[0], ring.shape(right)[2])))
            else:
                value = share
                if mask == 0:
                    value = rest[0]
                    rest = rest[1:]
                for pub in rest:
                    value = ring.mul(value, pub)
                if reduce:
                    value = ring.sum(value, reduce)
            if bin(mask).count("1") % 2:
                value = ring.neg(value)
            total = value if total is None else ring.add(total, value)
        out = ring.zeros(shape) if total is None else total
        if ring.shape(out) != shape:
            out = ring.broadcast_to(out, shape)
        return out if reduced is None else ring.add(out, reduced)

    def _matmul_pattern(self, factors: tuple[int, ...], reduce: tuple[int, ...]) -> bool:
        """Whether a product is ``a^T b`` for factors shaped ``(B, s, 1)`` and ``(B, 1, K)`` summed over ``B``."""
        if len(factors) != 2 or reduce != (0,):
            return False
        a, b = (self.prog.meta[f][0] for f in factors)
        return len(a) == 3 and len(b) == 3 and a[2] == 1 and b[1] == 1 and a[0] == b[0]

    def signed_like(self, ring: Ring, value: RingArray, term: Term) -> RingArray:
        """A dealt monomial times one of its terms' coefficient and sign (broadcast to the monomial's shape)."""
        coef, item, _, signed, shape = term
        if signed:
            msb = self.opened[item][1]
            if msb is not None:
                flip = msb if shape is None else msb.reshape(shape)
                value = np.where(np.broadcast_to(flip.astype(bool), ring.shape(value)), ring.neg(value), value)
        return value if coef == 1 else ring.mul_int(value, coef)

    def compare(self, node: int, op: tuple[Any, ...]) -> RingArray:
        _, src, item, points, depth, shift, offset, _ = op
        it = self.prog.plan.items[item]
        if not isinstance(it, DcfItem):  # pragma: no cover - compiled programs pair them
            raise ParameterError(explain("compare node's item", type(it).__name__, "a DcfItem", "compile with Program"))
        ring_in, out = ring_for_bits(it.bits), ring_for_bits(it.out_bits)
        pub = ring_in.add_int(self.vals[src], -offset) if offset else self.vals[src]
        shifted = ring_in.shr(pub, shift) if shift else pub
        view = np.array((shifted[0] if ring_in.bits == 128 else shifted).reshape(-1), dtype=np.uint64)
        top = np.uint64((1 << depth) - 1) if depth < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
        view &= top
        p = np.array(points, dtype=np.uint64)[:, None]
        with np.errstate(over="ignore"):
            at = np.concatenate([view[None, :], (view[None, :] - p) & top])
        keys = self.parts
        e = dcf_eval_payload(self.s.index, keys[f"{item}.seed"], keys[f"{item}.cw"], keys[f"{item}.last"], at, depth,
                             out)  # (W, T + 1, N)
        beta = keys[f"{item}.beta"]  # (W, N)
        width, n = out.shape(beta)
        below = out.from_int((view[None, :] < p).astype(np.int64))  # [delta' < p_j], public: (T, N)
        column = out.reshape(beta, (width, 1, n))
        lt = out.sub(out.index(e, (slice(None), slice(1, None))), out.index(e, (slice(None), slice(0, 1))))
        ge = out.sub(column, out.add(lt, out.mul(column, below)))  # [x' >= p] beta = beta - [x' < p] beta
        return out.reshape(ge, (width, len(points), *self.prog.meta[node][0]))

    def select(self, node: int, op: tuple[Any, ...]) -> RingArray:
        _, cnode, coefs, const, index = op
        ring = self.ring(node)
        ge = self.vals[cnode]
        layout = self.prog.nodes[cnode][7]

        def weighted(row: int) -> RingArray:
            rows = ring.index(ge, row)  # (T, *shape)
            return _weighted(ring, rows, coefs)

        if index < 0:
            value = weighted(0)
            return ring.add_int(value, const) if (const and self.s.leader) else value
        wnode, terms = layout[index]
        first = 1 + sum(len(t) for _, t in layout[:index])
        pub = self.vals[wnode]
        value = ring.mul(weighted(0), pub)
        for k, t in enumerate(terms):
            value = ring.sub(value, self.signed_like(ring, weighted(first + k), t))
        if const:
            value = ring.sub(value, ring.mul_int(self.mask(ring, terms), const))
            if self.s.leader:
                value = ring.add(value, ring.mul_int(pub, const))
        return value

    def table(self, node: int, op: tuple[Any, ...]) -> RingArray:
        _, src, item, spec, layout = op
        it = self.prog.plan.items[item]
        if not isinstance(it, TableItem):  # pragma: no cover - compiled programs pair them
            raise ParameterError(explain("table node's item", type(it).__name__, "a TableItem", "compile with Program"))
        ring_in, out = ring_for_bits(it.bits), ring_for_bits(it.out_bits)
        pub = ring_in.add_int(self.vals[src], -spec.lo)
        view = np.array((pub[0] if ring_in.bits == 128 else pub).reshape(-1), dtype=np.uint64)
        if spec.view_bits < 64:
            view &= np.uint64((1 << spec.view_bits) - 1)
        j, low = spec.split(view)
        basis = spec.basis_ints(low)  # (N, D + 1)
        coef = self.parts[f"{item}.coef"]  # (E, N, M, D + 1), Z_2^128 with a limb axis first
        axis = coef.ndim - 2
        index = j.reshape((1,) * (axis - 1) + (-1, 1, 1))
        picked = np.take_along_axis(coef, index, axis=axis)[..., 0, :]  # (E, N, D + 1)
        sums = out.sum(out.mul_int(picked, basis), 2)  # (E, N)
        shape = self.prog.meta[node][0]
        if not layout:
            return out.reshape(out.index(sums, 0), shape)
        wnode, terms = layout[0]
        pub_t = self.vals[wnode]
        value = out.mul(out.reshape(out.index(sums, 0), shape), pub_t)
        for k, t in enumerate(terms):
            value = out.sub(value, self.signed_like(out, out.reshape(out.index(sums, 1 + k), shape), t))
        return value


def _weighted(ring: Ring, rows: RingArray, coefs: npt.NDArray[Any]) -> RingArray:
    """``sum_j coefs_j rows_j`` for public integers (one per row, or arrays broadcasting against a row)."""
    total: RingArray | None = None
    for j in range(coefs.shape[0]):
        k = coefs[j]
        if isinstance(k, np.ndarray):
            term = ring.mul(ring.index(rows, j), ring.from_int(np.asarray(k, dtype=object)))
        elif int(k) == 0:
            continue
        else:
            term = ring.mul_int(ring.index(rows, j), int(k))
        total = term if total is None else ring.add(total, term)
    return ring.zeros(ring.shape(rows)[1:]) if total is None else total


def _encode_owned(name: str, values: Any, shape: tuple[int, ...], bits: int, scale: int, bound: float) -> RingArray:
    x = np.asarray(values, dtype=np.float64)
    if x.shape != shape:
        raise ParameterError(explain(f"owned input {name}", x.shape, f"shape {shape}", "pass this party's array"))
    worst = float(np.max(np.abs(x))) if x.size else 0.0
    if not worst <= bound:
        raise DomainError(explain(f"owned input {name}", f"max |x| = {worst:.6g}", f"|x| <= {bound:g}",
                                  "clip it or declare a larger bound"))
    return ring_for_bits(bits).from_rounded_float(np.rint(x * 2.0**scale))


def execute(session: Session, prog: Compiled, inputs: Mapping[str, SharedFixedPoint], owned: Mapping[str, Any], *,
            fmt: FixedPointFormat, material: MaskedMaterial | None = None,
            publics: dict[int, RingArray] | None = None,
            consts: Mapping[str, Any] | None = None) -> dict[str, SharedFixedPoint]:
    """Run ``prog`` (every computing party, the same program): ``inputs`` by name, this party's ``owned`` arrays
    (None for another party's), the outputs as values of ``fmt``'s format (its ring must be theirs).

    ``material``: this party's parts of ``prog.plan``, fetched beforehand (default: fetched now, one request). A
    program's material of another plan or session, another party's, a part of another shape, an input of
    another shape, ring or scale, or one beyond its bound is refused before anything is opened. ``publics``, if
    given, receives every opening's public value (the opened ``c``, by plan item: what the peers saw). ``consts``:
    the program's public constants for this run (integer arrays of the declared shapes)."""
    if not session.provider.deals_masked_plans:
        raise ParameterError(explain("provider", type(session.provider).__name__, "a provider dealing masked plans",
                                     "use a TrustedDealer with two computing parties"))
    for name, node in prog.inputs:
        x = inputs.get(name)
        shape, bits, scale, bound = prog.meta[node]
        if not isinstance(x, SharedFixedPoint) or x.shape != shape or x.ring.bits != bits or x.scale != scale \
                or x.session is not session:
            raise ParameterError(explain(f"input {name}", x, f"a value of this session, shape {shape}, ring {bits}, "
                                         f"scale {scale}", "pass the program's inputs"))
        if x.bound > bound:
            raise DomainError(explain(f"input {name}", f"bound {x.bound:g}", f"<= {bound:g} (the program's)",
                                      "clip it or build the program for a larger bound"))
    given = dict(consts or {})
    for name, shape in prog.consts.items():
        k = given.get(name)
        if not isinstance(k, np.ndarray) or k.shape != shape or k.dtype.kind not in "iuO":
            raise ParameterError(explain(f"constant {name}", getattr(k, "shape", k), f"integers of shape {shape}",
                                         "pass the program's constants"))
    encoded: dict[int, RingArray] = {}
    for name, node in prog.owned:
        op = prog.nodes[node]
        shape, bits, scale, bound = prog.meta[node]
        if op[2] == session.index:
            encoded[node] = _encode_owned(name, owned.get(name), shape, bits, scale, bound)
        elif owned.get(name) is not None:
            raise ParameterError(explain(f"owned input {name}", "values", "None", f"only party {op[2]} passes them"))
    if material is None:
        material = session.provider.masked_material(prog.plan)
    check_material(session, prog, material)
    run = _Run(session, prog, material.parts)
    run.publics = publics
    run.consts = given
    for node, op in enumerate(prog.nodes):
        _step(run, node, op, inputs, encoded)
    out = {}
    for name, node in prog.outputs:
        shape, bits, scale, bound = prog.meta[node]
        if fmt.ring.bits != bits:
            raise ParameterError(explain("fmt", str(fmt), f"a format of the {bits}-bit ring",
                                         "pass the outputs' format"))
        out[name] = SharedFixedPoint(session, run.vals[node], fmt=fmt, scale=scale, bound=bound,
                                     sharing_id=session.new_id())
    return out


def _step(run: _Run, node: int, op: tuple[Any, ...], inputs: Mapping[str, SharedFixedPoint],
          encoded: Mapping[int, RingArray]) -> None:
    kind, vals = op[0], run.vals
    if kind == "open":
        run.open(op[1], encoded)
        return
    if kind == "owned":
        vals[node] = encoded.get(node)
        return
    ring = run.ring(node)
    if kind == "input":
        vals[node] = inputs[op[1]].share
    elif kind == "wire":
        vals[node] = run.opened[op[2]][0]
    elif kind == "wadd":
        _, a, b, sign = op
        vals[node] = ring.add(vals[a], vals[b]) if sign > 0 else ring.sub(vals[a], vals[b])
    elif kind == "wmul":
        vals[node] = ring.mul_int(vals[op[1]], op[2])
    elif kind == "wreshape":
        vals[node] = ring.reshape(vals[op[1]], op[2])
    elif kind == "unmask":
        share = ring.neg(run.mask(ring, run.prog.terms[op[1]]))
        vals[node] = ring.add(share, vals[op[1]]) if run.s.leader else share
    elif kind == "product":
        vals[node] = run.product(node, op)
    elif kind == "compare":
        vals[node] = run.compare(node, op)
    elif kind == "select":
        vals[node] = run.select(node, op)
    elif kind == "table":
        vals[node] = run.table(node, op)
    else:
        vals[node] = _linear(run, ring, op)


def _linear(run: _Run, ring: Ring, op: tuple[Any, ...]) -> RingArray:
    kind, leader = op[0], run.s.leader
    if kind == "concat":
        return ring.concatenate([run.vals[n] for n in op[1]], op[2])
    a: RingArray = run.vals[op[1]]
    if kind == "add":
        return ring.add(a, run.vals[op[2]])
    if kind == "sub":
        return ring.sub(a, run.vals[op[2]])
    if kind == "mul_int":
        k = op[2]
        return ring.mul_int(a, k) if isinstance(k, int) else ring.mul(a, ring.from_int(k))
    if kind == "mul_const":
        k = run.consts[op[2]]
        return ring.mul_int(a, k) if k.dtype.kind == "i" and ring.bits == 128 else ring.mul(a, ring.from_int(k))
    if kind == "add_raw":
        return ring.add_int(a, op[2]) if leader else a
    if kind == "lift":
        return ring.shl(a, op[2])
    if kind == "same":
        return a
    if kind == "sum":
        return ring.sum(a, op[2])
    if kind == "reshape":
        return ring.reshape(a, op[2])
    if kind == "index":
        return ring.index(a, op[2])
    raise ParameterError(explain("program node", kind, "a known node",  # pragma: no cover
                                 "build programs with Program"))
