"""Fidelity of synthetic data (paper 004, section 4, Figure 3): dataset-size error and histogram distance.

* **Size error**: ``|n_synthetic - n_original|`` (Figure 3(a) plots it in log-10 scale, averaged over agents).
* **Histogram distance** (Figure 3(b)): partition the data universe at random, histogram the original and the
  synthetic records over the partition, and take the Wasserstein-1 distance between the two normalised
  histograms; average over ``repeats`` partitions (the paper uses 50). The paper does not spell out the
  partitions; here each one picks an attribute uniformly at random and cuts it into ``bins`` ordered cells
  (numeric: ``bins - 1`` cut points uniform on its public range, sorted; categorical: one cell per category
  in code order). The ground distance between cells ``i`` and ``j`` is ``|i - j| / (cells - 1)``, so every
  distance lies in [0, 1] whatever the attribute.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 4 ("Data Fidelity", Figure 3).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import wasserstein_distance

from mpdp.errors import ParameterError, explain
from mpdp.learning.pfds.domain import TreeDomain
from mpdp.randomness import RandomSource, resolve

__all__ = ["histogram_distance", "size_error"]

FloatArray = npt.NDArray[np.float64]


def size_error(original: int, synthetic: int) -> float:
    """``|n_synthetic - n_original|``: how far the released dataset's size is from the true one."""
    if original < 0 or synthetic < 0:
        raise ParameterError(explain("sizes", (original, synthetic), "non-negative counts", "pass record counts"))
    return float(abs(synthetic - original))


def histogram_distance(domain: TreeDomain, original: FloatArray, synthetic: FloatArray, *, repeats: int = 50,
                       bins: int = 10, rng: RandomSource | None = None) -> float:
    """Mean Wasserstein-1 distance between the histograms of two datasets over random partitions.

    Both arguments are attribute views (n x d) in ``domain``; an empty synthetic dataset is at distance 1
    (the largest possible), as no histogram can be formed from it.
    """
    if repeats < 1 or bins < 2:
        raise ParameterError(explain("(repeats, bins)", (repeats, bins), "repeats >= 1 and bins >= 2",
                                     "pass e.g. repeats=50, bins=10"))
    domain.check_values(original, what="original")
    if synthetic.shape[0] == 0:
        return 1.0
    domain.check_values(synthetic, what="synthetic")
    rng = resolve(rng)
    lo, hi = domain.bounds_array()
    total = 0.0
    for _ in range(repeats):
        a = int(rng.below(domain.d, 1)[0])
        if domain.numeric[a]:
            cuts = np.sort(lo[a] + (hi[a] - lo[a]) * rng.random(bins - 1))
            cells = bins
            cell_orig = np.searchsorted(cuts, original[:, a], side="right")
            cell_syn = np.searchsorted(cuts, synthetic[:, a], side="right")
        else:
            cells = domain.n_categories[a]
            cell_orig, cell_syn = original[:, a].astype(np.int64), synthetic[:, a].astype(np.int64)
        if cells < 2:
            continue
        positions = np.arange(cells) / (cells - 1)
        h_orig = np.bincount(cell_orig, minlength=cells).astype(np.float64)
        h_syn = np.bincount(cell_syn, minlength=cells).astype(np.float64)
        total += float(wasserstein_distance(positions, positions, h_orig, h_syn))
    return total / repeats
