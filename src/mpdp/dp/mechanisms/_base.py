"""Shared plumbing of the mechanisms: the seeded-source warning, charging a ledger, input checks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.grid import grid_to_float
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.numeric import exact_add, exact_integers
from mpdp.randomness import RandomSource, resolve

__all__ = ["check_dim", "grid_release", "integer_array", "integer_release", "prepare_release"]


def prepare_release(
    rng: RandomSource | None, ledger: BudgetSpender | None, cost: PrivacyCost, label: str, what: str
) -> RandomSource:
    """Resolve the random source, warn if it is seeded, and charge the ledger *before* any noise is drawn.

    Charging first means a crash after the charge over-reports (safe); a release never happens uncharged.
    """
    source = resolve(rng)
    if not isinstance(label, str) or not label:
        raise ParameterError(explain("label", label, "a non-empty str", "name the release, e.g. label='counts'"))
    if source.is_seeded:
        warnings.warn(
            f"{what}: released with a seeded {source!r}; anyone who knows the seed can subtract the noise. "
            "Use the default (fresh OS entropy) for real releases.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
    if ledger is not None:
        ledger.spend(cost, label=label)
    return source


def integer_array(value: Any, name: str = "value") -> npt.NDArray[Any]:
    """``value`` as exact integers (int64, or Python ints beyond int64), refusing non-integers rather than
    rounding them silently (:func:`mpdp.numeric.exact_integers`)."""
    return exact_integers(value, name, fix="use the continuous mechanism, or round the query before releasing")


def integer_release(x: npt.NDArray[Any], noise: Any) -> Any:
    """``x + noise`` computed exactly (int64 while it fits, else Python ints: a wrapped sum would land on the
    other side of the range and reveal the noise's sign), as an array, or one int for a 0-d ``x``."""
    out = exact_add(x, np.asarray(noise))
    return out if out.ndim else int(out)


def grid_release(units: npt.NDArray[np.int64], noise: Any, grid_bits: int) -> Any:
    """``(units + noise) 2^-k``, the sum exact and rounded once to float64 (:func:`mpdp.dp.grid.grid_to_float`),
    as an array, or one float for a 0-d ``units``."""
    out = grid_to_float(exact_add(units, np.asarray(noise)), grid_bits)
    return out if out.ndim else float(out)


def check_dim(dim: int) -> int:
    """``dim`` as an int in ``[1, 2^27]`` (coordinates of one release)."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or not 1 <= dim <= 1 << 27:
        raise ParameterError(explain("dim", dim, "an int in [1, 2^27]", "pass the number of released coordinates"))
    return int(dim)
