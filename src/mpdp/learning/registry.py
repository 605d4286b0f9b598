"""Where the learning modules register their algorithms and paper reproductions for the CLI.

Each module listed in :data:`MODULES` defines two module-level tuples, ``ALGORITHMS`` of
:class:`Algorithm` and ``REPRODUCTIONS`` of :class:`Reproduction`. Nothing registers itself at import
time: the registry imports exactly the modules listed here, in this order, when first asked.

``mpdp run NAME`` builds a :class:`RunConfig` (data already loaded, split and validated by
``mpdp.datasets``) and calls ``Algorithm.run(config)``, which returns a :class:`RunReport`, printed as the
JSON object the CLI promises. ``mpdp reproduce ID`` calls ``Reproduction.run(options)``, which returns a
:class:`ReproTable` of rows with the paper's number beside ours.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import horizontal_equal
from mpdp.errors import ParameterError, explain
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = [
    "MODULES",
    "Algorithm",
    "Curve",
    "Metric",
    "ReproOptions",
    "ReproRow",
    "ReproTable",
    "Reproduction",
    "RunConfig",
    "RunReport",
    "algorithms",
    "get_algorithm",
    "get_reproduction",
    "reproductions",
]

#: Learning modules that provide ALGORITHMS and REPRODUCTIONS. Add a paper's module here.
MODULES: tuple[str, ...] = (
    "mpdp.learning.functional_mechanism.experiments",
    "mpdp.learning.dpvi.experiments",
    "mpdp.learning.pfds.experiments",
    "mpdp.learning.distributed_erm.experiments",
    "mpdp.learning.ofpa_ofaa.experiments",
)


@dataclass(frozen=True)
class Metric:
    name: str  # e.g. "accuracy", "misclassification", "mse", "test_nll", "optimality_gap"
    value: float


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
    ``label_party`` is the index of the party holding the label. ``options`` carries algorithm-specific
    settings from ``--option key=value`` (e.g. ``{"T": 100}``), validated by the algorithm.

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
            "metric": {"name": self.metric.name, "value": self.metric.value},
            "non_private": None if self.non_private is None
            else {"name": self.non_private.name, "value": self.non_private.value},
            "seconds": self.seconds,
            "communication": dict(self.communication),
            "curves": [c.as_json() for c in self.curves],
        }
        record.update(self.extra)
        return record


@dataclass(frozen=True)
class Algorithm:
    name: str  # CLI name, e.g. "fm-logistic"
    summary: str
    paper: str  # paper file prefix, e.g. "000"
    partitioning: Literal["vertical", "horizontal"]
    task: Literal["classification", "regression", "synthesis"]
    run: Callable[[RunConfig], RunReport]
    backends: tuple[str, ...] = ()  # e.g. ("shares", "paillier", "ckks"); empty when not selectable
    # ``--option`` keys the algorithm understands, with a one-line description each, e.g.
    # {"T": "number of DP-SGD iterations (default 3000)"}. When given, the CLI refuses other keys (a
    # misspelled key must not silently do nothing) and ``mpdp run --list`` shows them.
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReproOptions:
    """``mpdp reproduce`` switches: repetitions, a quick mode for CI and notebooks, progress, randomness.

    ``progress`` (:mod:`mpdp.progress`; silent by default) shows a bar over the reproduction's repetitions and
    settings."""

    rng: RandomSource
    repetitions: int | None = None  # None: the paper's count
    quick: bool = False  # small sizes so a run takes seconds (CI, notebooks)
    progress: Progress = SILENT
    folds: int | None = None


@dataclass(frozen=True)
class ReproRow:
    """One cell group: the setting, the metric, the paper's number and ours (mean, std over repetitions)."""

    setting: dict[str, Any]
    metric: str
    paper: float | None
    ours_mean: float
    ours_std: float
    repetitions: int

    def as_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "metric": self.metric, "paper": self.paper,
                "ours": {"mean": self.ours_mean, "std": self.ours_std, "repetitions": self.repetitions}}


@dataclass
class ReproTable:
    id: str
    title: str
    rows: list[ReproRow]
    notes: list[str] = field(default_factory=list)  # e.g. "Dutch census is not available; omitted"
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "rows": [r.as_json() for r in self.rows],
                "notes": self.notes, "seconds": self.seconds}


@dataclass(frozen=True)
class Reproduction:
    id: str  # e.g. "000-table3"
    title: str
    run: Callable[[ReproOptions], ReproTable]


def _load() -> tuple[dict[str, Algorithm], dict[str, Reproduction]]:
    algos: dict[str, Algorithm] = {}
    repros: dict[str, Reproduction] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for algo in getattr(module, "ALGORITHMS", ()):
            if algo.name in algos:
                raise ParameterError(
                    explain("algorithm name", algo.name, "unique names", f"rename it in {module_name}")
                )
            algos[algo.name] = algo
        for repro in getattr(module, "REPRODUCTIONS", ()):
            if repro.id in repros:
                raise ParameterError(
                    explain("reproduction id", repro.id, "unique ids", f"rename it in {module_name}")
                )
            repros[repro.id] = repro
    return algos, repros


def algorithms() -> dict[str, Algorithm]:
    """Every registered algorithm by CLI name."""
    return _load()[0]


def reproductions() -> dict[str, Reproduction]:
    """Every registered paper reproduction by id."""
    return _load()[1]


def get_algorithm(name: str) -> Algorithm:
    known = algorithms()
    if name not in known:
        raise ParameterError(explain("algorithm", name, f"one of {sorted(known)}", "run `mpdp run --list`"))
    return known[name]


def get_reproduction(reproduction_id: str) -> Reproduction:
    known = reproductions()
    if reproduction_id not in known:
        raise ParameterError(explain("reproduction id", reproduction_id, f"one of {sorted(known)}",
                                     "run `mpdp reproduce --list` for the ids (paper prefix and table or figure)"))
    return known[reproduction_id]
