"""Sensitivity of DPVI's noisy gradient sum, in exact arithmetic and under fixed-point MPC (paper 002).

Neighbouring datasets add or remove one record (DP-SGD's convention, and what the subsampled-Gaussian
accountants assume). Each step releases ``sum_(i in batch) clip(v_i) + noise`` where ``v_i`` is record ``i``'s
whole gradient (all parties' coordinates, paper 002 Eq. 27). With exact clipping to norm ``C`` the L2
sensitivity is ``C`` (:func:`clipped_sum_sensitivity`).

Under MPC the released sum is computed in fixed point, so a record's *computed* contribution can exceed ``C``
slightly and the rounding of the batch sum itself moves with the batch. :func:`mpc_clip_constant` returns the
smaller constant ``C'`` the secure computation must clip to so that the sensitivity of what is actually
released is still at most ``C``:

* the clipping factor ``c = 1/sqrt(max(n2, 1))`` (``n2 = ||v||^2 / C'^2``) carries a relative error
  ``eps_c`` (:class:`~mpdp.protocols.mpc.clipping.ClipFactorParams`), and ``n2`` an absolute error ``e_n``
  from the products and input encodings that form it: the clipped norm is at most
  ``C' (1 + eps_c) / sqrt(1 - e_n)``;
* the per-example weights ``w_ik = c_i r_ik`` are rounded to the low-precision grid (``|dw| <= rho``) before the
  gradient is assembled: the contribution moves by at most ``rho (sqrt(K N) + sqrt(K))``, ``N`` the public
  bound on a per-(record, component) squared gradient norm;
* anything else that moves one record's computed contribution away from its clipped gradient (e.g. its
  statistics' encoding in a coarse format) by at most ``e_r`` in L2 norm;
* the batch sum's own rounding, per coordinate at most ``e_d``, differs between neighbours by at most
  ``2 ||e||_2``.

Hence ``C' = (C - rho (sqrt(K N) + sqrt(K)) - e_r - 2 ||e||_2) sqrt(1 - e_n) / (1 + eps_c)``. The release is a
mixture (over the share randomness, which is independent of the data and of the noise) of Gaussian
mechanisms whose shifts are all at most ``C``, so the accountants' guarantees for sensitivity ``C`` hold.

References
----------
Abadi et al., CCS 2016 (clipped sums); paper 002 (Tajeddine et al., arXiv 2020;
:data:`mpdp.learning.papers.PAPERS`), section 4.4 Eqs. 27-30 and section 5.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, PrecisionError, explain

__all__ = ["clipped_sum_sensitivity", "mpc_clip_constant"]


def _positive(name: str, value: float, fix: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ParameterError(explain(name, value, "a finite number > 0", fix))
    return float(value)


def _non_negative(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ParameterError(explain(name, value, "a finite number >= 0", f"pass the {name} bound"))
    return float(value)


def clipped_sum_sensitivity(clip: float) -> float:
    """L2 sensitivity of ``sum_i clip_C(v_i)`` under add/remove-one: ``C``."""
    return _positive("clip", clip, "pass the clipping bound C, e.g. clip=1.0")


def mpc_clip_constant(clip: float, *, clip_factor_error: float, norm_error: float, weight_resolution: float,
                      components: int, sq_norm_bound: float, sum_errors: npt.ArrayLike,
                      record_error: float = 0.0) -> float:
    """The clipping constant ``C'`` for the secure computation so that the released sum has sensitivity ``C``.

    Parameters
    ----------
    clip:
        ``C``, the sensitivity the accountant is told.
    clip_factor_error:
        ``eps_c``, the clipping factor's relative error bound.
    norm_error:
        ``e_n``, the absolute error bound of the computed ``||v||^2 / C'^2`` (must be < 1/2).
    weight_resolution:
        ``rho``, the rounding bound of the weights ``w_ik`` on the low-precision grid.
    components:
        ``K``.
    sq_norm_bound:
        ``N``, a public bound on every per-(record, component) squared gradient norm, summed over parties.
    sum_errors:
        ``e_d`` per released coordinate: the bound on the batch sum's rounding.
    record_error:
        ``e_r``, a bound on the L2 distance between one record's computed contribution and its clipped
        gradient beyond the terms above (default 0).

    Raises
    ------
    PrecisionError
        When the margins eat more than half of ``C`` (the formats are too coarse for this clip and model).
    """
    C = clipped_sum_sensitivity(clip)
    eps_c = _non_negative("clip_factor_error", clip_factor_error)
    e_n = _non_negative("norm_error", norm_error)
    rho = _non_negative("weight_resolution", weight_resolution)
    n_bound = _non_negative("sq_norm_bound", sq_norm_bound)
    e_r = _non_negative("record_error", record_error)
    if isinstance(components, bool) or not isinstance(components, int) or components < 1:
        raise ParameterError(explain("components", components, "an int >= 1", "pass K"))
    errors = np.asarray(sum_errors, dtype=np.float64)
    if errors.ndim != 1 or not np.all(np.isfinite(errors)) or np.any(errors < 0):
        raise ParameterError(explain("sum_errors", errors.shape, "a vector of finite bounds >= 0",
                                     "pass one per coordinate"))
    if e_n >= 0.5:
        raise PrecisionError(explain("norm_error", e_n, "< 1/2",
                                     "use more fractional bits in the high-precision format"))
    margin = rho * (math.sqrt(components * n_bound) + math.sqrt(components)) + e_r \
        + 2.0 * float(np.linalg.norm(errors))
    inner = (C - margin) * math.sqrt(1.0 - e_n) / (1.0 + eps_c)
    if not inner >= C / 2:
        raise PrecisionError(explain("fixed-point margins", f"C' = {inner:.6g} for C = {C:g}",
                                     "C' >= C / 2 (rounding must not eat half the clipping bound)",
                                     "use more fractional bits in the low-precision format, a larger clip, or "
                                     "a more accurate clipping factor (GradientPrecision.clip_degree)"))
    return inner
