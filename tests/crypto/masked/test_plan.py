"""A masked plan's parts, as the parties draw them and the dealer corrects them, satisfy every item's relation; plans
round-trip through the wire and refuse malformed or oversized items."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.correlations import CorrelationSpec, batch, spec
from mpdp.crypto.fss_payload import dcf_eval_payload
from mpdp.crypto.masked.plan import AtomRef, DcfItem, MaskedPlan, MonoItem, OpenItem, TableItem
from mpdp.crypto.masked.tables import TableSpec
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import ring_for_bits
from mpdp.errors import MalformedMessageError, ParameterError, PrecisionError

R = ring_for_bits(128)
EXP = TableSpec("exp", 48, -16 << 48, (32 << 48) + 1, 54, 50, 0, "exp", 59, 36)


def _plan() -> MaskedPlan:
    return MaskedPlan((
        OpenItem("plain", (5,), 128, 128),
        OpenItem("trunc", (5,), 128, 128, 40),
        OpenItem("owned", (5,), 128, 128, 0, 1),
        MonoItem((AtomRef(0, "r"), AtomRef(1, "A"), AtomRef(2, "r")), (), 128),
        MonoItem((AtomRef(0, "r", (5, 1)), AtomRef(1, "B", (1, 5))), (0,), 128),
        DcfItem(((1, AtomRef(0, "r")), (3, AtomRef(1, "A"))), 128, 10, 30, ((), (AtomRef(0, "r"),)), 128, (5,)),
        TableItem(((1, AtomRef(0, "r")),), 128, EXP, ((), (AtomRef(2, "r"),)), 128, (5,)),
    ))


def _deal(plan: MaskedPlan) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Both parties' parts: drawn from their streams, party 0's corrections and party 1's public parts received."""
    work = batch((spec("masked", 128, (), plan=plan),))
    streams = [AesCtrPrg(bytes([i + 1]) * 32) for i in range(2)]
    parts = [work.draw(s, index=i) for i, s in enumerate(streams)]
    words = work.corrections(parts, work.masks(AesCtrPrg(b"own" * 11)))
    p0, p1 = dict(parts[0][0]), dict(parts[1][0])
    for name, shape, lo, hi in work.correction_layout[0]:
        p0[name] = words[lo:hi].reshape(shape)
    public = work.public_words(words)
    for name, shape, lo, hi in work.public_layout[0]:
        p1[name] = public[lo:hi].reshape(shape)
    return p0, p1


def _int(a: np.ndarray) -> np.ndarray:
    return R.to_object(a, signed=False)


def test_dealt_parts_satisfy_every_relation() -> None:
    plan = _plan()
    p0, p1 = _deal(plan)
    add = R.add
    r0, r1, owned = add(p0["0.r"], p1["0.r"]), add(p0["1.r"], p1["1.r"]), p1["2.r"]
    assert "2.r" not in p0  # the owned atom: party 1's alone
    full = _int(r1)
    a_atom, msb = add(p0["1.low"], p1["1.low"]), add(p0["1.msb"], p1["1.msb"])
    assert (_int(a_atom) == np.array([(v % (1 << 127)) >> 40 for v in full], dtype=object)).all()
    assert (_int(msb) == np.array([v >> 127 for v in full], dtype=object)).all()
    assert (_int(add(p0["3.v"], p1["3.v"])) == _int(R.mul(R.mul(r0, a_atom), owned))).all()
    b_atom = R.neg(R.shl(msb, 127 - 40))
    outer = R.sum(R.mul(R.reshape(r0, (5, 1)), R.reshape(b_atom, (1, 5))), 0)
    assert (_int(add(p0["4.v"], p1["4.v"])) == _int(outer)).all()
    # the key: alpha = ((r0 + 3 A) >> 10) mod 2^30, payload (1, r0), and the payload's shares
    alpha = R.shr(add(r0, R.mul_int(a_atom, 3)), 10)[0] & np.uint64((1 << 30) - 1)
    top = np.uint64((1 << 30) - 1)
    with np.errstate(over="ignore"):
        x = np.stack([alpha, (alpha - np.uint64(1)) & top, (alpha + np.uint64(1)) & top])
    y = add(dcf_eval_payload(0, p0["5.seed"], p0["5.cw"], p0["5.last"], x, 30, R),
            dcf_eval_payload(1, p1["5.seed"], p1["5.cw"], p1["5.last"], x, 30, R))
    below = (x < alpha[None, :])
    assert (_int(R.index(y, 0)) == below.astype(object)).all()
    assert (_int(R.index(y, 1)) == np.where(below, _int(r0)[None, :], 0)).all()
    beta = _int(add(p0["5.beta"], p1["5.beta"]))
    assert (beta[0] == 1).all() and (beta[1] == _int(r0)).all()
    # the table, and the table times the owned atom
    coef = add(p0["6.coef"], p1["6.coef"])
    lam = r0[0] & np.uint64((1 << 54) - 1)
    expected = R.from_rounded_float(np.rint(EXP.coefficients(lam) * 2.0**EXP.coef_frac))
    assert (_int(R.index(coef, 0)) == _int(expected)).all()
    assert (_int(R.index(coef, 1)) == _int(R.mul(expected, R.reshape(owned, (5, 1, 1))))).all()


def test_plans_round_trip_through_the_wire_and_specs() -> None:
    plan = _plan()
    again = MaskedPlan.from_wire(plan.to_wire())
    assert again == plan and hash(again) == hash(plan) and again.digest == plan.digest
    s = spec("masked", 128, (), plan=plan)
    assert CorrelationSpec.from_wire(s.to_wire()) == s
    assert plan.dcf_keys == 5
    with pytest.raises(ParameterError, match="MaskedPlan"):
        CorrelationSpec("masked", 128, ())


@pytest.mark.parametrize("wire", [
    [["open", "plain", [5], 128, 128, 0, -1], ["mono", [[1, "r"], [0, "r"]], [], 128]],  # an atom not yet opened
    [["open", "plain", [5], 128, 128, 0, -1], ["mono", [[0, "A"], [0, "r"]], [], 128]],  # a plain opening has no A
    [["open", "trunc", [5], 128, 128, 127, -1]],  # a shift beyond the exact truncation's range
    [["open", "plain", [5], 128, 128, 0, -1], ["mono", [[0, "r", [3]], [0, "r"]], [], 128]],  # a reshape that lies
    [["gate", 1]],
    "plan",
])
def test_malformed_plans_are_refused(wire: object) -> None:
    with pytest.raises(MalformedMessageError):
        MaskedPlan.from_wire(wire)


def test_a_table_beyond_its_ring_is_refused_from_its_parameters() -> None:
    wide = TableSpec("exp", 48, -16 << 48, (32 << 48) + 1, 54, 50, 0, "exp", 64, 40)
    with pytest.raises(PrecisionError, match="table item"):
        MaskedPlan((OpenItem("plain", (2,), 128, 54),
                    TableItem(((1, AtomRef(0, "r")),), 54, wide, ((),), 128, (2,))))
