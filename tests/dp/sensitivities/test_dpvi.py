"""DPVI's sensitivity and the fixed-point clipping constant."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpdp.dp.sensitivities.dpvi import clipped_sum_sensitivity, mpc_clip_constant
from mpdp.errors import ParameterError, PrecisionError


def test_clipped_sum_sensitivity_is_the_clip() -> None:
    assert clipped_sum_sensitivity(2.5) == 2.5
    with pytest.raises(ParameterError, match="clip"):
        clipped_sum_sensitivity(0.0)


def test_no_errors_no_margin() -> None:
    assert mpc_clip_constant(2.0, clip_factor_error=0.0, norm_error=0.0, weight_resolution=0.0, components=3,
                             sq_norm_bound=1e6, sum_errors=np.zeros(5)) == 2.0


@given(clip=st.floats(0.1, 100), eps_c=st.floats(0, 1e-3), e_n=st.floats(0, 1e-3), rho=st.floats(0, 1e-9),
       K=st.integers(1, 50), N=st.floats(0, 1e8), e=st.floats(0, 1e-8), e_r=st.floats(0, 1e-4))
def test_the_margins_keep_the_release_within_the_clip(clip: float, eps_c: float, e_n: float, rho: float, K: int,
                                                      N: float, e: float, e_r: float) -> None:
    errors = np.full(7, e)
    inner = mpc_clip_constant(clip, clip_factor_error=eps_c, norm_error=e_n, weight_resolution=rho, components=K,
                              sq_norm_bound=N, sum_errors=errors, record_error=e_r)
    assert clip / 2 <= inner <= clip
    # the worst computed contribution plus the sum's rounding on both neighbours stays within the clip
    worst = inner * (1 + eps_c) / math.sqrt(1 - e_n) + rho * (math.sqrt(K * N) + math.sqrt(K)) + e_r
    assert worst + 2 * np.linalg.norm(errors) <= clip * (1 + 1e-12)


def test_too_coarse_formats_are_refused() -> None:
    with pytest.raises(PrecisionError, match="C' >= C / 2"):
        mpc_clip_constant(1.0, clip_factor_error=0.0, norm_error=0.0, weight_resolution=1e-2, components=10,
                          sq_norm_bound=1e4, sum_errors=np.zeros(3))
    with pytest.raises(PrecisionError, match="norm_error"):
        mpc_clip_constant(1.0, clip_factor_error=0.0, norm_error=0.6, weight_resolution=0.0, components=1,
                          sq_norm_bound=1.0, sum_errors=np.zeros(1))
    with pytest.raises(ParameterError, match="sum_errors"):
        mpc_clip_constant(1.0, clip_factor_error=0.0, norm_error=0.0, weight_resolution=0.0, components=1,
                          sq_norm_bound=1.0, sum_errors=np.array([-1.0]))
