"""The in-memory engine: an algorithm's party code, as deployed, run by every party in this process.

:func:`run_in_memory` plans the run with the algorithm's :class:`~mpdp.learning.spec.deployment.AlgorithmDeployment`
exactly as ``mpdp launch`` does, hands every party the same shared parameters, its own data only and its own
:class:`~mpdp.runtime.steps.StepSession` over the in-memory transport, runs every party's
:meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.run_party` as one role of
:func:`~mpdp.runtime.run_protocol` (threads, greenlets or forked processes, as the deployment's
:meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.execution` says), and assembles the report from the
parties' results with :meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.report`, the function the
launcher calls on the processes' results. A seeded run therefore draws what a seeded deployment draws: the
random sources descend from the run's root by the plan's ``rng_path`` in both.

Each party's results cross the same wire form in both engines (``encode``, the codec, ``decode``), so a result
that a deployment could not carry fails here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext, shared_parameters
from mpdp.learning.spec.run import RunConfig, RunReport
from mpdp.randomness import RandomSource
from mpdp.runtime.codec import decode, encode
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.steps import RunRecord, StepSession, run_programs

__all__ = ["ALGORITHM_LABEL", "decode_runs", "encode_runs", "memory_root", "run_in_memory", "run_parties"]

#: the first label of every plan's ``rng_path``: ``RunConfig.rng`` is the run's seeded root spawned by it
ALGORITHM_LABEL = "algorithm"


def memory_root(config: RunConfig, plan: DeployPlan) -> RandomSource:
    """The parties' protocol root: ``config.rng`` descended by ``plan.rng_path`` after its first label."""
    if not plan.rng_path or plan.rng_path[0] != ALGORITHM_LABEL:
        raise ParameterError(explain("rng_path", plan.rng_path, f"a path starting with {ALGORITHM_LABEL!r}",
                                     "start the plan's rng_path at the run's algorithm source"))
    root = config.rng
    for label in plan.rng_path[1:]:
        root = root.spawn(label)
    return root


def encode_runs(deployment: AlgorithmDeployment, party: str, runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """A party's runs as plain data for the codec (results through ``deployment.encode``)."""
    return [{"parties": list(r.parties), "result": deployment.encode(party, r.result), "traffic": r.traffic.as_dict(),
             "seconds": r.seconds, "counted": r.counted} for r in runs]


def decode_runs(deployment: AlgorithmDeployment, party: str, wire: Sequence[Mapping[str, Any]],
                public: Mapping[str, Any]) -> list[RunRecord]:
    """:func:`encode_runs`' inverse (results through ``deployment.decode``)."""
    out = []
    for r in wire:
        t = r["traffic"]
        traffic = PartyTraffic(bytes_sent=int(t["bytes_sent"]), bytes_received=int(t["bytes_received"]),
                               messages_sent=int(t["messages_sent"]), messages_received=int(t["messages_received"]),
                               rounds=int(t["rounds"]))
        out.append(RunRecord(tuple(r["parties"]), deployment.decode(party, r["result"], public), traffic,
                             float(r.get("seconds", 0.0)), bool(r.get("counted", True))))
    return out


def run_parties(deployment: AlgorithmDeployment, config: RunConfig, plan: DeployPlan) -> dict[str, list[RunRecord]]:
    """Every party's protocol runs, each party's ``run_party`` on its own in-memory session."""
    shared = shared_parameters(plan)
    root = memory_root(config, plan)
    options = dict(deployment.execution(config))

    def program(name: str) -> Callable[[StepSession], bytes]:
        def run(session: StepSession) -> bytes:
            deployment.run_party(PartyContext(name, shared, plan.data.get(name), session, root,
                                              plan.evaluation.get(name)))
            return encode(encode_runs(deployment, name, session.runs))  # the wire form a deployed party writes

        return run

    done = run_programs({name: program(name) for name in plan.parties}, rng=root, **options)
    return {name: decode_runs(deployment, name, decode(done[name]), shared) for name in plan.parties}


def run_in_memory(algorithm: str, deployment: AlgorithmDeployment, config: RunConfig) -> RunReport:
    """Run ``algorithm`` in memory through its deployment's parties (module docstring)."""
    if config.algorithm != algorithm:
        config = dataclasses.replace(config, algorithm=algorithm)
    plan = deployment.plan(algorithm, config)
    outcomes = run_parties(deployment, config, plan)
    report = deployment.report(config, plan, outcomes)
    if report is None:
        raise ParameterError(explain(f"report of {algorithm}", None, "the deployment's report of its parties' "
                                     "results", "implement AlgorithmDeployment.report"))
    return report
