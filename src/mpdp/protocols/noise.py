"""Distributed DP noise: per-party discrete Gaussian shares, and noise generated inside the secure computation.

Two ways to put noise on a secret-shared value before it is revealed, both exactly on the fixed-point grid
``2^-f`` of the shares (integer noise in grid units added to ring shares, so no floating-point noise ever
touches a released value; see :mod:`mpdp.dp.grid` for why that matters):

(a) **Distributed discrete Gaussian** (:func:`add_distributed_gaussian`). Each of the ``P`` share holders adds
    ``N_Z(0, sigma_units^2 / P)`` to its own share, locally. The revealed sum carries the sum of ``P``
    independent discrete Gaussians, which Kairouz, Liu and Steinke (2021, Theorem 11) show is as private as one
    ``N_Z(0, sigma^2)`` up to a small ``tau`` (:func:`distributed_gaussian_rho`). A party knows its own share,
    so towards it only ``P - 1`` shares protect the data (:func:`distributed_gaussian_rho` with
    ``known_shares=1``); a coalition of ``c`` holders faces ``P - c`` shares.

(b) **Noise generated inside the MPC from joint randomness** (:func:`mpc_discrete_laplace`,
    :func:`mpc_discrete_gaussian`), as paper 003 does: no coalition short of all computing parties knows
    anything about the noise, so a *single* copy of the noise is enough against every such coalition.

    *Discrete Laplace.* A geometric variable with ratio ``q = exp(-1/b)`` has independent binary digits:
    ``P(G = k) ∝ q^k = prod_j (q^(2^j))^(k_j)``, so ``G = sum_j 2^j B_j`` with independent
    ``B_j ~ Bernoulli(q^(2^j) / (1 + q^(2^j)))`` (truncated at ``2^J`` with ``q^(2^J) <= 2^-64``), and
    ``G_1 - G_2`` of two independent geometrics is the discrete Laplace ``P(z) ∝ q^|z|``. Each biased bit is
    ``[c_j < U]`` for a public threshold ``c_j`` and a uniform 64-bit word ``U`` that is the XOR of one
    random word per computing party (joint randomness: uniform if any party is honest, and no party sends
    anything to make it). The comparisons run as one vectorised boolean circuit (six AND rounds), the bits
    become additive shares with daBits (one round) and ``G`` is a public linear combination of them.

    *Discrete Gaussian.* Canonne, Kamath and Steinke's rejection sampler run inside the MPC: a candidate
    ``Y = (1 - 2 S) G`` from the Laplace step above (``S`` a joint random bit, ``t = floor(sigma) + 1``) is
    accepted with probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``, computed with the engine's secure
    ``exp`` and compared with a joint uniform. Only the accept/reject bits are opened; in rejection sampling
    they are independent of the accepted values, so they reveal nothing about the noise.

Security
--------
Semi-honest computing parties with the engine's correlation provider (a trusted dealer, or HE triples for two
parties). (a): each holder knows its own share of the noise; state the accounting accordingly. (b): any
coalition of up to ``P - 1`` computing parties learns nothing about the noise (each ``U`` has at least one
unknown XOR term); the opened accept bits are public randomness.

Accuracy
--------
(a) is exact: the noise is exactly the sum of ``P`` discrete Gaussians in grid units. (b) Laplace: thresholds
are rounded to 64 bits and the geometric truncated where ``q^(2^J) <= 2^-64``; the output's total variation
distance from the discrete Laplace is at most ``(2 J + 2) 2^-64`` per sample, which a release must add to its
delta (``MPC_LAPLACE_TV``). (b) Gaussian is *approximate*: the acceptance probability comes from the engine's
fixed-point ``exp`` (arguments below -16 clipped there) compared with a joint uniform on the grid 2^-f. At
``FAST`` (f = 20) the ``exp`` is within ``ExpParams(low=-16, high=1).absolute_error_bound(FAST)`` = 6.3e-4 of
e^x on [-16, 0] (a worst case over the roundings; the largest error measured over 240,000 arguments is
5.4e-5); with the 2^-20 comparison grid the acceptance probability is off by at most ``eta`` = that bound plus
2^-20, so with an overall acceptance rate ``A >= 0.7`` (true for every sigma of at least 8 grid units,
``MIN_GAUSSIAN_UNITS``; smaller ones are refused) the output's total variation distance from the discrete
Gaussian is at most ``eta / (A - eta) + 2 e^-16`` = 9.1e-4 per sample (:func:`mpc_gaussian_tv`,
``MPC_GAUSSIAN_TV``), which a release must add to its delta: far too much for releases of many samples. Where
that matters use (a) (exact) or the in-MPC Laplace (exact up to 2^-57).

(c) **Distributed discrete Laplace** for pure-DP releases (sums of Pólya differences, each holder adding one to
    its share) lives in :mod:`mpdp.protocols.distributed_laplace`.

References
----------
P. Kairouz, Z. Liu, T. Steinke, "The Distributed Discrete Gaussian Mechanism for Federated Learning with Secure
Aggregation", ICML 2021; C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020; B. Jayaraman et al., paper 003 (NeurIPS 2018, sections 1 and 3: noise generated
inside the MPC); L. Devroye, "Non-Uniform Random Variate Generation" (1986), binary digits of geometrics.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.crypto.ring import RingArray
from mpdp.dp.samplers import discrete_gaussian
from mpdp.errors import ParameterError, PrecisionError, ProtocolAbortError, explain
from mpdp.numeric import positive_finite
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "MIN_GAUSSIAN_UNITS",
    "MPC_GAUSSIAN_TV",
    "MPC_LAPLACE_TV",
    "add_distributed_gaussian",
    "distributed_gaussian_rho",
    "gaussian_acceptance",
    "geometric_bit_probabilities",
    "mpc_discrete_gaussian",
    "mpc_discrete_laplace",
    "mpc_gaussian_tv",
]

#: the smallest overall acceptance rate of the rejection sampler that :func:`mpc_gaussian_tv` assumes; it holds
#: for every sigma of at least MIN_GAUSSIAN_UNITS grid units (:func:`gaussian_acceptance`: 0.71 there, rising
#: to 0.760), which :func:`mpc_discrete_gaussian` requires
_ACCEPTANCE = 0.7
MIN_GAUSSIAN_UNITS = 8


def gaussian_acceptance(sigma_units: float) -> float:
    """The exact overall acceptance rate of :func:`mpc_discrete_gaussian`'s rejection step for ``sigma`` in grid
    units: the proposal ``(1 - 2 S) G``, ``G`` geometric with ``q = e^(-1/t)``, ``t = floor(sigma) + 1``, a
    "negative zero" discarded, accepted with probability ``exp(-(|y| - sigma^2 / t)^2 / (2 sigma^2))`` (the sum
    runs until the geometric's tail is below 1e-26). ``sigma_units`` in ``(0, 2^20]``."""
    sigma_units = _check_positive("sigma_units", sigma_units)
    if sigma_units > 1 << 20:
        raise ParameterError(explain("sigma_units", sigma_units, "at most 2^20 (the sum has 60 sigma terms)",
                                     "the rate is 0.71 to 0.73 for every sigma >= 10: use that"))
    t = math.floor(sigma_units) + 1
    q = math.exp(-1.0 / t)
    g = np.arange(0, 60 * t + 1, dtype=np.float64)
    weights = (1 - q) * q**g
    weights[0] *= 0.5
    return float(np.sum(weights * np.exp(-((g - sigma_units**2 / t) ** 2) / (2 * sigma_units**2))))


def mpc_gaussian_tv(fmt: FixedPointFormat = FAST) -> float:
    """Total variation distance bound per sample of :func:`mpc_discrete_gaussian` in ``fmt`` (see Accuracy):
    the acceptance probability is off by at most ``eta`` (the ``exp``'s absolute error on [-16, 0] plus the
    comparison grid), so the accepted value's law is within ``eta / (A - eta)`` of the exact one, plus the
    ``2 e^-16`` of clipping the ``exp``'s argument at -16."""
    from mpdp.crypto.approximations import ExpParams

    eta = ExpParams(low=-16.0, high=1.0).absolute_error_bound(fmt) + fmt.resolution
    return eta / (_ACCEPTANCE - eta) + 2 * math.exp(-16)


#: Total variation distance bound per sample of :func:`mpc_discrete_gaussian` at FAST (see Accuracy).
MPC_GAUSSIAN_TV = mpc_gaussian_tv(FAST)

#: Total variation distance from the exact discrete Laplace per sample of :func:`mpc_discrete_laplace`,
#: at most (2 J + 2) 2^-64 with J <= 64 digit positions.
MPC_LAPLACE_TV = 130 * 2.0**-64


def _check_positive(name: str, value: Any) -> float:
    return positive_finite(value, name)


# -- (a) distributed discrete Gaussian -----------------------------------------------------------------------
def add_distributed_gaussian(share: RingArray, *, sigma: float, parties: int, fmt: FixedPointFormat,
                             rng: RandomSource | None = None) -> RingArray:
    """This holder's share plus its part of a distributed discrete Gaussian of total std ``sigma`` (reals).

    Adds ``N_Z(0, (sigma 2^f)^2 / parties)`` grid units to ``share`` (ring elements at scale 2^f of ``fmt``),
    drawn exactly (:func:`mpdp.dp.samplers.discrete_gaussian`) from ``rng`` (this party's own source).
    """
    sigma = _check_positive("sigma", sigma)
    if isinstance(parties, bool) or not isinstance(parties, int) or parties < 1:
        raise ParameterError(explain("parties", parties, "an int >= 1", "pass the number of share holders"))
    if not isinstance(fmt, FixedPointFormat):
        raise ParameterError(explain("fmt", fmt, "a FixedPointFormat", "pass the shares' format"))
    ring = fmt.ring
    share = ring.check(share, "share")
    # 40 standard deviations is beyond any sample the exact sampler returns with probability > 2^-1000.
    if 40 * sigma * 2.0**fmt.frac_bits >= 2.0**fmt.raw_capacity_bits:
        raise PrecisionError(explain("sigma", sigma, f"noise that fits {fmt}", "use fewer fractional bits"))
    variance_units = Fraction(sigma) ** 2 * Fraction(4) ** fmt.frac_bits / parties
    noise = np.asarray(discrete_gaussian(variance_units, ring.shape(share), rng=resolve(rng)), dtype=np.int64)
    return ring.add(share, ring.from_int(noise))


def distributed_gaussian_rho(*, sensitivity: float, sigma: float, parties: int, dim: int, frac_bits: int,
                             known_shares: int = 0) -> float:
    """zCDP of a release carrying ``parties - known_shares`` unknown shares of a distributed discrete Gaussian.

    Each share is ``N_Z(0, s^2)`` in grid units with ``s^2 = (sigma 2^f)^2 / parties``; the ``m`` unknown
    ones sum to noise of variance ``m s^2``. KLS 2021 (Theorem 11 with Proposition 14): for an L2 sensitivity
    ``Delta`` (grid units ``Delta 2^f + sqrt(dim)``, the rounding inflation of :mod:`mpdp.dp.grid`) the release is
    ``rho``-zCDP with ``rho = Delta_units^2 / (2 m s^2) + tau dim`` where
    ``tau = 10 sum_{k=1}^{m-1} exp(-2 pi^2 s^2 k / (k + 1))``.

    ``known_shares`` is how many shares the observer knows (1 for a holder towards itself, ``c`` for a
    coalition of ``c`` holders); the observer must not know all of them.
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    sigma = _check_positive("sigma", sigma)
    for name, value, low, high in (("parties", parties, 1, 1 << 16), ("dim", dim, 1, 1 << 40),
                                   ("frac_bits", frac_bits, 0, 256)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ParameterError(explain(name, value, f"an int in [{low}, {high}]", f"pass the public {name}"))
    if isinstance(known_shares, bool) or not isinstance(known_shares, int) or not 0 <= known_shares < parties:
        raise ParameterError(explain("known_shares", known_shares, f"0 <= known_shares < parties = {parties}",
                                     "an observer who knows every share knows the noise: no privacy"))
    m = parties - known_shares
    units = sigma * 2.0**frac_bits
    s2 = units * units / parties  # inf rather than OverflowError for an absurd sigma (then rho is 0)
    if not s2 > 0:
        raise PrecisionError(explain("sigma", sigma, f"noise of at least one grid unit 2^-{frac_bits}",
                                     "use a larger sigma or more fractional bits"))
    delta_units = sensitivity * 2.0**frac_bits + math.sqrt(dim)
    tau = 10.0 * sum(math.exp(-2 * math.pi**2 * s2 * k / (k + 1)) for k in range(1, m))
    return delta_units**2 / (2 * m * s2) + tau * dim


# -- (b) noise inside the MPC ------------------------------------------------------------------------------------
def geometric_bit_probabilities(scale_units: float) -> list[float]:
    """``P(B_j = 1) = q^(2^j) / (1 + q^(2^j))``, ``q = exp(-1/scale_units)``, for the digits that matter.

    Digits stop at the first ``J`` with ``q^(2^J) <= 2^-64``.
    """
    b = _check_positive("scale_units", scale_units)
    out: list[float] = []
    j = 0
    while True:
        log_qj = -(2.0**j) / b  # log q^(2^j)
        if log_qj <= -64 * math.log(2):
            return out
        qj = math.exp(log_qj)
        out.append(qj / (1 + qj))
        j += 1
        if j > 63:
            raise PrecisionError(explain("scale_units", scale_units, "below 2^57 grid units",
                                         "use fewer fractional bits"))


def _biased_bits(session: Any, probabilities: list[float], count: int) -> RingArray:
    """Additive shares (ring of ``session.fmt``, scale 0) of independent bits ``B_j ~ Bernoulli(p_j)``.

    Shape ``(len(probabilities), count)``. Joint randomness: each party's own random words, XOR-combined.
    """
    from mpdp.protocols.mpc.bits import lanes_to_ring
    from mpdp.protocols.mpc.comparison import less_than_public

    shape = (len(probabilities), count)
    words = session.comm.rng.uint64(shape)  # this party's XOR share of U
    # [c < U] has probability (2^64 - 1 - c) / 2^64 = T / 2^64 for c = 2^64 - 1 - T, T = round(p 2^64).
    thresholds = np.array([(1 << 64) - 1 - min((1 << 64) - 1, round(p * 2.0**64)) for p in probabilities],
                          dtype=np.uint64)
    public = np.broadcast_to(thresholds[:, None], shape).copy()
    bits = less_than_public(session, public[None], words[None])
    shares: RingArray = lanes_to_ring(session, bits, np.array([0], dtype=np.int64), session.fmt.ring)[0]
    return shares


def _geometric_shares(session: Any, scale_units: float, count: int, *, pairs: int) -> list[RingArray]:
    """``pairs`` independent geometric samples per element as ring shares (scale 0)."""
    probs = geometric_bit_probabilities(scale_units)
    ring = session.fmt.ring
    bits = _biased_bits(session, probs * pairs, count)
    weights = np.array([1 << j for j in range(len(probs))], dtype=np.int64)
    out = []
    for k in range(pairs):
        block = ring.apply(bits, lambda a, k=k: a[k * len(probs):(k + 1) * len(probs)])
        weighted = ring.mul_int(block, weights[:, None])
        out.append(ring.sum(weighted, 0))
    return out


def mpc_discrete_laplace(session: Any, shape: tuple[int, ...], *, scale: float) -> Any:
    """Shared noise ``2^-f Z`` with ``Z ~ DLap(scale 2^f)`` (Laplace of ``scale`` on the grid), made jointly.

    Every computing party of ``session`` (a :class:`~mpdp.protocols.mpc.MPCSession`) calls it with the same
    arguments; returns a :class:`~mpdp.protocols.mpc.SharedFixedPoint` at the session's format and scale f,
    with a public bound on |noise|.
    """
    b = _check_positive("scale", scale)
    fmt: FixedPointFormat = session.fmt
    units = b * 2.0**fmt.frac_bits
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    g1, g2 = _geometric_shares(session, units, count, pairs=2)
    digits = len(geometric_bit_probabilities(units))
    bound = (2.0**digits) * 2.0**-fmt.frac_bits
    if not fmt.raw_bound_ok(bound, fmt.frac_bits):
        raise PrecisionError(explain("scale", scale, f"Laplace noise that fits {fmt}", "use fewer fractional bits"))
    ring = fmt.ring
    noise = ring.apply(ring.sub(g1, g2), lambda a: a.reshape(shape))
    return session.from_shares(noise, bound=bound)


def mpc_discrete_gaussian(session: Any, shape: tuple[int, ...], *, sigma: float, max_rounds: int = 64) -> Any:
    """Shared noise ``2^-f Y`` with ``Y`` ~ (approximately, see Accuracy) ``N_Z(0, (sigma 2^f)^2)``, made jointly.

    Rejection sampling inside the MPC; only accept bits are opened. Every computing party calls it with the
    same arguments. Needs the engine's ``exp`` (:mod:`mpdp.protocols.mpc.functions`); session formats on
    Z_2^64 (e.g. ``FAST``).
    """
    from mpdp.crypto.approximations import ExpParams
    from mpdp.protocols.mpc.comparison import less
    from mpdp.protocols.mpc.functions import exp

    s = _check_positive("sigma", sigma)
    fmt: FixedPointFormat = session.fmt
    if fmt.ring_bits > 64:
        raise ParameterError(explain("session format", fmt, "a Z_2^k format with k <= 64", "use FAST"))
    ring = fmt.ring
    f = fmt.frac_bits
    sigma_units = s * 2.0**f
    if sigma_units < MIN_GAUSSIAN_UNITS:
        raise ParameterError(explain("sigma", s, f">= {MIN_GAUSSIAN_UNITS} grid units ({MIN_GAUSSIAN_UNITS} * 2^-{f})",
                                     "MPC_GAUSSIAN_TV assumes an acceptance rate >= 0.7, which smaller sigma do "
                                     "not reach: pass a larger sigma or a format with more fractional bits"))
    t = math.floor(sigma_units) + 1
    g_bound = _geo_bound(float(t), fmt) * 2.0**f  # bound on G in grid units
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    accepted: list[RingArray] = []
    have = 0
    for _ in range(max_rounds):
        need = count - have
        if need <= 0:
            break
        batch = max(8, int(need * 1.6) + 4)
        (g,) = _geometric_shares(session, float(t), batch, pairs=1)   # |Y| = G grid units, shares at scale 0
        sign = _biased_bits(session, [0.5], batch)[0]                   # S, Y = (1 - 2 S) G
        g_real = session.from_shares(ring.mul_int(g, 1 << f), bound=g_bound)  # G as a real at scale f
        s_bit = session.from_shares(sign, bound=1.0, scale=0)
        # accept with probability exp(-(G - sigma^2/t)^2 / (2 sigma^2)), in units of sigma
        z = g_real * (1.0 / sigma_units) - sigma_units / t
        arg = _clip_below(z.square() * -0.5, -16.0)
        accept = less(_uniform(session, batch), exp(arg, ExpParams(low=-16.0, high=1.0)))
        # CKS: discard "negative zero" so that 0 keeps its mass.
        keep_bit = accept - accept * (_is_zero(session, g, g_bound) * s_bit)
        # (1 - 2 S) G as a real at scale f: one secure product.
        signed = g_real - g_real * s_bit * 2
        keep = np.rint(keep_bit.reveal()).astype(np.int64).astype(bool)
        accepted.append(ring.apply(signed.rescale().share, lambda a, m=keep: a[m]))
        have += int(keep.sum())
    if have < count:
        raise ProtocolAbortError(f"the in-MPC Gaussian sampler accepted {have} of {count} samples in {max_rounds} "
                                 "rounds, which happens with negligible probability; rerun")
    all_noise = ring.combine(accepted, lambda xs: np.concatenate(xs))
    # The accepted values are G grid units as reals at scale f (raw G 2^f); declared at scale 2f they are the
    # noise G 2^-f, and rescaling divides the raw values by 2^f exactly (their low f bits are zero).
    noise = ring.apply(all_noise, lambda a: a[:count].reshape(shape))
    at_2f = session.from_shares(noise, bound=g_bound * 2.0**-f, scale=2 * f)
    return at_2f.rescale()


def _geo_bound(scale_units: float, fmt: FixedPointFormat) -> float:
    """Public bound (reals) on a truncated geometric of ``scale_units`` grid units."""
    return 2.0 ** len(geometric_bit_probabilities(scale_units)) * 2.0**-fmt.frac_bits


def _uniform(session: Any, count: int) -> Any:
    """A joint uniform on the grid ``[0, 1)`` at scale f: f XOR-shared random bits made additive."""
    from mpdp.protocols.mpc.bits import lanes_to_ring

    fmt: FixedPointFormat = session.fmt
    ring = fmt.ring
    words = session.comm.rng.uint64((count,))
    lanes = np.arange(fmt.frac_bits, dtype=np.int64)
    bits = lanes_to_ring(session, words, lanes, ring)  # (f, count)
    weights = np.array([1 << j for j in range(fmt.frac_bits)], dtype=np.int64)
    value = ring.sum(ring.mul_int(bits, weights[:, None]), 0)
    return session.from_shares(value, bound=1.0)


def _is_zero(session: Any, g: RingArray, bound: float) -> Any:
    """Shared bit [g == 0] for a shared integer 0 <= g <= bound (scale 0): 1 - [0 < g]."""
    from mpdp.protocols.mpc.comparison import ltz

    x = session.from_shares(g, bound=bound, scale=0)
    positive = ltz(-x)  # [-g < 0] = [g > 0]
    return positive.__rsub__(1)


def _clip_below(x: Any, low: float) -> Any:
    from mpdp.protocols.mpc.comparison import maximum

    return maximum(x, low).assume_bound(-low)
