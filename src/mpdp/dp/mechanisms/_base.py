"""Shared plumbing of the mechanisms: the seeded-source warning, charging a ledger, input checks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.errors import DomainError, ParameterError, PrivacyLeakWarning, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["check_dim", "integer_array", "prepare_release"]


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


def integer_array(value: Any, name: str = "value") -> npt.NDArray[np.int64]:
    """``value`` as an int64 array, refusing non-integers rather than rounding them silently."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 1 << 62:
            raise DomainError(explain(name, int(arr.max()), "integers below 2^62", "rescale the query"))
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.rint(arr)):
        if arr.size and float(np.max(np.abs(arr))) >= 2.0**62:
            raise DomainError(explain(name, float(np.max(np.abs(arr))), "|values| below 2^62", "rescale the query"))
        return arr.astype(np.int64)
    raise DomainError(
        explain(name, value, "integer values", "use the continuous mechanism, or round the query before releasing")
    )


def check_dim(dim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ParameterError(explain("dim", dim, "an int >= 1", "pass the number of released coordinates"))
    return int(dim)
