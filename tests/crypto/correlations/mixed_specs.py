"""Specs of every kind shared by the correlation tests."""

from __future__ import annotations

from mpdp.crypto.correlations import CorrelationSpec

MIXED = [  # every kind, one-word and two-word rings, narrow rings, conversions both ways, broadcasting
    CorrelationSpec("mul", 64, (3, 4), (4,)), CorrelationSpec("mul", 12, (2, 5), (2, 1)),
    CorrelationSpec("mul", 128, (3, 1), (3, 4)), CorrelationSpec("matmul", 64, (3, 4), (4, 2)),
    CorrelationSpec("matmul", 128, (2, 3), (3, 2)), CorrelationSpec("square", 20, (6,)),
    CorrelationSpec("square", 128, (2, 2)), CorrelationSpec("wrap", 64, (7,), out_ring_bits=128),
    CorrelationSpec("wrap", 128, (5,), out_ring_bits=128, shift=58), CorrelationSpec("wrap", 128, (5,), shift=64),
    CorrelationSpec("wrap", 128, (4,), out_ring_bits=64, shift=101), CorrelationSpec("wrap", 40, (3,), shift=7),
    CorrelationSpec("wrap", 64, (3,), out_ring_bits=30, shift=0), CorrelationSpec("compare", 64, (2, 3)),
    CorrelationSpec("compare", 128, (4,)), CorrelationSpec("compare", 16, (4,)), CorrelationSpec("and", 64, (2, 8, 3)),
    CorrelationSpec("dabit", 64, (70,)), CorrelationSpec("dabit", 128, (3, 5)), CorrelationSpec("dabit", 9, (4,)),
    CorrelationSpec("mul_wrap", 64, (4, 3), (4, 1), shift=24), CorrelationSpec("mul_wrap", 128, (5,), (5,), shift=48),
    CorrelationSpec("mul_wrap", 128, (3, 2), (3, 1), out_ring_bits=64, shift=101),
    CorrelationSpec("matmul_wrap", 64, (4, 3), (3, 2), shift=24), CorrelationSpec("matmul_wrap", 128, (2, 3), (3, 2)),
    CorrelationSpec("square_wrap", 30, (5,), shift=10), CorrelationSpec("square_wrap", 128, (2, 2), shift=127),
    CorrelationSpec("matmul_owned_wrap", 64, (4, 3), (3, 2), shift=24, owner=0),
    CorrelationSpec("matmul_owned_wrap", 128, (2, 3), (3, 2), out_ring_bits=64, shift=90, owner=0),
    CorrelationSpec("mul", 64, (), ()), CorrelationSpec("wrap", 128, (), shift=3),  # 0-d: the ring-method path
]
