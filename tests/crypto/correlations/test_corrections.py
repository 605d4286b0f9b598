"""Dealt correlations satisfy their relations, and the wrap-corrected shift is exact, exhaustively."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.crypto.beaver import and_combine, b2a_combine, beaver_combine, wrap_shift_output
from mpdp.crypto.correlations import CORRECTED, CorrelationSpec, deal, draw, draw_shape
from mpdp.crypto.ring import Ring, Z2k, convert_unsigned, ring_for_bits
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource

from .mixed_specs import MIXED as _MIXED


def _dealt(spec: CorrelationSpec, n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    streams = [RandomSource.seeded(f"{seed}-{i}") for i in range(n)]
    fix = deal(spec, streams)
    mirrors = [RandomSource.seeded(f"{seed}-{i}") for i in range(n)]
    parts = [draw(spec, s, index=i) for i, s in enumerate(mirrors)]
    parts[0].update(fix)
    return parts


def _sum(ring: Ring, arrays: list[np.ndarray]) -> np.ndarray:
    total = arrays[0]
    for a in arrays[1:]:
        total = ring.add(total, a)
    return total


@pytest.mark.parametrize("bits", [64, 128, 12])
@pytest.mark.parametrize("n", [2, 3])
def test_relations_hold(bits: int, n: int) -> None:
    ring = ring_for_bits(bits)
    p = _dealt(CorrelationSpec("mul", bits, (3, 4), (4,)), n)
    a, b, c = (_sum(ring, [q[k] for q in p]) for k in "abc")
    assert np.array_equal(ring.mul(a, b), c)
    p = _dealt(CorrelationSpec("matmul", bits, (3, 4), (4, 2)), n)
    a, b, c = (_sum(ring, [q[k] for q in p]) for k in "abc")
    assert np.array_equal(ring.matmul(a, b), c)
    p = _dealt(CorrelationSpec("square", bits, (5,)), n)
    a, c = (_sum(ring, [q[k] for q in p]) for k in "ac")
    assert np.array_equal(ring.mul(a, a), c)
    p = _dealt(CorrelationSpec("compare", bits, (5,)), n)
    r = _sum(ring, [q["r"] for q in p])
    words = p[0]["bits"].copy()
    for q in p[1:]:
        words ^= q["bits"]
    assert np.array_equal(ring.from_bit_words(words), r)
    p = _dealt(CorrelationSpec("and", 64, (7,)), n)
    a, b, c = (np.bitwise_xor.reduce([q[k] for q in p]) for k in "abc")
    assert np.array_equal(a & b, c)
    p = _dealt(CorrelationSpec("dabit", bits, (50,)), n)
    bit = np.bitwise_xor.reduce([q["bit"] for q in p])
    s = _sum(ring, [q["s"] for q in p])
    assert np.array_equal(ring.to_object(s, signed=False).astype(np.uint64), bit)


@pytest.mark.parametrize(("bits", "out_bits", "shift"), [(64, 64, 20), (128, 128, 48), (64, 128, 0), (128, 64, 40)])
def test_wrap_mask_relation(bits: int, out_bits: int, shift: int) -> None:
    ring, out = ring_for_bits(bits), ring_for_bits(out_bits)
    p = _dealt(CorrelationSpec("wrap", bits, (40,), out_ring_bits=out_bits, shift=shift), 3)
    r = ring.to_object(_sum(ring, [q["r"] for q in p]), signed=False)
    msb = out.to_object(_sum(out, [q["msb"] for q in p]), signed=False)
    low = out.to_object(_sum(out, [q["low"] for q in p]), signed=False)
    half = 1 << (bits - 1)
    assert all(m == (v >> (bits - 1)) for m, v in zip(msb, r, strict=True))
    assert all(lo == ((v % half) >> shift) % (1 << out_bits) for lo, v in zip(low, r, strict=True))


def _simulate_wrap_shift(ring: Ring, out: Ring, x: np.ndarray, r: np.ndarray, shift: int,
                         rng: RandomSource) -> np.ndarray:
    """Two parties run the wrap-corrected shift on value residues x with mask residues r (both given)."""
    top = ring.msb(r).astype(np.int64)
    r_low = ring.sub(r, ring.mul_int(ring.from_int(top), 1 << (ring.bits - 1)))
    msb_val, low_val = out.from_int(top), convert_unsigned(ring.shr(r_low, shift), ring, out)
    msb1, low1 = out.random(rng, out.shape(msb_val)), out.random(rng, out.shape(msb_val))
    msb0, low0 = out.sub(msb_val, msb1), out.sub(low_val, low1)
    c = ring.add(ring.add(x, r), ring.from_int(1 << (ring.bits - 2)))
    y0 = wrap_shift_output(ring, out, c, msb0, low0, shift, leader=True)
    y1 = wrap_shift_output(ring, out, c, msb1, low1, shift, leader=False)
    return out.to_object(out.add(y0, y1))


@pytest.mark.parametrize("shift", [0, 1, 3, 8])
def test_wrap_shift_exhaustive_in_a_small_ring(shift: int) -> None:
    """Every value of the documented range |x| < 2^(l-2) against every mask: never a wrong result."""
    ring = Z2k(10)
    values = np.arange(-(2**8), 2**8)
    masks = np.arange(2**10, dtype=np.uint64)
    xv, rv = np.meshgrid(values, masks, indexing="ij")
    x = ring.from_int(xv.reshape(-1))
    got = _simulate_wrap_shift(ring, ring, x, rv.reshape(-1), shift, RandomSource.seeded(shift))
    exact_floor = xv.reshape(-1) >> shift
    diff = got - exact_floor.astype(object)
    assert set(diff.tolist()) <= {0, 1}
    # stochastic rounding: averaged over all masks the result equals x / 2^shift exactly
    mean = got.reshape(xv.shape).astype(np.float64).mean(axis=1)
    assert np.allclose(mean, values / 2.0**shift, atol=1e-12)


def test_wrap_shift_fails_just_outside_the_documented_range() -> None:
    """The range matters: beyond 2^(l-2) a fraction of the masks gives results off by 2^(l-k)."""
    ring = Z2k(10)
    masks = np.arange(2**10, dtype=np.uint64)
    value = 2**8 + 2**7
    x = ring.from_int(np.full(masks.shape, value, dtype=np.int64))
    got = _simulate_wrap_shift(ring, ring, x, masks, 2, RandomSource.seeded(9))
    wrong = sum(g not in (value >> 2, (value >> 2) + 1) for g in got.tolist())
    assert 0.2 < wrong / masks.size < 0.3  # P(carry out of the low 9 bits) = 128 / 512


@pytest.mark.parametrize(("bits", "out_bits"), [(64, 128), (128, 64), (64, 64), (128, 128)])
def test_wrap_shift_at_the_edges_of_the_range(bits: int, out_bits: int) -> None:
    """1e5 random masks at |x| = 2^(l-2) - 1 and near zero: always a neighbour of x / 2^k."""
    ring, out = ring_for_bits(bits), ring_for_bits(out_bits)
    rng = RandomSource.seeded(bits + out_bits)
    shift = 20
    edge = (1 << (bits - 2)) - 1
    ints = [edge, -edge, -edge - 1, 0, -1, 1, (1 << shift) - 1, -(1 << shift)]
    n = 100_000 // len(ints)
    xs = np.array([v for v in ints for _ in range(n)], dtype=object)
    x = ring.from_int(xs)
    r = ring.random(rng, ring.shape(x))
    got = _simulate_wrap_shift(ring, out, x, r, shift, rng)
    expected = np.array([v >> shift for v in xs], dtype=object)
    if out_bits < bits:  # results are reduced into the smaller ring; compare there
        mod = 1 << out_bits
        diff = [(int(g) - int(e)) % mod for g, e in zip(got, expected, strict=True)]
        assert set(diff) <= {0, 1}
    else:
        assert set((got - expected).tolist()) <= {0, 1}


def test_beaver_and_bit_algebra() -> None:
    rng = RandomSource.seeded(5)
    ring = Z2k(64)
    p = _dealt(CorrelationSpec("mul", 64, (6,), (6,)), 2)
    x, y = ring.random(rng, (6,)), ring.random(rng, (6,))
    x1, y1 = ring.random(rng, (6,)), ring.random(rng, (6,))
    xs, ys = [ring.sub(x, x1), x1], [ring.sub(y, y1), y1]
    d = _sum(ring, [ring.sub(xs[i], p[i]["a"]) for i in range(2)])
    e = _sum(ring, [ring.sub(ys[i], p[i]["b"]) for i in range(2)])
    z = _sum(ring, [beaver_combine(ring, d, e, p[i]["a"], p[i]["b"], p[i]["c"], leader=i == 0) for i in range(2)])
    assert np.array_equal(z, ring.mul(x, y))
    t = _dealt(CorrelationSpec("and", 64, (6,)), 2)
    u, v = rng.uint64(6), rng.uint64(6)
    u1, v1 = rng.uint64(6), rng.uint64(6)
    us, vs = [u ^ u1, u1], [v ^ v1, v1]
    dd = (us[0] ^ t[0]["a"]) ^ (us[1] ^ t[1]["a"])
    ee = (vs[0] ^ t[0]["b"]) ^ (vs[1] ^ t[1]["b"])
    w = and_combine(dd, ee, t[0]["a"], t[0]["b"], t[0]["c"], leader=True) ^ \
        and_combine(dd, ee, t[1]["a"], t[1]["b"], t[1]["c"], leader=False)
    assert np.array_equal(w, u & v)
    db = _dealt(CorrelationSpec("dabit", 64, (100,)), 2)
    bit = rng.bits(100).astype(np.uint64)
    bshares = [bit ^ db[1]["bit"] ^ rng.bits(100).astype(np.uint64) * 0, db[1]["bit"]]
    opened = (bshares[0] ^ db[0]["bit"]) ^ (bshares[1] ^ db[1]["bit"])
    arith = ring.add(b2a_combine(ring, opened, db[0]["s"], leader=True), b2a_combine(ring, opened, db[1]["s"],
                                                                                  leader=False))
    assert np.array_equal(arith, bit)


@pytest.mark.parametrize("kind", ["mul_wrap", "matmul_wrap", "square_wrap"])
@pytest.mark.parametrize(("bits", "out_bits"), [(64, 64), (128, 128), (128, 64)])
def test_masked_products_carry_the_mask_their_wrap_parts_describe(kind: str, bits: int, out_bits: int) -> None:
    # (128, 64): the truncation also narrows the ring, so msb and low are shared in Z_2^64
    ring, out = ring_for_bits(bits), ring_for_bits(out_bits)
    shape_b = () if kind == "square_wrap" else (3, 4) if kind == "matmul_wrap" else (5, 3)
    spec = CorrelationSpec(kind, bits, (5, 3), shape_b, out_ring_bits=out_bits, shift=20)
    streams = [RandomSource.seeded(f"m-{i}") for i in range(3)]
    with pytest.raises(ParameterError, match="own"):
        deal(spec, streams)
    fix = deal(spec, streams, own=RandomSource.seeded("dealer"))
    parts = [draw(spec, RandomSource.seeded(f"m-{i}"), index=i) for i in range(3)]
    parts[0].update(fix)
    a = _sum(ring, [p["a"] for p in parts])
    b = a if kind == "square_wrap" else _sum(ring, [p["b"] for p in parts])
    product = ring.matmul(a, b) if kind == "matmul_wrap" else ring.mul(a, b)
    r = ring.to_object(ring.sub(_sum(ring, [p["c"] for p in parts]), product), signed=False)
    msb = out.to_object(_sum(out, [p["msb"] for p in parts]), signed=False)
    low = out.to_object(_sum(out, [p["low"] for p in parts]), signed=False)
    half = 1 << (bits - 1)
    assert all(draw_shape(spec, k) == np.shape(fix[k]) for k in ("msb", "low"))
    assert len({int(v) for v in r.ravel()}) == r.size  # a fresh uniform mask per value
    assert all(m == v >> (bits - 1) for m, v in zip(msb.ravel(), r.ravel(), strict=True))
    assert all(lo == ((v % half) >> 20) % (1 << out_bits) for lo, v in zip(low.ravel(), r.ravel(), strict=True))
    with pytest.raises(ParameterError, match="out_ring_bits"):  # widening: a 'wrap' conversion's job
        CorrelationSpec(kind, 64, (5, 3), shape_b, out_ring_bits=128, shift=20)


@pytest.mark.parametrize("owner", [0, 1, 2])
@pytest.mark.parametrize(("bits", "out_bits"), [(64, 64), (128, 128), (128, 64)])
def test_owned_products_mask_the_owners_operand_with_its_own_part(owner: int, bits: int, out_bits: int) -> None:
    # A is the owner's part alone, B the others' parts (the owner draws none), c = A @ B + r with r's wrap parts
    ring, out = ring_for_bits(bits), ring_for_bits(out_bits)
    spec = CorrelationSpec("matmul_owned_wrap", bits, (4, 3), (3, 2), out_ring_bits=out_bits, shift=20, owner=owner)
    streams = [RandomSource.seeded(f"o-{i}") for i in range(3)]
    fix = deal(spec, streams, own=RandomSource.seeded("dealer"))
    parts = [draw(spec, RandomSource.seeded(f"o-{i}"), index=i) for i in range(3)]
    assert ["a" in p for p in parts] == [i == owner for i in range(3)]
    assert ["b" in p for p in parts] == [i != owner for i in range(3)]
    parts[0].update(fix)
    a = parts[owner]["a"]
    b = _sum(ring, [p["b"] for p in parts if "b" in p])
    r = ring.to_object(ring.sub(_sum(ring, [p["c"] for p in parts]), ring.matmul(a, b)), signed=False)
    msb = out.to_object(_sum(out, [p["msb"] for p in parts]), signed=False)
    low = out.to_object(_sum(out, [p["low"] for p in parts]), signed=False)
    assert len({int(v) for v in r.ravel()}) == r.size
    assert all(m == v >> (bits - 1) for m, v in zip(msb.ravel(), r.ravel(), strict=True))
    half = 1 << (bits - 1)
    assert all(lo == ((v % half) >> 20) % (1 << out_bits) for lo, v in zip(low.ravel(), r.ravel(), strict=True))
    with pytest.raises(ParameterError, match="owner"):  # beyond the parties
        deal(CorrelationSpec("matmul_owned_wrap", bits, (4, 3), (3, 2), shift=20, owner=3), streams,
             own=RandomSource.seeded("dealer"))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_word_level_corrections_equal_the_ring_methods(n: int) -> None:
    from mpdp.crypto.correlations.corrections import ring_corrections as _ring_corrections
    from mpdp.crypto.correlations.corrections import word_corrections as _fast_corrections
    from mpdp.crypto.correlations.corrections import word_path_applies as _fast

    for i, spec in enumerate(_MIXED):
        parts = [draw(spec, RandomSource.seeded(f"w-{i}-{j}"), index=j) for j in range(n)]
        r = spec.ring.random(RandomSource.seeded(f"r-{i}"), draw_shape(spec, "c")[1:] if spec.ring_bits == 128
                             else draw_shape(spec, "c")) if spec.kind.endswith("_wrap") else None
        want = _ring_corrections(spec, parts, r)
        if not _fast(spec):
            continue
        copies = [{k: v.copy() for k, v in p.items()} for p in parts]
        got = [np.full(draw_shape(spec, name), 7, dtype=np.uint64) for name in CORRECTED[spec.kind]]
        _fast_corrections(spec, parts, r, got)
        assert len(got) == len(want), spec
        for g, w in zip(got, want, strict=True):
            assert g.dtype == np.uint64 and np.array_equal(g, np.asarray(w, dtype=np.uint64)), spec
        for p, q in zip(parts, copies, strict=True):  # the drawn parts are not modified
            assert all(np.array_equal(p[k], q[k]) for k in q), spec
