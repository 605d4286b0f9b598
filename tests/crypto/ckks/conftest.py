from __future__ import annotations

import pytest

from mpdp.crypto.ckks import PARAMETER_SETS, CkksContext


@pytest.fixture(scope="session")
def ckks_d1() -> CkksContext:
    return CkksContext.generate(PARAMETER_SETS["ckks-8192-d1"])


@pytest.fixture(scope="session")
def ckks_d2_no_rotations() -> CkksContext:
    return CkksContext.generate(PARAMETER_SETS["ckks-8192-d2"], galois_keys=False)
