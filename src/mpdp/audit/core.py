"""The empirical lower bound on epsilon: run a mechanism on two neighbours, pick an event, bound its odds.

Method
------
``samples`` outputs are drawn from ``M(D0)`` and ``M(D1)``. Each output is reduced to a scalar score (a
projection the adapter supplies, or the direction of the mean difference estimated on the first half). The
first half of each side *selects* an event: a threshold ``{s >= t}`` or ``{s <= t}`` and a direction (which
side is the numerator), the one whose bound computed on that half is largest. The second, held-out half
*measures* the chosen event: with ``k0`` of ``m`` outputs of the numerator side and ``k1`` of ``m`` of the
other side in the event, Clopper-Pearson gives ``p_lo <= p`` and ``q_hi >= q`` each with probability at least
``1 - alpha/2``, and (eps, delta)-DP implies ``p <= e^eps q + delta``, so

    eps >= ln((p_lo - delta) / q_hi)

holds with probability at least ``1 - alpha`` (``alpha = 1 - confidence``). The event is a function of the
selection half only, independent of the held-out half, so the bound is valid by construction for any
selection rule: it exceeds the true epsilon with probability at most ``alpha``.

Power
-----
For a pure eps-DP mechanism whose worst-case event has ``q`` of the mass (the discrete Laplace mechanism at
``eps = 1``: ``q ~ 0.18``), ``m`` held-out samples per side measure ``ln(p/q)`` to about
``z sqrt((1-q)/(q m) + (1-p)/(p m))``: with 10^5 samples per side (``m = 5 10^4``) the bound sits within
~0.03 of the true epsilon, so a mechanism whose noise scale is halved (true epsilon doubled) is flagged with
a margin of ~0.9. Approximate-DP mechanisms need tail events (likelihood ratio above ``e^eps`` only far out),
so their bounds are looser; their adapters say what they reach.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import beta as beta_dist

from mpdp.errors import ParameterError, explain
from mpdp.progress import SILENT, Bar, Progress
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "AuditResult",
    "BatchedSampler",
    "Sampler",
    "Score",
    "audit",
    "batched",
    "best_possible_bound",
    "clopper_pearson",
    "epsilon_lower_bound",
    "minimum_samples",
]

FloatArray = npt.NDArray[np.float64]
Sampler = Callable[[Any, int, RandomSource], Any]
"""``sampler(dataset, n, rng)`` -> ``n`` outputs of the mechanism on ``dataset`` (first axis: the runs)."""
Score = Callable[[FloatArray], FloatArray]

_TAIL_POINTS = 48
_GRID_POINTS = 96


@dataclass(frozen=True)
class AuditResult:
    """One audit: the claim, the certified lower bound and what it cost."""

    name: str
    claimed_epsilon: float
    delta: float
    lower_bound: float
    confidence: float
    samples: int
    seconds: float
    event: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def flagged(self) -> bool:
        """True when the bound proves the claim false (at the stated confidence)."""
        return self.lower_bound > self.claimed_epsilon

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "claimed_epsilon": self.claimed_epsilon,
            "delta": self.delta,
            "lower_bound": self.lower_bound,
            "confidence": self.confidence,
            "samples_per_side": self.samples,
            "seconds": self.seconds,
            "flagged": self.flagged,
            "event": self.event,
            **self.details,
        }


def clopper_pearson(successes: Any, trials: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """One-sided Clopper-Pearson bounds: ``(lower, upper)``, each holding with probability >= ``1 - alpha``."""
    k = np.asarray(successes, dtype=np.float64)
    lower = np.where(k > 0, beta_dist.ppf(alpha, np.maximum(k, 1), trials - k + 1), 0.0)
    upper = np.where(k < trials, beta_dist.ppf(1 - alpha, k + 1, np.maximum(trials - k, 1)), 1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def epsilon_lower_bound(k_num: Any, k_den: Any, trials: int, *, delta: float, alpha: float) -> FloatArray:
    """``ln((p_lo - delta) / q_hi)`` (0 where not positive), valid with probability >= ``1 - alpha``."""
    p_lo, _ = clopper_pearson(k_num, trials, alpha / 2)
    _, q_hi = clopper_pearson(k_den, trials, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (p_lo - delta) / q_hi
        bound = np.where(ratio > 1.0, np.log(np.where(ratio > 1.0, ratio, 1.0)), 0.0)
    return np.asarray(bound, dtype=np.float64)


def best_possible_bound(held_out: int, *, delta: float, confidence: float) -> float:
    """The largest bound ``held_out`` samples per side can certify (event in every run of one side, none of
    the other)."""
    r = ((1 - confidence) / 2) ** (1.0 / held_out)
    return math.log((r - delta) / (1 - r)) if r - delta > 1 - r else 0.0


def minimum_samples(epsilon: float, *, delta: float, confidence: float) -> int:
    """The fewest samples per side (both halves) with which a bound above ``epsilon`` is possible at all."""
    target = (math.exp(epsilon) + delta) / (1 + math.exp(epsilon))
    if target >= 1.0:
        raise ParameterError(explain("epsilon", epsilon, "a claim small enough to be refuted by sampling",
                                     "audit at a smaller epsilon"))
    held_out = math.floor(math.log((1 - confidence) / 2) / math.log(target)) + 1
    return 2 * held_out


def _check(claimed_epsilon: float, delta: float, samples: int, confidence: float) -> None:
    if not (math.isfinite(claimed_epsilon) and claimed_epsilon > 0):
        raise ParameterError(explain("claimed_epsilon", claimed_epsilon, "a finite number > 0",
                                     "pass the epsilon the mechanism's accountant reports"))
    if not (0.0 <= delta < 1.0):
        raise ParameterError(explain("delta", delta, "a number in [0, 1)", "pass the mechanism's delta"))
    if not (0.5 <= confidence < 1.0):
        raise ParameterError(explain("confidence", confidence, "a number in [0.5, 1)", "pass e.g. 0.95"))
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 4:
        raise ParameterError(explain("samples", samples, "an int >= 4 (runs per dataset)", "pass e.g. 10000"))
    need = minimum_samples(claimed_epsilon, delta=delta, confidence=confidence)
    if samples < need:
        reach = best_possible_bound(samples // 2, delta=delta, confidence=confidence)
        raise ParameterError(explain(
            "samples", samples,
            f"at least {need} runs per dataset to refute epsilon={claimed_epsilon:g} at confidence "
            f"{confidence:g} (with {samples} the largest certifiable bound is {reach:.3g})",
            f"pass samples >= {need} (10-100x that for a useful audit), or lower the confidence"))


def _as_matrix(outputs: Any, n: int, side: str) -> FloatArray:
    values = np.asarray(outputs, dtype=np.float64)
    if values.ndim == 0 or values.shape[0] != n:
        raise ParameterError(explain(f"sampler output ({side})", values.shape, f"first axis of length {n}",
                                     "return one output per run, stacked on the first axis"))
    return values.reshape(n, -1)


def _mean_difference_score(a: FloatArray, b: FloatArray) -> Score:
    diff = a.mean(axis=0) - b.mean(axis=0)
    spread = np.sqrt(0.5 * (a.var(axis=0) + b.var(axis=0))) + 1e-12
    direction = diff / spread**2
    if not np.any(direction):
        direction = np.ones_like(direction)

    def score(x: FloatArray) -> FloatArray:
        return np.asarray(x @ direction, dtype=np.float64)

    return score


def _thresholds(pooled: FloatArray) -> FloatArray:
    ordered = np.sort(pooled)
    n = ordered.size
    tail = np.unique(np.geomspace(1, max(n // 2, 1), _TAIL_POINTS).astype(np.int64))
    ranks = np.concatenate([tail - 1, n - tail, np.linspace(0, n - 1, _GRID_POINTS).astype(np.int64)])
    return np.asarray(np.unique(ordered[np.clip(ranks, 0, n - 1)]), dtype=np.float64)


def _counts(scores: FloatArray, cuts: FloatArray) -> tuple[FloatArray, FloatArray]:
    ordered = np.sort(scores)
    at_least = ordered.size - np.searchsorted(ordered, cuts, side="left")
    at_most = np.searchsorted(ordered, cuts, side="right")
    return at_least.astype(np.float64), at_most.astype(np.float64)


def _select(s0: FloatArray, s1: FloatArray, *, delta: float, alpha: float) -> tuple[float, str, int]:
    """The event (threshold, kind ``">="``/``"<="``, numerator side) with the best bound on this half."""
    cuts = _thresholds(np.concatenate([s0, s1]))
    ge0, le0 = _counts(s0, cuts)
    ge1, le1 = _counts(s1, cuts)
    m = s0.size
    best = (-1.0, 0.0, ">=", 0)
    for kind, c0, c1 in ((">=", ge0, ge1), ("<=", le0, le1)):
        for side, num, den in ((0, c0, c1), (1, c1, c0)):
            bounds = epsilon_lower_bound(num, den, m, delta=delta, alpha=alpha)
            # ties broken towards the larger empirical log-ratio (bounds are 0 for many weak events)
            smooth = np.log((num + 0.5) / (den + 0.5)) * 1e-9
            i = int(np.argmax(bounds + smooth))
            if bounds[i] + smooth[i] > best[0]:
                best = (float(bounds[i] + smooth[i]), float(cuts[i]), kind, side)
    return best[1], best[2], best[3]


def audit(
    sampler: Sampler,
    d0: Any,
    d1: Any,
    *,
    claimed_epsilon: float,
    delta: float = 0.0,
    samples: int = 20_000,
    confidence: float = 0.95,
    score: Score | None = None,
    rng: RandomSource | None = None,
    name: str = "mechanism",
    progress: Progress = SILENT,
) -> AuditResult:
    """Certify a lower bound on the epsilon of ``sampler`` from ``samples`` runs on each of ``d0``, ``d1``.

    ``d0`` and ``d1`` must be neighbours under the mechanism's definition (the adapters check it); the bound
    holds with probability ``confidence`` whatever the selection found. Raises :class:`ParameterError` when
    ``samples`` is too small for any bound above ``claimed_epsilon`` at this confidence. ``progress`` shows a
    bar over the ``2 samples`` runs (advanced per run for a :class:`BatchedSampler`, per side otherwise).
    """
    _check(claimed_epsilon, delta, samples, confidence)
    source = resolve(rng)
    alpha = 1.0 - confidence
    start = time.perf_counter()
    with progress.bar("samples (D0, then D1)", total=2 * samples, unit="run") as bar:
        out0 = _as_matrix(_draw(sampler, d0, samples, source.spawn("d0"), bar), samples, "d0")
        out1 = _as_matrix(_draw(sampler, d1, samples, source.spawn("d1"), bar), samples, "d1")
    half = samples // 2
    select0, hold0 = out0[:half], out0[half: 2 * half]
    select1, hold1 = out1[:half], out1[half: 2 * half]
    scorer = score if score is not None else _mean_difference_score(select0, select1)
    cut, kind, side = _select(scorer(select0), scorer(select1), delta=delta, alpha=alpha)
    h0, h1 = scorer(hold0), scorer(hold1)
    in0 = int(np.count_nonzero(h0 >= cut if kind == ">=" else h0 <= cut))
    in1 = int(np.count_nonzero(h1 >= cut if kind == ">=" else h1 <= cut))
    num, den = (in0, in1) if side == 0 else (in1, in0)
    bound = float(epsilon_lower_bound(num, den, half, delta=delta, alpha=alpha))
    seconds = time.perf_counter() - start
    event = f"P[M(D{side}) : score {kind} {cut:.6g}]"
    details = {"held_out_per_side": half, "event_counts": [num, den]}
    return AuditResult(name, float(claimed_epsilon), float(delta), bound, confidence, samples, seconds, event,
                       details)


class BatchedSampler:
    """A batch sampler from a single-run release ``run(dataset, rng)`` (one fresh stream per run); see
    :func:`batched`. Called with a ``bar``, it advances it after every run."""

    def __init__(self, run: Callable[[Any, RandomSource], Any]) -> None:
        self.run = run

    def __call__(self, dataset: Any, n: int, rng: RandomSource, bar: Bar | None = None) -> FloatArray:
        rows = []
        for i in range(n):
            rows.append(np.asarray(self.run(dataset, rng.spawn(f"run/{i}")), dtype=np.float64).ravel())
            if bar is not None:
                bar.update()
        return np.stack(rows)


def batched(run: Callable[[Any, RandomSource], Any]) -> Sampler:
    """A batch sampler from a single-run release ``run(dataset, rng)`` (one fresh stream per run)."""
    return BatchedSampler(run)


def _draw(sampler: Sampler, dataset: Any, n: int, rng: RandomSource, bar: Bar) -> Any:
    """``n`` outputs on ``dataset``; the bar advances per run where the sampler draws run by run."""
    if isinstance(sampler, BatchedSampler):
        return sampler(dataset, n, rng, bar)
    out = sampler(dataset, n, rng)
    bar.update(n)
    return out
