"""What an audit adapter returns: the mechanism as a batch sampler, two neighbours and the claim."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mpdp.audit.core import AuditResult, Sampler, Score, audit
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = ["AuditCase", "CaseBuilder"]


@dataclass(frozen=True)
class AuditCase:
    """A mechanism (``sampler``), neighbouring datasets ``d0``/``d1`` and what its accountant claims."""

    name: str
    sampler: Sampler
    d0: Any
    d1: Any
    claimed_epsilon: float
    delta: float
    samples: int
    score: Score | None = None
    description: str = ""

    def run(self, *, samples: int | None = None, confidence: float = 0.95,
            rng: RandomSource | None = None, progress: Progress = SILENT) -> AuditResult:
        return audit(self.sampler, self.d0, self.d1, claimed_epsilon=self.claimed_epsilon, delta=self.delta,
                     samples=samples or self.samples, confidence=confidence, score=self.score, rng=rng,
                     name=self.name, progress=progress)


CaseBuilder = Callable[[bool], AuditCase]
"""``build(broken)`` -> the case; ``broken=True`` is the deliberately wrong variant the audit must flag."""
