"""The examples in the homomorphic-encryption docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["mpdp.crypto.paillier", "mpdp.crypto.paillier.encoding", "mpdp.crypto.paillier.packing", "mpdp.crypto.ckks"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
