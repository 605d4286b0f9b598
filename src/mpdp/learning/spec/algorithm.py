"""What an algorithm is, written once: :class:`AlgorithmSpec`.

Each paper package declares its algorithms in its own ``spec.py`` (``SPECS``, a tuple of specs) and nothing
else names them: the registry (:mod:`mpdp.learning.registry`), ``mpdp run --list``, ``mpdp launch``'s engines,
the Flower apps, the audits, ``mpdp run --save`` and the docs' tables all read the specs.

A spec carries

* who it is: ``name``, ``summary``, the ``paper`` it comes from, its ``partitioning`` and ``task``;
* its options: ``settings``, a :class:`~mpdp.learning.spec.options.Settings` subclass (type, default, bounds,
  choices and help of each option, checked the same way by every engine);
* its parties: ``roles`` (who takes part, for the docs and ``--list``) and ``min_parties`` (data parties below
  which the algorithm cannot run: refused before anything starts);
* hooks, loaded only by the engine that needs them (so a party process imports its own algorithm's code and
  nothing else): ``deployment`` (its parties: run in memory by :meth:`AlgorithmSpec.run`, or one process per
  party), ``driver`` (an algorithm's own in-memory driver, where it has one), ``flower`` (a Flower app),
  ``audits`` (the audited release paths), ``release`` (the model ``--save`` writes) and ``estimator`` (the
  scikit-learn class).

A hook is a :class:`Ref`: the dotted path of a module and the attribute in it. Naming a module of a higher layer
(``mpdp.flower``, ``mpdp.audit``) there is deliberate: the spec says where an engine finds the algorithm's
adapter; only that engine resolves it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec.options import Settings
from mpdp.learning.spec.run import RunConfig, RunReport

__all__ = ["AlgorithmSpec", "AuditHook", "Partitioning", "Ref", "RoleInfo", "Task"]

Partitioning = Literal["vertical", "horizontal"]
Task = Literal["classification", "regression", "synthesis"]


@dataclass(frozen=True)
class Ref:
    """``"package.module:attribute"``: an object an engine imports only when it needs it (a dotted attribute
    path; a part may be a key of a mapping, as in ``"module:RUNS.mpc-gradp"``)."""

    target: str

    def __post_init__(self) -> None:
        module, sep, attribute = self.target.partition(":")
        if not (sep and module and attribute):
            raise ParameterError(explain("hook", self.target, "'package.module:attribute'",
                                         "name the module and the attribute, e.g. 'mpdp.flower.ofpa_ofaa:APP'"))

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    def load(self) -> Any:
        """Import the module and return the attribute."""
        module, _, attribute = self.target.partition(":")
        try:
            found = importlib.import_module(module)
        except ImportError as exc:
            raise ParameterError(explain("hook", self.target, "an importable module", "install the extra it "
                                         f"needs ({exc.name or exc})")) from exc
        value: Any = found
        for part in attribute.split("."):  # attributes, or keys of a mapping (e.g. "RUNS.mpc-gradp")
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif hasattr(value, part):
                value = getattr(value, part)
            else:
                raise ParameterError(explain("hook", self.target, f"an attribute {attribute} of {module}",
                                             "fix the spec's hook"))
        return value


@dataclass(frozen=True)
class RoleInfo:
    """A kind of party in the algorithm: its process names, how many there are, and what it does."""

    names: str  # e.g. "party0 .. party{K-1}", "server", "aggregator0, aggregator1"
    count: str  # e.g. "one per data party", "1", "--option aggregators (default 2)"
    summary: str


@dataclass(frozen=True)
class AuditHook:
    """An audited release path of the algorithm: ``build(broken: bool) -> AuditCase`` and the sample budget of
    the CI subset (enough for the broken variant to be flagged)."""

    name: str
    build: Ref
    quick_samples: int


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm (module docstring)."""

    name: str
    summary: str
    paper: str  # the paper's number, e.g. "001" (mpdp.learning.papers holds the citations)
    partitioning: Partitioning
    task: Task
    settings: type[Settings]
    #: the algorithm's own in-memory driver ``(RunConfig) -> RunReport``; None: the deployment's parties run in
    #: memory (:func:`~mpdp.learning.spec.memory.run_in_memory`), as deployed
    driver: Ref | None = None
    roles: tuple[RoleInfo, ...] = ()
    min_parties: int = 1
    backends: tuple[str, ...] = ()  # e.g. ("shares", "ckks", "paillier"); the first is the default
    deployment: Ref | None = None  # an AlgorithmDeployment subclass
    flower: Ref | None = None  # a module with the Flower app (extra "flower")
    audits: tuple[AuditHook, ...] = ()
    release: Ref | None = None  # (released object, training Dataset) -> (kind, parameters) for --save
    estimator: Ref | None = None  # the scikit-learn estimator class

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip().lower() or " " in self.name:
            raise ParameterError(explain("algorithm name", self.name, "a lower-case name without spaces",
                                         "name it as users type it, in lower case"))
        if not (isinstance(self.settings, type) and issubclass(self.settings, Settings)):
            raise ParameterError(explain(f"settings of {self.name}", self.settings, "a Settings subclass",
                                         "declare the options in a Settings subclass"))
        if self.min_parties < 1:
            raise ParameterError(explain(f"min_parties of {self.name}", self.min_parties, "an int >= 1",
                                         "say how many data parties the algorithm needs"))

    @property
    def deployable(self) -> bool:
        return self.deployment is not None

    @property
    def savable(self) -> bool:
        return self.release is not None

    def configure(self, config: RunConfig) -> RunConfig:
        """``config`` for this algorithm: its name set, its settings checked from ``config.options`` when it has
        none yet (a RunConfig built by hand), its options their plain form."""
        settings = config.settings if config.settings is not None else self.settings_from(config.options)
        if not isinstance(settings, self.settings):
            raise ParameterError(explain(f"settings of {self.name}", type(settings).__name__,
                                         f"a {self.settings.__name__}", "build them with spec.settings_from"))
        plain = {k: v for k, v in settings.to_public().items() if v is not None}
        return dataclasses.replace(config, settings=settings, options=plain, algorithm=self.name)

    def run(self, config: RunConfig) -> RunReport:
        """Run the algorithm in memory: its deployment's parties in this process (or its own driver)."""
        config = self.configure(config)
        if self.driver is not None:
            report: RunReport = self.driver.load()(config)
            return report
        if self.deployment is None:
            raise ParameterError(explain(f"spec of {self.name}", "neither driver nor deployment", "one of them",
                                         "name the algorithm's deployment (or its driver) in its spec"))
        from mpdp.learning.spec.memory import run_in_memory

        return run_in_memory(self.name, self.deployment.load()(), config)

    def settings_from(self, options: Any, *, source: str = "--option") -> Settings:
        """The algorithm's settings from user-given options (the one door every engine uses)."""
        return self.settings.from_options(options, source=f"{source} of {self.name}:")

    def check_parties(self, parties: int, *, source: str = "--parties") -> None:
        """Refuse fewer data parties than the algorithm needs, before anything runs."""
        if parties < self.min_parties:
            raise ParameterError(explain(source, parties, f"at least {self.min_parties} data parties for {self.name}",
                                         f"pass {source} {max(self.min_parties, 2)} or more"))

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "paper": self.paper, "partitioning": self.partitioning,
                "task": self.task, "backends": list(self.backends), "min_parties": self.min_parties,
                "roles": [{"names": r.names, "count": r.count, "summary": r.summary} for r in self.roles],
                "options": [o.as_json() for o in self.settings.options()],
                "engines": self.engines(), "savable": self.savable}

    def engines(self) -> list[str]:
        """Where the algorithm runs: ``memory`` always, ``grpc`` when deployable, ``flower`` with an app,
        ``estimator`` with a scikit-learn class."""
        out = ["memory"]
        out += ["grpc"] if self.deployment is not None else []
        out += ["flower"] if self.flower is not None else []
        out += ["estimator"] if self.estimator is not None else []
        return out
