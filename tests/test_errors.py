from __future__ import annotations

import pytest

from mpdp import errors


def test_every_error_derives_from_the_root() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if (isinstance(obj, type) and issubclass(obj, Exception)
                and not issubclass(obj, Warning) and obj is not errors.MpdpError):
            assert issubclass(obj, errors.MpdpError), name


def test_builtin_bases_where_the_meaning_matches() -> None:
    assert issubclass(errors.ParameterError, ValueError)
    assert issubclass(errors.EncodingOverflowError, OverflowError)
    assert issubclass(errors.PartyUnavailableError, TimeoutError)
    assert issubclass(errors.MalformedMessageError, ValueError)


def test_explain_names_value_expectation_and_fix() -> None:
    text = errors.explain("epsilon", -1, "a number > 0", "pass epsilon=1.0")
    assert text == "epsilon: received -1, expected a number > 0. Fix: pass epsilon=1.0"
    with pytest.raises(errors.ParameterError, match=r"received -1, expected a number > 0\. Fix"):
        raise errors.ParameterError(text)


def test_explain_truncates_huge_values() -> None:
    assert len(errors.explain("x", "a" * 10_000, "short", "fix")) < 200


def test_privacy_leak_warning_is_a_user_warning() -> None:
    assert issubclass(errors.PrivacyLeakWarning, UserWarning)
