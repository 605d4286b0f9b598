"""What running one algorithm's parties apart takes: who the parties are, what each holds, how each runs.

An algorithm's spec names its :class:`AlgorithmDeployment` (:attr:`AlgorithmSpec.deployment
<mpdp.learning.spec.AlgorithmSpec.deployment>`). It answers four questions, two on each side:

* launcher side, from the same :class:`~mpdp.learning.spec.run.RunConfig` ``mpdp run`` builds:
  :meth:`~AlgorithmDeployment.plan` names the parties in the protocol's canonical order, writes down the
  *public* parameters every party must agree on (JSON: budget, options, schema, the public bounds) and cuts
  each party's own data out of the training set; :meth:`~AlgorithmDeployment.decode` rebuilds a party's
  result from its wire form, so the algorithm's own driver code assembles the report;
* party side, in the party's own process: :meth:`~AlgorithmDeployment.run_party` builds the party's role
  (the same :class:`~mpdp.runtime.Party` objects and role functions the in-memory run uses) from the public
  parameters and its own data only, and runs it through its :class:`StepRunner` (a deployed party's
  session over gRPC, or :class:`~mpdp.runtime.steps.StepSession` over the in-memory transport);
  :meth:`~AlgorithmDeployment.cost` is what the party's own ledger is charged for the run;
  :meth:`~AlgorithmDeployment.encode` turns its result into plain data for the wire codec;
* after the run, on the party's side, from its own protocol runs only: :meth:`~AlgorithmDeployment.release`
  is what the party that receives the release (:meth:`~AlgorithmDeployment.receiver`) holds of it, the object
  the spec's ``release`` hook reads (what ``mpdp run --save`` writes from the report's ``released``) with the
  privacy it cost, and :meth:`~AlgorithmDeployment.party_metric` the metric a party that scores itself on
  held-out records computed. ``mpdp party`` writes both (:mod:`mpdp.deploy.party`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mpdp.datasets.holdings import PartyData, records_digest
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.learning.spec.run import Metric, RunConfig, RunReport
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.steps import RunRecord

__all__ = ["AlgorithmDeployment", "DeployPlan", "PartyContext", "PartyRelease", "StepRunner", "shared_parameters"]


class StepRunner(Protocol):
    """Runs the local party's protocol runs one after the other over its connections."""

    def run(self, role: Callable[[Comm], Any], root: RandomSource, parties: Sequence[str], *,
            counted: bool = True) -> Any:
        """Run the local party's ``role`` among ``parties`` (canonical order), its random source
        ``root.spawn(name)``; return its result. ``counted=False``: coordination a single process would not
        send (reported apart from the algorithm's communication)."""


@dataclass(frozen=True)
class DeployPlan:
    """The launcher's split of one run into parties.

    ``parties``: every process, in the canonical order of the algorithm's protocol. ``public``: JSON the
    parties share (compared at start-up). ``data``: each party's own rows or columns (None for a party that
    holds no data: a server, a dealer, an aggregator). ``labels``: who holds the label column.
    ``rng_path``: the labels by which the driver's protocol root descends from the seeded root
    (``RandomSource.seeded(seed).spawn(a).spawn(b)...``), so a seeded deployment draws what memory draws.
    """

    parties: tuple[str, ...]
    public: dict[str, Any]
    data: dict[str, PartyData | None]
    rng_path: tuple[str, ...]
    labels: frozenset[str] = field(default_factory=frozenset)
    values: frozenset[str] = field(default_factory=frozenset)
    #: held-out records (attribute view and labels) the analyst hands the parties that score themselves on
    #: them (paper 004's agents); written as each such party's ``evaluation.csv``
    evaluation: dict[str, PartyData] = field(default_factory=dict)


def shared_parameters(plan: DeployPlan) -> dict[str, Any]:
    """What every party of ``plan`` is handed and must agree on: the public parameters, the random sources'
    path, who holds what (``holdings``: features, label, attribute view, rows) and, where parties score
    themselves, the held-out records they are given, pinned by their sha256."""
    shared = dict(plan.public)
    shared["rng_path"] = list(plan.rng_path)
    shared["holdings"] = {name: None if d is None else {"features": list(d.features), "label": d.y is not None,
                                                         "values": d.values is not None, "rows": d.n}
                          for name, d in plan.data.items()}
    if plan.evaluation:
        shared["evaluation"] = {name: {"features": list(d.features), "label": d.y is not None,
                                       "values": d.values is not None, "rows": d.n, "sha256": records_digest(d)}
                                for name, d in plan.evaluation.items()}
    return shared


@dataclass
class PartyContext:
    """What the local party's process holds: its name, the public parameters, its own data, its session,
    the root of its protocol random sources and, where the algorithm scores parties on held-out records, those
    records (checked against the digest in the public parameters). ``progress`` is the party's terminal
    (:mod:`mpdp.progress`): an algorithm shows its rounds there (from one of its parties in memory)."""

    name: str
    public: Mapping[str, Any]
    data: PartyData | None
    session: StepRunner
    root: RandomSource
    evaluation: PartyData | None = None
    progress: Progress = SILENT


@dataclass(frozen=True)
class PartyRelease:
    """What the receiving party holds of a run's release: ``released``, the object the algorithm's spec ``release``
    hook reads (the report's ``released`` in memory), and what the release cost: ``epsilon_spent``,
    ``delta_spent`` towards whoever sees it, ``per_party`` each data party's charge (None where one figure
    covers every party). All of it is computed from the party's own results and the public parameters."""

    released: Any
    epsilon_spent: float
    delta_spent: float
    per_party: dict[str, float] | None = None


class AlgorithmDeployment(ABC):
    """One algorithm's (or family's) parties: see the module docstring."""

    def prepare(self, config: RunConfig) -> RunConfig:
        """``config`` as the deployment runs it (e.g. an option that puts each party in its own process); the
        record shows the options used, so the in-memory run to compare with is plain to see."""
        return config

    @abstractmethod
    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        """Parties, public parameters and each party's data for ``config`` (launcher side)."""

    @abstractmethod
    def run_party(self, ctx: PartyContext) -> None:
        """Build the local party's role(s) and run them through ``ctx.session`` (party side)."""

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        """What this party's own ledger is charged for a run (None: it releases nothing): reserved once the
        handshake has authenticated every peer, before its first protocol message (:mod:`mpdp.deploy.charge`)."""
        return None

    def encode(self, party: str, result: Any) -> Any:
        """The party's result as plain data for the wire codec (default: unchanged)."""
        return result

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        """The party's result rebuilt from :meth:`encode`'s output (launcher side; default: unchanged)."""
        return wire

    @abstractmethod
    def report(self, config: RunConfig, plan: DeployPlan, outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        """The run's report from every party's protocol runs (their results decoded), computed by the analyst
        who holds the test data (launcher side, and the in-memory engine's). It times its non-private reference
        under the phase ``baseline`` (:func:`~mpdp.learning.spec.run.timed`); the engines add the others."""

    def receiver(self, public: Mapping[str, Any]) -> str | None:
        """The party that receives the run's release and writes it (None: the algorithm releases no model mpdp
        saves)."""
        _ = public
        return None

    def release(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> PartyRelease | None:
        """What ``party`` holds of the release after its protocol ``runs`` (results decoded as :meth:`decode`
        gives them), or None when it is not the :meth:`receiver`."""
        _ = party, public, runs
        return None

    def party_metric(self, party: str, public: Mapping[str, Any], runs: Sequence[RunRecord]) -> Metric | None:
        """The metric ``party`` computed on its held-out records (None: it scores nothing)."""
        _ = party, public, runs
        return None

    def execution(self, config: RunConfig) -> Mapping[str, Any]:
        """How the in-memory engine runs the parties: keyword arguments of :func:`~mpdp.runtime.run_protocol`
        (``cooperative``, ``processes``, ``forked``, ``timeout``); default: one thread each."""
        _ = config
        return {}
