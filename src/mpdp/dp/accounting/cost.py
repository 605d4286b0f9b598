"""What one release spends: :class:`PrivacyCost`, and the protocol a budget keeper implements."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from mpdp.errors import ParameterError, explain

__all__ = ["BudgetSpender", "PrivacyCost"]


@dataclass(frozen=True, kw_only=True)
class PrivacyCost:
    """The privacy guarantee of one release (or of ``count`` identical releases composed).

    Attributes
    ----------
    epsilon, delta : float
        An (ε, δ)-DP guarantee of the release; ``delta == 0`` is pure DP. ``epsilon`` may be ``inf`` for a
        release described only by its noise model (``noise_multiplier``) or ``rho``: composition methods that
        understand the model use it, the basic rule then reports ∞.
    rho : float or None
        A ρ-zCDP guarantee when the mechanism has one (Gaussian, discrete Gaussian, pure DP as ε^2/2).
    mechanism : str
        Short name, e.g. ``"laplace"``, ``"gaussian"``, ``"exponential"``, ``"subsampled_gaussian"``.
    noise_multiplier : float or None
        Noise std (Gaussian) or scale (Laplace) divided by the sensitivity, for RDP/PLD accountants.
    sampling_rate : float or None
        Poisson sampling probability when the release is on a subsample.
    count : int
        Number of identical releases this cost stands for (self-composition), default 1.
    """

    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    mechanism: str = "custom"
    noise_multiplier: float | None = None
    sampling_rate: float | None = None
    count: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, int | float) and self.epsilon >= 0):  # NaN fails too
            raise ParameterError(explain("epsilon", self.epsilon, "a number >= 0 (inf allowed)", "pass epsilon=1.0"))
        if not (isinstance(self.delta, int | float) and 0 <= self.delta < 1):
            raise ParameterError(explain("delta", self.delta, "a number in [0, 1)", "pass e.g. delta=1e-6"))
        if self.rho is not None and not (math.isfinite(self.rho) and self.rho >= 0):
            raise ParameterError(explain("rho", self.rho, "None or a finite number >= 0", "pass e.g. rho=0.05"))
        if self.noise_multiplier is not None and not (
            math.isfinite(self.noise_multiplier) and self.noise_multiplier > 0
        ):
            raise ParameterError(
                explain("noise_multiplier", self.noise_multiplier, "None or a finite number > 0", "pass sigma/Δ")
            )
        if self.sampling_rate is not None and not 0 < self.sampling_rate <= 1:
            raise ParameterError(
                explain("sampling_rate", self.sampling_rate, "None or a number in (0, 1]", "pass batch/n")
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ParameterError(explain("count", self.count, "an int >= 1", "pass the number of releases"))
        if not isinstance(self.mechanism, str) or not self.mechanism:
            raise ParameterError(explain("mechanism", self.mechanism, "a non-empty str", "name the mechanism"))

    @property
    def is_pure(self) -> bool:
        """True for ε-DP (δ = 0)."""
        return self.delta == 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (an infinite epsilon is written as the string "inf")."""
        record = asdict(self)
        if math.isinf(self.epsilon):
            record["epsilon"] = "inf"
        return record

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyCost:
        """Inverse of :meth:`to_dict`; unknown keys are refused."""
        known = set(cls.__dataclass_fields__)
        extra = set(data) - known
        if extra:
            raise ParameterError(explain("cost fields", sorted(extra), f"only {sorted(known)}", "drop unknown keys"))
        fields = dict(data)
        if fields.get("epsilon") == "inf":
            fields["epsilon"] = math.inf
        return cls(**fields)


class BudgetSpender(Protocol):
    """Anything that can be charged for a release before it happens (a privacy ledger)."""

    def spend(self, cost: PrivacyCost, *, label: str) -> Any:
        """Record ``cost`` durably, or raise BudgetExceededError and record nothing."""
        ...
