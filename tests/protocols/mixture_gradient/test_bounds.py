"""The clipping factor's input domain: it covers every norm the step can compute, is reached at its corners (no
loose term) and refuses tails too coarse for the components."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdp.errors import PrecisionError
from mpdp.protocols.mixture_gradient import clip_domain_bound


def _n_tilde(a: np.ndarray, N: np.ndarray, pi: np.ndarray, total: float, inv_c2: float) -> float:
    """The exact ``max(S~^2, n~)`` of :func:`clip_domain_bound`'s docstring."""
    K = a.size
    return max(total**2, float(np.sum(a * a * N) + np.sum((a - pi * total)[: K - 1] ** 2) * inv_c2))


@settings(max_examples=50)
@given(data=st.data(), components=st.integers(2, 12), clip=st.floats(0.05, 10.0), top=st.floats(0.0, 1e8),
       total=st.floats(0.5, 1.0))
def test_the_clipping_domain_covers_every_norm(data: st.DataObject, components: int, clip: float, top: float,
                                               total: float) -> None:
    # responsibilities anywhere in the simplex (each q~ up to u above its exact value), any N up to the bound
    K, u = components, 2.0**-24
    a = np.array(data.draw(st.lists(st.floats(0.001, 1), min_size=K, max_size=K)))
    pi = np.array(data.draw(st.lists(st.floats(0.001, 1), min_size=K, max_size=K)))
    N = top * np.array(data.draw(st.lists(st.floats(0, 1), min_size=K, max_size=K)))
    a, pi = total * a / a.sum() + u, pi / pi.sum()
    assert _n_tilde(a, N, pi, total, 1 / clip**2) <= clip_domain_bound(top, 1 / clip**2, K, 2, 2.0**-24)


@pytest.mark.parametrize("components", [3, 10])
def test_the_clipping_domain_is_reached_at_its_corners(components: int) -> None:
    """Two corners reach the bound within 1%, so neither of its terms is loose (no factor K): all the mass on one
    component with the largest N, or on one component with the weights on another among the first K - 1 (v^2
    sums to 2 S~^2; K >= 3)."""
    K, u, total = components, 2.0**-24, 1.0 - 1e-9
    first, second = np.eye(K)[0], np.eye(K)[1]
    a = total * first + u
    big = _n_tilde(a, 1e6 * first, second, total, 1.0)
    assert big <= clip_domain_bound(1e6, 1.0, K, 2, u) <= 1.01 * big
    inv_c2 = 1 / 0.05**2
    flat = _n_tilde(a, np.zeros(K), second, total, inv_c2)
    assert flat <= clip_domain_bound(0.0, inv_c2, K, 2, u) <= 1.01 * flat


def test_the_clipping_domain_refuses_tails_too_coarse_for_the_components() -> None:
    with pytest.raises(PrecisionError, match="components x tail resolution"):
        clip_domain_bound(1.0, 1.0, 1000, 2, 2.0**-8)
