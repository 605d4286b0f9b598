"""Masked-wire programs: products of masked wires (freshly truncated ones, three and four factors, reductions) in one
round each against float64, comparisons with payloads exact at their thresholds, openings uniform whatever the
value, and typed refusals (material of another plan or session, inputs off the program, bit growth) before any
opening."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

from mpdp.crypto.fixed_point import HIGH_PRECISION
from mpdp.errors import DomainError, KeyMismatchError, ParameterError, PrecisionError
from mpdp.protocols.mpc import MPCSession, TrustedDealer
from mpdp.protocols.mpc.masked.program import Compiled, Program
from mpdp.protocols.mpc.masked.run import execute
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

HP = HIGH_PRECISION


def _execute(prog: Compiled, values: dict[str, np.ndarray], *, owned: dict[str, np.ndarray] | None = None,
             seed: int = 0, tamper: Callable[[Any, Any], Any] | None = None) -> dict[str, Any]:
    """Run ``prog`` on two parties (inputs ``values`` shared by alice; ``owned`` arrays ``name -> values`` of the
    party the program names): its outputs, the opened values party 0 saw, and the online rounds."""

    def role(comm: Any) -> dict[str, Any]:
        with MPCSession.with_dealer(comm, fmt=HP) as s:
            xs = {}
            for name, node in prog.inputs:
                bound = prog.meta[node][3]
                xs[name] = s.input("alice", values[name] if comm.name == "alice" else None, bound=bound)
            mine = {}
            for name, node in prog.owned:
                mine[name] = (owned or {})[name] if prog.nodes[node][2] == s.index else None
            material = s.provider.masked_material(prog.plan)
            if tamper is not None:
                material = tamper(s, material)
            s.public(np.zeros(1)).reveal()
            before, sent = comm.traffic.rounds, comm.traffic.messages_sent
            publics: dict[int, Any] = {}
            try:
                out = execute(s, prog, xs, mine, fmt=HP, material=material, publics=publics)
            except Exception as exc:
                return {"error": exc, "sent": comm.traffic.messages_sent - sent}
            clocks = (before, comm.traffic.rounds)
            return {"out": {k: v.reveal() for k, v in out.items()}, "publics": publics, "clocks": clocks}

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(seed))
    res = run.results["alice"]
    if "clocks" in res:
        res["rounds"] = max(run.results[n]["clocks"][1] for n in ("alice", "bob")) - \
            max(run.results[n]["clocks"][0] for n in ("alice", "bob"))
    return res


def test_products_of_truncated_wires_three_and_four_factors_one_round_each() -> None:
    rng = np.random.default_rng(3)
    a, b, c, d = (rng.uniform(-1, 1, (3, 4)) for _ in range(4))
    p = Program()
    ins = [p.input(k, (3, 4), scale=48, bound=1.0) for k in "abcd"]
    wa, wb, wc, wd = p.open(ins)  # round 1: plain masks
    ab, cd = p.open([p.product([wa, wb]), p.product([wc, wd])], shifts=[72, 72])  # round 2: fresh truncations, f=24
    three = p.product([ab, cd, wa])  # truncated x truncated x plain, scale 96
    four = p.product([ab, ab, cd, wd])  # a square of a truncated wire among four factors, scale 120
    rows = p.product([ab, wc], reduce=(1,))  # summed along the rows (signed atoms: summed after their signs)
    plain = p.product([wa.reshape(3, 4, 1), wb.reshape(3, 1, 4)], reduce=(0,))  # the dealer sums it, scale 96
    t3, t4, tr, tp = p.open([three, four, rows, plain], shifts=[72, 96, 48, 48])  # round 3
    for name, w in (("three", t3), ("four", t4), ("rows", tr), ("plain", tp)):
        p.output(name, p.unmask(w))
    prog = p.compile()
    res = _execute(prog, {"a": a, "b": b, "c": c, "d": d})
    assert res["rounds"] == prog.rounds == 3
    ea, eb, ec, ed = (HP.decode(HP.encode(v)) for v in (a, b, c, d))
    u = 2.0**-24  # the truncated operands' resolution
    assert np.allclose(res["out"]["three"], ea * eb * ec * ed * ea, atol=4 * u)
    assert np.allclose(res["out"]["four"], (ea * eb) ** 2 * ec * ed * ed, atol=6 * u)
    assert np.allclose(res["out"]["rows"], (ea * eb * ec).sum(axis=1), atol=8 * u)
    assert np.allclose(res["out"]["plain"], np.einsum("ij,ik->jk", ea, eb), atol=2.0**-46)


def test_comparisons_with_payloads_are_exact_at_their_thresholds() -> None:
    x = np.array([-3.0, -1.0, -2.0**-48, 0.0, 2.0**-48, 0.999, 1.0, 5.0])
    p = Program()
    xi = p.input("x", x.shape, scale=48, bound=8.0)
    (w,) = p.open([xi])
    offset = 1 << 55  # signed values: compare x + 2^7 with the thresholds
    cmp = p.compare(w, [offset, offset + (1 << 48)], depth=56, offset=-offset, payload=[w])
    p.output("ge0", p.select(cmp, [1, 0], scale=0, bound=1.0))
    p.output("ge1", p.select(cmp, [0, 1], scale=0, bound=1.0))
    p.output("relu", p.select(cmp, [1, 0], times=w, scale=48, bound=8.0))
    res = _execute(p.compile(), {"x": x})
    enc = HP.decode(HP.encode(x))
    assert np.array_equal(res["out"]["ge0"], (enc >= 0).astype(float))
    assert np.array_equal(res["out"]["ge1"], (enc >= 1).astype(float))
    assert np.array_equal(res["out"]["relu"], np.maximum(enc, 0.0))


def _chi2_uniform(words: np.ndarray, shift: int) -> float:
    """The chi-square statistic of 4 bits of each word (16 bins) against uniform."""
    counts = np.bincount(((words >> np.uint64(shift)) & np.uint64(15)).astype(np.int64), minlength=16)
    expected = words.size / 16
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("value", [0.0, -1.0, 15.5])
def test_openings_are_uniform_whatever_the_value(value: float) -> None:
    """An opening reveals ``v + lambda`` only: with 4096 copies of one value, each opened word's low and top four
    bits are uniform (chi-square, 15 degrees of freedom, each check failing with probability 1e-6 for uniform
    words; fixed seeds), for a plain opening in Z_2^128 and modulo 2^54, a truncating one and an owned one."""
    n = 4096
    p = Program()
    x = p.input("x", (n,), scale=48, bound=16.0)
    o = p.owned("o", 1, (n,), scale=48, bound=16.0)
    opened = p.open([x, x, x, o], shifts=[0, 0, 20, 0], out_bits=[None, 54, None, None])
    p.output("y", p.unmask(opened[0]))
    prog = p.compile()
    res = _execute(prog, {"x": np.full(n, value)}, owned={"o": np.full(n, value)}, seed=11)
    critical = stats.chi2.ppf(1 - 1e-6, 15)
    for item, top in ((0, 124), (1, 50), (2, 124), (3, 124)):
        words = res["publics"][item]
        low = words[0] if words.ndim == 2 else words
        high = words[1] if words.ndim == 2 else words
        assert _chi2_uniform(low, 0) < critical, item
        assert _chi2_uniform(high, top - 64 if words.ndim == 2 else top) < critical, item


def _simple() -> Compiled:
    p = Program()
    x = p.input("x", (4,), scale=48, bound=4.0)
    (w,) = p.open([x])
    p.output("y", p.unmask(p.open([p.product([w, w])], shifts=[48])[0]))
    return p.compile()


def test_material_of_another_plan_or_session_is_refused_before_any_opening() -> None:
    prog = _simple()
    other = Program()
    other.open([other.input("x", (4,), scale=48, bound=4.0)])
    foreign = other.compile()

    def other_plan(s: Any, material: Any) -> Any:
        return s.provider.masked_material(foreign.plan)

    def other_session(s: Any, material: Any) -> Any:
        return dataclasses.replace(material, issuer=b"\x00" * 8)

    def short_part(s: Any, material: Any) -> Any:
        parts = dict(material.parts)
        name = next(iter(parts))
        parts[name] = parts[name][..., :1]
        return dataclasses.replace(material, parts=parts)

    for tamper in (other_plan, other_session, short_part):
        res = _execute(prog, {"x": np.ones(4)}, tamper=tamper)
        assert isinstance(res["error"], KeyMismatchError), tamper.__name__
        assert res["sent"] == 0  # nothing opened


def test_inputs_off_the_program_are_refused_before_any_opening() -> None:
    prog = _simple()
    p = Program()
    p.open([p.input("x", (4,), scale=48, bound=1.0)])
    narrow = p.compile()  # a program declared for |x| <= 1
    res = _execute(narrow, {"x": np.full(4, 0.5)})
    assert "out" in res
    q = Program()
    q.open([q.owned("o", 0, (2,), scale=48, bound=1.0)])
    owned = q.compile()

    def role(comm: Any) -> Any:
        with MPCSession.with_dealer(comm, fmt=HP) as s:
            x = s.input("alice", np.ones(4) if comm.name == "alice" else None, bound=4.0)
            sent = comm.traffic.messages_sent
            with pytest.raises(DomainError, match="bound"):
                execute(s, narrow, {"x": x}, {}, fmt=HP)
            with pytest.raises(ParameterError, match="input x"):
                execute(s, prog, {"x": x[:2]}, {}, fmt=HP)
            if s.index == 0:
                with pytest.raises(DomainError, match="owned input o"):
                    execute(s, owned, {}, {"o": np.array([0.5, 3.0])}, fmt=HP)
            return comm.traffic.messages_sent - sent

    run = run_protocol({"alice": role, "bob": role, "dealer": TrustedDealer()}, rng=RandomSource.seeded(1))
    assert run.results["alice"] == run.results["bob"] == 0  # nothing sent: no opening, no dealer request


def test_bit_growth_beyond_the_ring_is_refused_while_building() -> None:
    p = Program()
    x = p.input("x", (2,), scale=48, bound=2.0**20)
    (w,) = p.open([x])
    with pytest.raises(PrecisionError, match="value"):
        p.product([w, w])  # 2^40 at scale 2^96: 136 bits
    y = p.input("y", (2,), scale=48, bound=2.0**15.25)
    (v,) = p.open([y])
    with pytest.raises(PrecisionError, match="truncated value"):
        p.open([p.product([v, v])], shifts=[48])  # 2^30.5 at scale 2^96: within the ring, beyond 2^126
