"""Paper 001's audit cases share one owner: one attribute with the intercept folded in, rows in the unit ball.

:func:`owner_rows` builds the :class:`~mpdp.learning.ofpa_ofaa.parties.OwnerRows` of a table whose first column
is the attribute and second the label, as :func:`~mpdp.learning.ofpa_ofaa.model.prepare_rows` prepares them
(``normalise=True``), or, for the broken variants, without the projection onto the unit ball.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt

from mpdp.dp.sensitivities.ofpa_ofaa import intercept_weight
from mpdp.learning.ofpa_ofaa.model import prepare_rows
from mpdp.learning.ofpa_ofaa.parties import OwnerRows, fixed_quadratic_mask

__all__ = ["DIM", "FIXED", "owner_rows"]

#: the owner's dimension: the attribute and the intercept
DIM = 2
#: the degree-2 coefficients the domain fixes (the intercept's square)
FIXED = fixed_quadratic_mask(DIM, (), DIM - 1)


def owner_rows(data: npt.NDArray[np.float64], *, row_bound: float, broken: bool) -> OwnerRows:
    """The owner's rows of ``data`` (attribute, label); ``broken`` skips the projection onto the unit ball."""
    if broken:
        h = intercept_weight(row_bound)
        X = np.column_stack([data[:, :1] * h, np.full(data.shape[0], h)])
    else:
        with warnings.catch_warnings():  # the audit's outlier is meant to be projected
            warnings.simplefilter("ignore", UserWarning)
            X = prepare_rows(data[:, :1], row_bound, normalise=True)
    return OwnerRows(X, data[:, 1].copy(), FIXED)
