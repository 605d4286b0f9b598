"""Per-party accounting for vertically partitioned DP-SGD (VPDP, paper 002, Theorems 5.3 and 5.4).

Towards an outside analyst, T steps of clipped per-example gradients with Gaussian noise of std z C on Poisson
minibatches of rate q cost what :func:`~mpdp.dp.accounting.accountant.dpsgd_epsilon` says. Towards a data
holding party two things change:

* **Noise the party knows.** When the P parties each add an equal share ``N(0, z^2 C^2 / P)`` (or the discrete
  Gaussian equivalent), a party knows its own share (and a coalition of c colluders knows c + 1 shares), so the
  noise protecting the other records *from that party* has std ``z C sqrt((P - 1 - c)/P)``
  (Thm 5.4). With a trusted noise party, no share is known and z is unchanged (Thm 5.3).
* **Minibatch indices.** A party that sees which records are in each minibatch gets no amplification by
  subsampling: q becomes 1 (every step counts in full) unless the indices are hidden from it.

The paper's remedy for the second point is disjoint minibatches: each epoch partitions the data, so a record
is used in exactly one step per epoch and the party-side cost is ``epochs`` full Gaussian steps instead of T
(:func:`disjoint_epochs_epsilon`).

If P - 1 - c = 0 the party (coalition) knows all the noise and the release gives it no privacy: we raise
rather than report a number.
"""

from __future__ import annotations

import math

from mpdp.dp.accounting.accountant import dpsgd_epsilon
from mpdp.dp.calibration import check_positive
from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["NOISE_SOURCES", "disjoint_epochs_epsilon", "party_noise_multiplier", "vpdp_epsilon"]

NOISE_SOURCES = ("parties", "trusted")


def party_noise_multiplier(*, noise_multiplier: float, n_parties: int, noise: str = "parties",
                           colluders: int = 0) -> float:
    """The noise multiplier a party (with ``colluders`` others) does not know: ``z sqrt((P - 1 - c)/P)``."""
    z = check_positive(noise_multiplier, "noise_multiplier")
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or n_parties < 1:
        raise ParameterError(explain("n_parties", n_parties, "an int >= 1", "pass the number of parties P"))
    if isinstance(colluders, bool) or not isinstance(colluders, int) or colluders < 0:
        raise ParameterError(explain("colluders", colluders, "an int >= 0", "pass how many other parties collude"))
    if noise not in NOISE_SOURCES:
        raise ParameterError(explain("noise", noise, f"one of {NOISE_SOURCES}", "pass noise='parties'"))
    if noise == "trusted":
        return z
    unknown = n_parties - 1 - colluders
    if unknown <= 0:
        raise DomainError(
            explain("colluders", colluders, f"fewer than n_parties - 1 = {n_parties - 1}",
                    "the coalition knows every noise share: it gets no DP guarantee; use a trusted noise party")
        )
    return z * math.sqrt(unknown / n_parties)


def vpdp_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int, delta: float, n_parties: int,
                 noise: str = "parties", colluders: int = 0, indices_known: bool = True,
                 method: str = "rdp") -> float:
    """ε of DP-SGD towards one party (paper 002, Thms 5.3/5.4) at ``delta``."""
    if not isinstance(indices_known, bool):
        raise ParameterError(explain("indices_known", indices_known, "a bool", "pass indices_known=True"))
    z = party_noise_multiplier(noise_multiplier=noise_multiplier, n_parties=n_parties, noise=noise,
                               colluders=colluders)
    q = 1.0 if indices_known else sampling_rate
    return dpsgd_epsilon(noise_multiplier=z, sampling_rate=q, steps=steps, delta=delta, method=method)


def disjoint_epochs_epsilon(*, noise_multiplier: float, epochs: int, delta: float, n_parties: int,
                            noise: str = "parties", colluders: int = 0, method: str = "rdp") -> float:
    """ε towards a party that knows the minibatches, when each epoch partitions the data (one step per record)."""
    z = party_noise_multiplier(noise_multiplier=noise_multiplier, n_parties=n_parties, noise=noise,
                               colluders=colluders)
    return dpsgd_epsilon(noise_multiplier=z, sampling_rate=1.0, steps=epochs, delta=delta, method=method)
