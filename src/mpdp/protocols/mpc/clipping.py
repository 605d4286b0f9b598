"""The DP-SGD clipping factor ``min(1, 1/sqrt(x))`` of a shared squared norm, without a comparison.

Per-example clipping scales a gradient ``g`` by ``min(1, C / ||g||) = 1 / sqrt(max(x, 1))`` with
``x = ||g||^2 / C^2``. :func:`~mpdp.protocols.mpc.comparison.clip_norm` computes ``max(x, 1)`` with a secure
comparison and then ``inv_sqrt``; both compare ``x`` with public values. :func:`clip_factor` folds the
maximum into the comparisons ``inv_sqrt`` already performs: the normalisation finds the bucket
``x in [2^(k-1), 2^k)`` for ``k = 1..H`` only (the domain starts at 1), as one-hot shared bits ``h_k``, and
with ``u = sum_k h_k`` (1 exactly when ``x >= 1``)

    z    = x sum_k h_k 2^-k + (1 - u)          in [1/2, 1]
    root =   sum_k h_k 2^(-k/2) + (1 - u)

are linear in the bits (no product beyond ``x * scale``); Newton-Raphson gives ``y ~ 1/sqrt(z)`` and the
result is ``y * root``: ``1/sqrt(x)`` for ``x >= 1`` and ``1/sqrt(1) = 1`` otherwise (including ``x = 0`` and the
tiny negative values a truncation can produce). About 11 rounds fewer than comparison + ``inv_sqrt``.

Accuracy
--------
:meth:`ClipFactorParams.relative_error_bound`: the Newton-Raphson residual (as for
:class:`~mpdp.crypto.approximations.InvSqrtParams`), ``10 u`` of rounding in the iterations, ``u 2^(H/2)``
for the final product relative to the smallest result ``2^(-H/2)``; ``u = 2^-f``. The buckets are exact when
``H + f <= 61`` (HIGH_PRECISION: ``H <= 13``); beyond, the normalisation compares at a reduced precision
``r`` and inputs within one unit of 1 may land on the other side of 1, which adds ``2^-r``.

Security
--------
Semi-honest, up to n - 1 colluding computing parties, as the normalisation and products it is built from;
nothing is opened but uniformly masked values.

References
----------
Abadi et al., "Deep learning with differential privacy", CCS 2016 (per-example clipping); paper 002
(``/work/shared/papers/002_c49a9709e0e6dfb2.txt``), Eqs. 27-30 (clipping the whole per-example gradient
under MPC); Catrina and Saxena, FC 2010 (normalised Newton-Raphson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpdp.crypto.approximations import InvSqrtParams
from mpdp.crypto.fixed_point import FixedPointFormat
from mpdp.errors import DomainError, ParameterError, explain
from mpdp.protocols.mpc.functions import _mul, _normalise
from mpdp.protocols.mpc.tensor import SharedFixedPoint

__all__ = ["ClipFactorParams", "clip_factor"]


@dataclass(frozen=True)
class ClipFactorParams:
    """``high_exp`` (H): the input's public bound must be at most ``2^H``; Newton-Raphson ``iterations``."""

    high_exp: int = 30
    iterations: int = 3

    def __post_init__(self) -> None:
        if isinstance(self.high_exp, bool) or not isinstance(self.high_exp, int) or not 1 <= self.high_exp <= 58:
            raise ParameterError(explain("high_exp", self.high_exp, "an int in [1, 58]", "pass e.g. high_exp=30"))
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or not 0 <= self.iterations <= 8:
            raise ParameterError(explain("iterations", self.iterations, "an int in [0, 8]", "pass e.g. 3"))

    @classmethod
    def for_bound(cls, bound: float, *, iterations: int = 3) -> ClipFactorParams:
        """The smallest ``H`` covering inputs up to ``bound``."""
        if not (math.isfinite(bound) and bound >= 0):
            raise ParameterError(explain("bound", bound, "a finite number >= 0", "pass the input's public bound"))
        return cls(high_exp=max(1, math.ceil(math.log2(max(bound, 2.0)))), iterations=iterations)

    def exact_buckets(self, fmt: FixedPointFormat) -> bool:
        """Whether the normalisation compares the raw integers themselves (``x 2^f`` fits a signed word)."""
        return self.high_exp + fmt.frac_bits <= 61

    def reduced_bits(self, fmt: FixedPointFormat) -> int:
        """Fractional bits the normalisation compares at: ``f`` with :meth:`exact_buckets`, else what a 64-bit
        word leaves (``min(f, 59 - H)``)."""
        return fmt.frac_bits if self.exact_buckets(fmt) else min(fmt.frac_bits, 59 - self.high_exp)

    def relative_error_bound(self, fmt: FixedPointFormat) -> float:
        u = fmt.resolution
        residual = InvSqrtParams(low_exp=-1, high_exp=1, iterations=self.iterations).residual()
        edge = 0.0 if self.exact_buckets(fmt) else 2.0 ** -self.reduced_bits(fmt)
        return float(residual / 2 + 10 * u + u * 2.0 ** (self.high_exp / 2) + edge)


def clip_factor(x: SharedFixedPoint, params: ClipFactorParams | None = None) -> SharedFixedPoint:
    """``1 / sqrt(max(x, 1))`` elementwise, for shared ``x`` with public bound at most ``2^params.high_exp``."""
    p = params or ClipFactorParams.for_bound(x.bound)
    if not isinstance(p, ClipFactorParams):
        raise ParameterError(explain("params", p, "a ClipFactorParams", "pass ClipFactorParams(...)"))
    x = x.rescale()
    if x.bound > 2.0**p.high_exp:
        raise DomainError(explain("x.bound", x.bound, f"<= 2^{p.high_exp}",
                                  "declare a tighter bound or use ClipFactorParams.for_bound(x.bound)"))
    if p.reduced_bits(x.fmt) < 1:
        raise DomainError(explain("high_exp", p.high_exp, f"room for fractional bits in a 64-bit word with {x.fmt}",
                                  "lower the input bound"))
    scale, inside, root_scale = _normalise(x, 0, p.high_exp, False,
                                           [lambda k: 2.0**-k, lambda k: 1.0, lambda k: 2.0 ** (-k / 2)])
    outside = 1 - inside.assume_bound(1.0)
    z = (_mul(x, scale).assume_bound(1.0) + outside).assume_bound(1.0 + x.fmt.resolution * 4)
    root = (root_scale + outside).assume_bound(1.0)
    a, b = InvSqrtParams.INITIAL
    y = (z * (-b) + a).assume_bound(1.5)
    for _ in range(p.iterations):
        t = (z * y.square()).assume_bound(1.1)
        y = (y * (3.0 - t).times_pow2(-1)).assume_bound(1.5)
    return (y * root).assume_bound(1.0 + 1e-3)
