"""The one registry: every algorithm's spec and every paper reproduction, and what a run is handed and returns.

Each paper package's ``spec`` module (listed in :data:`MODULES`) defines ``SPECS``, a tuple of
:class:`~mpdp.learning.spec.AlgorithmSpec`; its ``experiments`` module defines ``REPRODUCTIONS``, a tuple of
:class:`Reproduction`. Nothing registers itself at import time: the registry imports exactly the modules listed
here, in this order, when first asked, and every other table (``mpdp run --list``, the deployable algorithms,
the Flower apps, the audits, the savable models, the docs) is derived from the specs.

``mpdp run NAME`` builds a :class:`RunConfig` (data already loaded, split and validated by
``mpdp.datasets``, options checked by the spec's settings) and calls ``spec.run(config)``, which returns a
:class:`RunReport`, printed as the JSON object the CLI promises. ``mpdp reproduce ID`` calls
``Reproduction.run(options)``, which returns a :class:`ReproTable` of rows with the paper's number beside ours.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec import AlgorithmSpec
from mpdp.randomness import RandomSource

__all__ = [
    "MODULES",
    "REPRODUCTION_MODULES",
    "ReproFigure",
    "ReproOptions",
    "ReproRow",
    "ReproTable",
    "Reproduction",
    "algorithms",
    "get_algorithm",
    "get_reproduction",
    "reproductions",
]

#: The paper packages' ``spec`` modules, each with ``SPECS`` (a tuple of
#: :class:`~mpdp.learning.spec.AlgorithmSpec`). Add a paper's spec module here; an algorithm of a listed paper is
#: added in its ``spec`` module alone.
MODULES: tuple[str, ...] = (
    "mpdp.learning.functional_mechanism.spec",
    "mpdp.learning.dpvi.spec",
    "mpdp.learning.pfds.spec",
    "mpdp.learning.distributed_erm.spec",
    "mpdp.learning.ofpa_ofaa.spec",
)
#: The paper packages' ``experiments`` modules, each with ``REPRODUCTIONS`` (the paper's tables and figures).
REPRODUCTION_MODULES: tuple[str, ...] = tuple(m.rpartition(".")[0] + ".experiments" for m in MODULES)


@dataclass(frozen=True)
class ReproOptions:
    """``mpdp reproduce`` switches: repetitions, a quick mode for CI and notebooks, progress, randomness."""

    rng: RandomSource
    repetitions: int | None = None  # None: the paper's count
    quick: bool = False  # small sizes so a run takes seconds (CI, notebooks)
    progress: bool = False
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
class ReproFigure:
    """How ``mpdp reproduce --plot`` lays a table out the way the paper's figure does.

    Every field is optional; what is left out is inferred from the rows (:mod:`mpdp.cli.repro_layout`). Each
    metric always gets its own panels (one quantity per y axis).

    ``x``: the setting on the horizontal axis. A numeric one draws lines (a row whose value there is not a
    number, e.g. ``None`` or ``"any"``, is drawn as a horizontal line: the same at every x); a categorical one
    draws one row of dots per category. ``series``: the settings whose values name the lines (the legend).
    ``panels``: settings that split each metric into small multiples, e.g. ``("m",)``. ``labels``: axis labels
    with their units, by setting key or metric name, e.g. ``{"epsilon": "privacy budget ε"}``.
    """

    x: str | None = None
    series: tuple[str, ...] | None = None
    panels: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    id: str  # e.g. "000-table3"
    title: str
    run: Callable[[ReproOptions], ReproTable]
    figure: ReproFigure = field(default_factory=ReproFigure)  # how ``--plot`` draws the table


def _modules(names: tuple[str, ...], attribute: str) -> Iterator[tuple[str, Any]]:
    for module_name in names:
        yield from ((module_name, item) for item in getattr(importlib.import_module(module_name), attribute, ()))


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm's spec by name (imports only the light ``spec`` modules)."""
    found: dict[str, AlgorithmSpec] = {}
    for module_name, spec in _modules(MODULES, "SPECS"):
        if spec.name in found:
            raise ParameterError(explain("algorithm name", spec.name, "unique names", f"rename it in {module_name}"))
        found[spec.name] = spec
    return found


def reproductions() -> dict[str, Reproduction]:
    """Every registered paper reproduction by id."""
    found: dict[str, Reproduction] = {}
    for module_name, repro in _modules(REPRODUCTION_MODULES, "REPRODUCTIONS"):
        if repro.id in found:
            raise ParameterError(explain("reproduction id", repro.id, "unique ids", f"rename it in {module_name}"))
        found[repro.id] = repro
    return found


def get_algorithm(name: str) -> AlgorithmSpec:
    """The spec of the algorithm called ``name``."""
    known = algorithms()
    if name not in known:
        raise ParameterError(explain("algorithm", name, f"one of {sorted(known)}", "run `mpdp run --list`"))
    return known[name]


def get_reproduction(table_id: str) -> Reproduction:
    known = reproductions()
    if table_id not in known:
        raise ParameterError(explain("reproduction id", table_id, f"one of {sorted(known)}",
                                     "run `mpdp reproduce --list`"))
    return known[table_id]
