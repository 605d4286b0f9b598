"""Objective perturbation (CMS11 Algorithm 2): parameters and the gamma-norm noise distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mpdp.dp import ObjectivePerturbation, gamma_norm_noise
from mpdp.errors import ParameterError, PrivacyLeakWarning
from mpdp.randomness import RandomSource
from tests.dp.stats import ALPHA


def test_gamma_norm_noise_norm_and_direction() -> None:
    dim, beta, n = 5, 0.7, 20_000
    b = gamma_norm_noise(dim, beta, n, rng=RandomSource.seeded("gnn"))
    assert b.shape == (n, dim)
    norms = np.linalg.norm(b, axis=1)
    assert stats.kstest(norms, stats.gamma(a=dim, scale=1 / beta).cdf).pvalue > ALPHA
    directions = b / norms[:, None]
    # Uniform on the sphere: first coordinate of a uniform direction in R^d has density ∝ (1-t^2)^((d-3)/2),
    # i.e. (t+1)/2 ~ Beta((d-1)/2, (d-1)/2).
    first = (directions[:, 0] + 1) / 2
    assert stats.kstest(first, stats.beta((dim - 1) / 2, (dim - 1) / 2).cdf).pvalue > ALPHA
    assert gamma_norm_noise(3, 1.0, rng=RandomSource.seeded(1)).shape == (3,)


def test_cms_parameters() -> None:
    # Large n: no extra regulariser needed, eps' = eps - ln(1 + 2c/(n L) + c^2/(n L)^2).
    op = ObjectivePerturbation(epsilon=1.0, n_samples=10_000, regularization=0.01, smoothness=0.25)
    ratio = 0.25 / (10_000 * 0.01)
    assert op.epsilon_prime == pytest.approx(1.0 - math.log(1 + 2 * ratio + ratio**2))
    assert op.extra_regularization == 0.0
    assert op.beta == op.epsilon_prime / 2
    # Tiny n: eps' falls to eps/2 and Δ = c/(n (e^(eps/4) - 1)) - Λ.
    small = ObjectivePerturbation(epsilon=0.1, n_samples=10, regularization=0.001, smoothness=0.25)
    assert small.epsilon_prime == 0.05
    assert small.extra_regularization == pytest.approx(0.25 / (10 * math.expm1(0.025)) - 0.001)
    assert small.cost.epsilon == 0.1
    with pytest.warns(PrivacyLeakWarning):
        assert small.noise(4, rng=RandomSource.seeded(2)).shape == (4,)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"n_samples": 0}, "n_samples"),
        ({"regularization": 0.0}, "regularization"),
        ({"smoothness": -1.0}, "smoothness"),
    ],
)
def test_bad_parameters(kwargs: dict[str, float], match: str) -> None:
    base: dict[str, float] = {"epsilon": 1.0, "n_samples": 100, "regularization": 0.1, "smoothness": 0.25}
    base.update(kwargs)
    with pytest.raises(ParameterError, match=match):
        ObjectivePerturbation(**base)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="beta"):
        gamma_norm_noise(3, 0.0)
    with pytest.raises(ParameterError, match="dim"):
        gamma_norm_noise(0, 1.0)
