"""Mean-field Gaussian VI pieces: the reparameterised ELBO gradients and Adam."""

from __future__ import annotations

import numpy as np
import pytest

from mpdp.errors import ParameterError, ShapeMismatchError
from mpdp.learning.dpvi.variational import Adam, AdamSettings, MeanFieldGaussian
from mpdp.randomness import RandomSource


def test_elbo_gradients_fit_a_gaussian_target() -> None:
    # log p(theta) = -||theta - m||^2 / (2 s^2): the optimal q is N(m, s^2), i.e. omega = log s
    m, s = np.array([1.0, -2.0, 0.5]), 0.3
    q = MeanFieldGaussian.initial(3, rng=RandomSource.seeded(1), mu_scale=0.0, std=1.0)
    adam = Adam([(3,), (3,)], AdamSettings(learning_rate=0.01))
    draws = RandomSource.seeded(2)
    tail_mu, tail_omega = [], []
    for t in range(4000):
        theta, eta = q.draw(draws)
        g_mu, g_omega = q.elbo_grads(-(theta - m) / s**2, eta)
        adam.ascend([q.mu, q.omega], [g_mu, g_omega])
        if t >= 3000:  # iterate averaging removes the single-sample gradient noise
            tail_mu.append(q.mu.copy())
            tail_omega.append(q.omega.copy())
    np.testing.assert_allclose(np.mean(tail_mu, axis=0), m, atol=0.05)
    np.testing.assert_allclose(np.exp(np.mean(tail_omega, axis=0)), s, rtol=0.15)


def test_draw_is_the_reparameterisation() -> None:
    q = MeanFieldGaussian(np.array([1.0, 2.0]), np.log(np.array([0.5, 2.0])))
    theta, eta = q.draw(RandomSource.seeded(3))
    np.testing.assert_allclose(theta, q.mu + np.exp(q.omega) * eta)
    g_mu, g_omega = q.elbo_grads(np.array([1.0, -1.0]), eta)
    np.testing.assert_allclose(g_mu, [1.0, -1.0])
    np.testing.assert_allclose(g_omega, np.array([1.0, -1.0]) * eta * np.exp(q.omega) + 1.0)
    assert q.copy().mu is not q.mu


def test_bad_settings_and_shapes() -> None:
    with pytest.raises(ParameterError, match="learning_rate"):
        AdamSettings(learning_rate=0.0)
    with pytest.raises(ParameterError, match="beta1"):
        AdamSettings(beta1=1.0)
    with pytest.raises(ShapeMismatchError):
        MeanFieldGaussian(np.zeros(2), np.zeros(3))
    with pytest.raises(ParameterError):
        MeanFieldGaussian(np.array([np.nan]), np.zeros(1))
    with pytest.raises(ShapeMismatchError):
        Adam([(2,)], AdamSettings()).ascend([np.zeros(2)], [np.zeros(3)])
