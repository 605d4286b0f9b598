"""One interface for every way of running an algorithm's parties apart: :class:`Engine`.

An engine takes the algorithm's spec, the :class:`~mpdp.learning.spec.run.RunConfig` ``mpdp run`` builds and the
:class:`LaunchOptions` of the launch, runs the parties as separate processes, and returns the
:class:`~mpdp.learning.spec.run.RunReport` that the algorithm's deployment assembles from the parties' results
(:func:`mpdp.learning.spec.memory.assemble_report`, the function the in-memory engine calls): the record's
fields, metric and privacy spent are therefore the same whichever engine ran the parties. What is the engine's
own goes in two extra fields of the report:

* ``deployment``: the processes, the transport, the wall and protocol seconds, and per party what that engine
  can measure (keys ``processes``, ``transport``, ``engine``, ``wall_seconds``, ``protocol_seconds``,
  ``startup_seconds``, ``startup_cpu_seconds``, ``per_party`` in every engine, plus the engine's own);
* ``options``: the options the parties ran with (a deployment may set one, e.g. paper 003's ``cohort=1``).

:data:`ENGINES` names each engine's class by where it lives (:func:`engine_for` imports it on use, so a command
that runs on gRPC never imports Flower, and the reverse): ``grpc`` (:class:`mpdp.deploy.launcher.GrpcEngine`)
and ``flower`` (:class:`mpdp.flower.launcher.FlowerEngine`, extra ``flower``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec import AlgorithmSpec, Ref
from mpdp.learning.spec.run import RunConfig, RunReport
from mpdp.progress import SILENT, Progress

__all__ = ["DEPLOYMENT_FIELDS", "ENGINES", "Engine", "LaunchOptions", "engine_for"]

#: the keys of the ``deployment`` field every engine fills in
DEPLOYMENT_FIELDS = ("processes", "transport", "engine", "wall_seconds", "protocol_seconds", "startup_seconds",
                     "startup_cpu_seconds", "per_party")


@dataclass(frozen=True)
class LaunchOptions:
    """How to launch, whichever the engine (each default written once, here).

    ``timeout``: seconds a party waits for a message (on Flower: a message round's deadline);
    ``connect_timeout``: seconds the parties wait for each other to come up; ``keep``: write the parties'
    folders there and leave them; ``seed``: the parties' seeded sources (experiments: a seeded launch draws
    what ``mpdp run --seed`` draws); ``max_dropouts`` and ``tls``: Flower only (clients that may miss a round;
    HTTPS with a demo CA, else plain HTTP; gRPC is always mutual TLS); ``progress``: phase lines.
    """

    seed: int | None = None
    timeout: float = 120.0
    connect_timeout: float = 30.0
    keep: Path | None = None
    max_dropouts: int = 0
    tls: bool = True
    progress: Progress = SILENT
    #: gRPC only: the folder the party that receives the release writes the model into (``mpdp launch --save``)
    save: Path | None = None

    def __post_init__(self) -> None:
        for label, value in (("timeout", self.timeout), ("connect_timeout", self.connect_timeout)):
            if not value > 0:
                raise ParameterError(explain(label, value, "seconds > 0", f"pass e.g. {label}=60"))
        if self.max_dropouts < 0:
            raise ParameterError(explain("max_dropouts", self.max_dropouts, "an int >= 0", "pass 0 or more"))


class Engine(Protocol):
    """Runs an algorithm's parties apart and returns the deployment's report (module docstring)."""

    name: str

    def launch(self, spec: AlgorithmSpec, config: RunConfig, options: LaunchOptions) -> RunReport:
        """Run ``spec``'s parties for ``config``; the report with ``deployment`` and ``options`` extra fields."""


#: engine name -> where its class lives (imported on use)
ENGINES: dict[str, str] = {"grpc": "mpdp.deploy.launcher:GrpcEngine", "flower": "mpdp.flower.launcher:FlowerEngine"}


def engine_for(name: str) -> Engine:
    """The engine called ``name`` (a :class:`~mpdp.errors.ParameterError` naming the extra to install when its
    libraries are missing)."""
    if name not in ENGINES:
        raise ParameterError(explain("engine", name, f"one of {sorted(ENGINES)}", "pick one of those"))
    return cast(Engine, Ref(ENGINES[name]).load()())
