"""mpdp: privacy-preserving multiparty learning with real cryptography and honest privacy accounting.

Layers (imports point down only)::

    learning/   the five papers' algorithms
    protocols/  secure inner products, secure aggregation, distributed noise
    runtime/    parties, transports, wire codec          crypto/  sharing, Paillier, CKKS
    dp/         samplers, mechanisms, accounting         randomness, errors
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mpdp")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
