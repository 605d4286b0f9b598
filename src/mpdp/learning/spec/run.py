"""What a run of an algorithm is handed and what it returns: :class:`RunConfig`, :class:`RunReport`.

``mpdp run NAME`` (and every other engine) builds a :class:`RunConfig` (data already loaded, split and
validated by ``mpdp.datasets``, options checked by the algorithm's spec) and the algorithm returns a
:class:`RunReport`, printed as the JSON object the CLI promises.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import horizontal_equal
from mpdp.errors import ParameterError, explain
from mpdp.learning.spec.options import Settings
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = ["DEFAULT_DELTA", "DEFAULT_EPSILON", "DEFAULT_PARTIES", "PHASES", "Curve", "Metric", "RunConfig",
           "RunReport", "timed"]

#: a run's privacy budget when the caller names none, in every engine and estimator (``mpdp run``'s ``--epsilon``
#: and ``--delta``, ``mpdp launch``, the scikit-learn estimators): pure-DP algorithms spend no delta
DEFAULT_EPSILON = 1.0
DEFAULT_DELTA = 1e-5
#: the number of parties when the caller names none, by partitioning
DEFAULT_PARTIES = {"vertical": 2, "horizontal": 3}

#: a run's phases, in order: reading and splitting the data, aligning records (``--data``), the parties' protocol,
#: the non-private reference, scoring the release on the test split
PHASES = ("load", "align", "train", "baseline", "evaluate")


@contextlib.contextmanager
def timed(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the wall seconds of the block to ``phases[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - start


@dataclass(frozen=True)
class Metric:
    """A score of the released model on the run's held-out test split, named as the algorithm computes it
    (e.g. a paper's ``misclassification``); :meth:`standard` gives the one name every record uses."""

    name: str  # e.g. "accuracy", "misclassification", "mse", "test_nll"
    value: float

    def standard(self) -> tuple[str, float, bool]:
        """``(name, value, higher_is_better)`` in the records' one vocabulary: classification reports
        ``accuracy``, regression ``mse``, synthesis ``nll`` (test negative log-likelihood per record)."""
        name, convert = _STANDARD.get(self.name, (self.name, float))
        return name, convert(self.value), name in _HIGHER_IS_BETTER

    def as_json(self) -> dict[str, Any]:
        """The standard form, on the test split; the algorithm's own name and value too when they differ."""
        name, value, higher = self.standard()
        record: dict[str, Any] = {"name": name, "value": value, "split": "test", "higher_is_better": higher}
        if name != self.name:
            record["as_computed"] = {"name": self.name, "value": self.value}
        return record


#: metrics the algorithms compute, as (the records' name, conversion)
_STANDARD: dict[str, tuple[str, Callable[[float], float]]] = {
    "misclassification": ("accuracy", lambda v: 1.0 - v),
    "test_nll": ("nll", float),
}
_HIGHER_IS_BETTER = frozenset({"accuracy"})


@dataclass(frozen=True)
class Curve:
    """A series an algorithm reports for ``mpdp run --plot`` (e.g. test accuracy per iteration)."""

    name: str  # legend entry, e.g. "test accuracy"
    x: tuple[float, ...]
    y: tuple[float, ...]
    x_label: str = "iteration"
    y_label: str = "value"

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y) or not self.x:
            raise ParameterError(explain(f"curve {self.name!r}", (len(self.x), len(self.y)),
                                         "as many x as y values, at least one", "pass matching sequences"))

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "x": [float(v) for v in self.x], "y": [float(v) for v in self.y],
                "x_label": self.x_label, "y_label": self.y_label}


@dataclass(frozen=True)
class RunConfig:
    """Everything ``mpdp run`` hands an algorithm.

    ``partition`` (vertical algorithms) lists, per party, the attribute or feature names it holds;
    ``label_party`` is the index of the party holding the label. ``settings`` are the algorithm's options,
    checked by its spec (:meth:`~mpdp.learning.spec.AlgorithmSpec.settings_from`); ``options`` is their plain
    form (every option whose value is not None), for the record and for code that reads options by name.

    ``progress`` reports the run's phases and loops on the terminal (:mod:`mpdp.progress`; silent by default):
    an algorithm passes it to its long-running parts (secure products, training rounds, epochs, iterations).

    ``row_partition`` (horizontal algorithms) lists, per party, its row indices into ``train`` (the CLI's
    ``--fractions 40,30,10`` or ``--anchor age``; an equal random split by default); :meth:`party_data`
    gives the parties' datasets. It is None when the caller leaves the split to the algorithm.
    """

    train: Dataset
    test: Dataset
    parties: int
    epsilon: float
    delta: float
    rng: RandomSource
    backend: str | None = None
    partition: tuple[tuple[str, ...], ...] | None = None
    label_party: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    progress: Progress = SILENT
    row_partition: tuple[npt.NDArray[np.int64], ...] | None = None
    #: How ``row_partition`` was made: ``"default"`` (the CLI's equal split, which an algorithm whose paper
    #: prescribes its own split may replace), or the user's explicit ``"fractions"`` / ``"anchor"``, which it
    #: must follow.
    row_split: Literal["default", "fractions", "anchor"] = "default"
    settings: Settings | None = None
    #: the registered name of the algorithm the run is for (``mpdp run NAME``); engines fill it in when empty
    algorithm: str = ""

    def party_data(self) -> list[Dataset]:
        """Each horizontal party's training rows: ``row_partition`` when given, else an equal random split of
        ``train`` into ``parties`` parts drawn from ``rng.spawn("rows")``."""
        if self.row_partition is None:
            return horizontal_equal(self.train, self.parties, rng=self.rng.spawn("rows")).party_data()
        if len(self.row_partition) != self.parties:
            raise ParameterError(explain("row_partition", len(self.row_partition), f"{self.parties} parties",
                                         "give one index array per party"))
        return [self.train.rows(idx) for idx in self.row_partition]


@dataclass
class RunReport:
    """One run's results; ``as_json`` gives the object ``mpdp run --json`` prints."""

    algorithm: str
    dataset: str
    parties: int
    epsilon: float
    delta: float
    epsilon_spent: float
    delta_spent: float
    per_party_epsilon: dict[str, float] | None
    metric: Metric
    non_private: Metric | None
    seconds: float
    communication: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)
    curves: list[Curve] = field(default_factory=list)  # what ``--plot`` draws; printed under "curves"
    #: wall seconds per phase under fixed names (:data:`PHASES`): a report times its non-private ``baseline``
    #: (:func:`timed`); the engines add ``train`` and ``evaluate``, the CLI ``load`` and ``align``
    phases: dict[str, float] = field(default_factory=dict)
    #: What the run released, for ``mpdp run --save`` (:mod:`mpdp.learning.release.build`): the fitted estimator
    #: or fit result. None when the algorithm releases nothing savable. Never printed.
    released: Any = None

    def as_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "algorithm": self.algorithm,
            "dataset": self.dataset,
            "parties": self.parties,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "per_party_epsilon": self.per_party_epsilon,
            "metric": self.metric.as_json(),
            "non_private": None if self.non_private is None else self.non_private.as_json(),
            "seconds": self.seconds,
            "communication": dict(self.communication),
            "curves": [c.as_json() for c in self.curves],
            "phases": {name: self.phases[name] for name in PHASES if name in self.phases},
        }
        clash = sorted(set(self.extra) & set(record))
        if clash:  # an algorithm's extra field may add to the record, never replace one of its fixed fields
            raise ParameterError(explain("extra fields of the report", clash, "names the record does not use",
                                         "rename the algorithm's extra fields"))
        record.update(self.extra)
        return record
