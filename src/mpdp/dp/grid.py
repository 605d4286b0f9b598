"""Continuous Laplace and Gaussian noise released on a grid ``2^-k``, sampled exactly.

Floating-point noise is not safe: Mironov (CCS 2012) showed that ``x + Laplace`` computed in doubles leaves
``x`` readable from the low-order bits, because the set of doubles the sum can take depends on ``x``. mpdp
never adds floating-point noise. A value is released on the grid ``G_k = 2^-k Z``:

1. the input is snapped to the grid, ``n = rint(x * 2^k)`` (exact: scaling by a power of two, then rounding
   to an integer, both exact in IEEE arithmetic);
2. integer noise ``Z`` is drawn *exactly* from the discrete Laplace or discrete Gaussian with the scale
   expressed in grid units (:mod:`mpdp.dp.samplers`);
3. ``n + Z``, computed exactly (int64, or Python ints when it would leave int64: a wrapped sum would put the
   release on the other side of the range and reveal the sign of the noise), is returned as
   ``(n + Z) * 2^-k`` rounded once to the nearest double (:func:`grid_to_float`).

The output distribution given ``x`` is exactly the discrete distribution on the grid shifted by ``n``: its
support is the whole grid whatever ``x`` is, so the low-order bits carry nothing but the noise. Step 3's
conversion to double (if ``|n + Z| >= 2^53``) is a deterministic function of the exact private output, i.e.
post-processing, which cannot weaken the guarantee; so is refusing an output beyond the float range
(:class:`~mpdp.errors.EncodingOverflowError`).

Snapping changes the sensitivity: per coordinate ``|rint(a) - rint(b)| <= |a - b| + 1``, so in grid units
the L1 sensitivity is at most ``floor(Δ1 2^k) + d`` and the L2 sensitivity at most ``Δ2 2^k + sqrt(d)``
for ``d`` coordinates (:func:`grid_l1_sensitivity`, :func:`grid_l2_sensitivity`). The mechanisms in
:mod:`mpdp.dp.mechanisms` calibrate to these inflated sensitivities, so their stated guarantees hold exactly;
with the default grid (about ``2^40`` grid steps per unit of noise scale, and at least ``2^19`` per unit of
sensitivity when one is given) the inflation is at most ``d 2^-19`` of the sensitivity, and ``d 2^-39 ε`` for
the Laplace mechanism at ``ε >= 2^-20``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp._exact import as_rational
from mpdp.dp.samplers import discrete_gaussian, discrete_laplace
from mpdp.errors import DomainError, EncodingOverflowError, ParameterError, explain
from mpdp.numeric import real_array
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "GRID_RESOLUTION_BITS",
    "default_grid_bits",
    "gaussian_on_grid",
    "grid_l1_sensitivity",
    "grid_l2_sensitivity",
    "grid_to_float",
    "laplace_on_grid",
    "snap_to_grid",
]

# Default grid: about 2^40 grid steps per unit of noise scale. Noise then needs ~2^46 grid units at most,
# leaving |x| up to ~2^21 noise scales representable in int64 with a wide margin.
GRID_RESOLUTION_BITS = 40
_MAX_GRID_UNITS = 1 << 61


_SENSITIVITY_STEP_BITS = 20


def default_grid_bits(scale: float, sensitivity: float | None = None) -> int:
    """The grid exponent ``k`` giving about ``2^40`` grid steps per ``scale`` (a noise scale or std), and, when
    ``sensitivity`` is given, at least ``2^19`` steps per unit of sensitivity: snapping adds up to one grid step
    per coordinate to the sensitivity, which must stay small against it even when the noise scale is many
    orders of magnitude larger (epsilon near 0). The scale in grid units is then at least about
    ``2^19 scale / sensitivity`` and may exceed int64: the samplers then draw on Python integers."""
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not (math.isfinite(scale) and scale > 0):
        raise ParameterError(explain("scale", scale, "a finite number > 0", "pass the noise scale"))
    k = GRID_RESOLUTION_BITS - math.frexp(scale)[1]
    if sensitivity is not None:
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int | float) or not (
            math.isfinite(sensitivity) and sensitivity > 0
        ):
            raise ParameterError(explain("sensitivity", sensitivity, "a finite number > 0", "pass the sensitivity"))
        k = max(k, _SENSITIVITY_STEP_BITS - math.frexp(sensitivity)[1])
    return k


def _check_bits(grid_bits: int) -> int:
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, int | np.integer) or not -960 <= grid_bits <= 960:
        raise ParameterError(
            explain("grid_bits", grid_bits, "an int k in [-960, 960] (grid spacing 2^-k)", "pass e.g. grid_bits=30")
        )
    return int(grid_bits)


def snap_to_grid(value: Any, grid_bits: int) -> npt.NDArray[np.int64]:
    """``rint(value * 2^k)`` as int64, exactly; refuses non-numbers, non-finite values and values the grid
    cannot hold."""
    k = _check_bits(grid_bits)
    x = real_array(value, "value")
    if not np.all(np.isfinite(x)):
        raise DomainError(explain("value", value, "finite numbers", "remove NaN/inf before releasing"))
    scaled = np.ldexp(x, k)  # exact (barring overflow, caught below)
    if x.size and not float(np.max(np.abs(scaled))) < _MAX_GRID_UNITS:
        raise DomainError(
            explain(
                "value",
                f"max |value| = {float(np.max(np.abs(x))):.6g}",
                f"|value| < 2^{61 - k} on the grid 2^-{k}",
                "pass a smaller grid_bits (a coarser grid) or rescale the query",
            )
        )
    return np.rint(scaled).astype(np.int64)


def grid_to_float(units: npt.NDArray[Any], grid_bits: int) -> npt.NDArray[np.float64]:
    """``units * 2^-k`` for exact integer grid values (int64 or Python ints), each rounded once to the nearest
    double; a value beyond the double range is an :class:`~mpdp.errors.EncodingOverflowError`."""
    k = _check_bits(grid_bits)
    if units.dtype != object:
        with np.errstate(over="raise"):
            try:
                return np.ldexp(units.astype(np.float64), -k)  # int64 -> float64 rounds to nearest
            except FloatingPointError as exc:
                raise EncodingOverflowError(explain("release", "a value beyond the float64 range",
                                                    "|value| < 1.8e308", "rescale the query")) from exc
    try:
        # int / int and float(int) round correctly (to nearest) in Python, whatever the sizes
        flat = [v / (1 << k) if k >= 0 else float(v << -k) for v in units.reshape(-1).tolist()]
    except OverflowError as exc:
        raise EncodingOverflowError(explain("release", "a value beyond the float64 range", "|value| < 1.8e308",
                                            "rescale the query or use a larger epsilon")) from exc
    return np.array(flat, dtype=np.float64).reshape(units.shape)


def grid_l1_sensitivity(sensitivity: Any, grid_bits: int, dim: int) -> int:
    """L1 sensitivity in grid units after snapping ``dim`` coordinates: ``floor(Δ1 2^k) + dim`` (an int)."""
    delta = as_rational(sensitivity, "sensitivity")
    k = _check_bits(grid_bits)
    return math.floor(delta * Fraction(2) ** k) + int(dim)


def grid_l2_sensitivity(sensitivity: float, grid_bits: int, dim: int) -> float:
    """L2 sensitivity in grid units after snapping ``dim`` coordinates: ``Δ2 2^k + sqrt(dim)``, rounded up."""
    k = _check_bits(grid_bits)
    return math.nextafter(math.ldexp(float(sensitivity), k) + math.sqrt(dim), math.inf)


def laplace_on_grid(
    scale: Any, size: int | tuple[int, ...], *, grid_bits: int, rng: RandomSource | None = None
) -> npt.NDArray[np.float64]:
    """Laplace noise of ``scale`` on the grid ``2^-k``: ``2^-k Z`` with ``Z ~ DLap(scale 2^k)`` exactly."""
    k = _check_bits(grid_bits)
    b = as_rational(scale, "scale") * Fraction(2) ** k
    return grid_to_float(np.asarray(discrete_laplace(b, size, rng=resolve(rng))), k)


def gaussian_on_grid(
    sigma: Any, size: int | tuple[int, ...], *, grid_bits: int, rng: RandomSource | None = None
) -> npt.NDArray[np.float64]:
    """Gaussian noise of std ``sigma`` on the grid ``2^-k``: ``2^-k Z`` with ``Z ~ N_Z(0, sigma^2 4^k)`` exactly."""
    k = _check_bits(grid_bits)
    s = as_rational(sigma, "sigma") * Fraction(2) ** k
    return grid_to_float(np.asarray(discrete_gaussian(s * s, size, rng=resolve(rng))), k)
