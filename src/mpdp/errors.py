"""The mpdp exception tree and its one warning.

Every error mpdp raises on purpose derives from :class:`MpdpError`, and where a built-in exception has the
same meaning the mpdp class derives from that too, so ``except ValueError`` keeps working for callers who do
not know mpdp. A message names three things, in this order: the value received, what was expected, and how
to fix it. :func:`explain` builds such a message so that every module words them alike::

    raise ParameterError(explain("epsilon", epsilon, "a finite number > 0",
                                 "pass the privacy budget as a positive float, e.g. epsilon=1.0"))

Tree::

    MpdpError
    ├── ParameterError (ValueError)          invalid argument or configuration
    │   ├── DomainError                      value outside a function's documented valid domain
    │   ├── ShapeMismatchError               array shapes or party row counts that do not line up
    │   ├── PrecisionError                   fixed-point/crypto parameters that cannot hold the computation
    │   └── SchemaMismatchError              a table whose columns or values differ from a model's schema
    ├── EncodingOverflowError (OverflowError) a value does not fit its fixed-point encoding or packing slot
    ├── CryptoError
    │   ├── KeyMismatchError                 ciphertext/share under another key or another sharing
    │   ├── TamperedCiphertextError          ciphertext out of range or failing an integrity check
    │   ├── InsufficientSharesError          fewer key shares / partial decryptions than decryption needs
    │   └── AuthenticationError              a peer's TLS certificate is not the party it should be
    ├── MalformedMessageError (ValueError)   bytes from another party that do not decode
    │   └── InvalidGroupElementError         a received group element that is not a valid encoding
    ├── ProtocolError
    │   ├── ProtocolAbortError               a protocol cannot continue (too many dropouts, desync, replay)
    │   ├── ConfigMismatchError              deployed parties whose shared configurations disagree
    │   └── PartyUnavailableError (TimeoutError)  a party stopped answering within the timeout
    ├── PrivacyError
    │   ├── BudgetExceededError              a release would spend more than the ledger allows
    │   └── LedgerCorruptError               a persisted ledger that fails to verify
    ├── DatasetError
    │   ├── ChecksumMismatchError            downloaded or cached file with the wrong sha256
    │   ├── DatasetUnavailableError          no source could provide the data
    │   ├── DuplicateIdError                 an id column that holds the same identifier more than once
    │   └── IntersectionTooSmallError        record alignment found fewer common records than the minimum
    └── ModelFileError (ValueError)          a released-model file that is malformed or truncated
        ├── ModelVersionError                a model file of another format or format version
        ├── ModelChecksumError               a model file whose body fails its sha256 or MAC (edited, damaged)
        └── UnsupportedModelError            an operation the released model cannot do (predict, synthesize)

:class:`PrivacyLeakWarning` flags a use that weakens a guarantee without breaking it (for example a seeded
random source used for a DP release). :class:`DatasetWarning` says that a loader set part of the input aside
(rows dropped for missing values, an identifier column kept out of the features), with the count and the option
that makes it explicit.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BudgetExceededError",
    "ChecksumMismatchError",
    "ConfigMismatchError",
    "CryptoError",
    "DatasetError",
    "DatasetUnavailableError",
    "DatasetWarning",
    "DomainError",
    "DuplicateIdError",
    "EncodingOverflowError",
    "InsufficientSharesError",
    "IntersectionTooSmallError",
    "InvalidGroupElementError",
    "KeyMismatchError",
    "LedgerCorruptError",
    "MalformedMessageError",
    "ModelChecksumError",
    "ModelFileError",
    "ModelVersionError",
    "MpdpError",
    "ParameterError",
    "PartyUnavailableError",
    "PrecisionError",
    "PrivacyError",
    "PrivacyLeakWarning",
    "ProtocolAbortError",
    "ProtocolError",
    "SchemaMismatchError",
    "ShapeMismatchError",
    "TamperedCiphertextError",
    "UnsupportedModelError",
    "explain",
]

_MAX_REPR = 120


def _short_repr(value: Any) -> str:
    text = repr(value)
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 3] + "..."
    return text


def explain(name: str, received: Any, expected: str, fix: str) -> str:
    """Word an error message as mpdp does: what was received, what was expected, how to fix it.

    >>> explain("epsilon", -1.0, "a finite number > 0", "pass e.g. epsilon=1.0")
    'epsilon: received -1.0, expected a finite number > 0. Fix: pass e.g. epsilon=1.0'
    """
    return f"{name}: received {_short_repr(received)}, expected {expected}. Fix: {fix}"


class MpdpError(Exception):
    """Root of every error mpdp raises on purpose."""


class ParameterError(MpdpError, ValueError):
    """An argument or configuration value is invalid."""


class DomainError(ParameterError):
    """A value lies outside the documented valid domain of the function it was passed to."""


class ShapeMismatchError(ParameterError):
    """Array shapes, lengths or party row counts do not line up."""


class PrecisionError(ParameterError):
    """Fixed-point or cryptographic parameters cannot hold the requested computation."""


class EncodingOverflowError(MpdpError, OverflowError):
    """A value does not fit its fixed-point encoding, ring, plaintext space or packing slot."""


class CryptoError(MpdpError):
    """A cryptographic object is used inconsistently."""


class KeyMismatchError(CryptoError, ValueError):
    """A ciphertext, share or partial decryption belongs to another key or another sharing."""


class TamperedCiphertextError(CryptoError, ValueError):
    """A ciphertext is out of range for its key or fails an integrity check."""


class InsufficientSharesError(CryptoError, ValueError):
    """Fewer key shares or partial decryptions than the threshold were supplied."""


class AuthenticationError(CryptoError):
    """A peer could not be authenticated: wrong, foreign or mismatched certificate for the named party."""


class MalformedMessageError(MpdpError, ValueError):
    """Bytes received from another party do not decode to a valid message."""


class InvalidGroupElementError(MalformedMessageError):
    """A party sent bytes that are not valid elements of the protocol's group (e.g. not a ristretto255 point)."""


class ProtocolError(MpdpError):
    """A multiparty protocol cannot proceed."""


class ProtocolAbortError(ProtocolError):
    """The protocol was aborted: desynchronised, replayed messages, too many dropouts, or a party failed."""


class ConfigMismatchError(ProtocolError):
    """Deployed parties disagree on the shared configuration (algorithm, budget, schema, party list)."""


class PartyUnavailableError(ProtocolError, TimeoutError):
    """A party did not answer within the configured timeout."""


class PrivacyError(MpdpError):
    """Privacy accounting refuses an operation."""


class BudgetExceededError(PrivacyError):
    """A release would spend more privacy budget than the ledger allows."""


class LedgerCorruptError(PrivacyError):
    """A persisted privacy ledger fails to parse or verify (its MAC, its anchor); it is never silently reset."""


class DatasetError(MpdpError):
    """A dataset cannot be loaded as requested."""


class ChecksumMismatchError(DatasetError):
    """A dataset file's sha256 differs from the recorded one."""


class DatasetUnavailableError(DatasetError):
    """No configured source could provide the dataset."""


class DuplicateIdError(DatasetError):
    """An id column holds the same identifier (after normalisation) in more than one row."""


class IntersectionTooSmallError(DatasetError):
    """Private record alignment found fewer common records than the configured minimum (none, or too few)."""


class SchemaMismatchError(ParameterError):
    """A table whose columns or values differ from the schema a model was trained on."""


class ModelFileError(MpdpError, ValueError):
    """A released-model file that does not parse or does not match its declared structure."""


class ModelVersionError(ModelFileError):
    """A model file of another format, or of a format version this mpdp does not read."""


class ModelChecksumError(ModelFileError):
    """A model file whose body does not match its recorded sha256 or its MAC: edited, truncated or damaged."""


class UnsupportedModelError(ModelFileError):
    """An operation the released model cannot do (e.g. synthesize from a model with no generative part)."""


class PrivacyLeakWarning(UserWarning):
    """A use that weakens a privacy guarantee without making the computation invalid."""


class DatasetWarning(UserWarning):
    """A loader set part of the input aside (rows with missing values, an identifier column) and says how much."""
