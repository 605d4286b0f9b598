"""Paper 002's vertically partitioned DPVI (``dpvi``) as parties: attribute holders, the dealer, the noise party.

Parties: ``party0`` .. ``party{P-1}`` (each holds the values of its own attributes for every record, the label
with the group that models it), the ``dealer`` of the MPC's correlated randomness and, with ``--option
noise=trusted``, the ``noise`` party. The roles are :func:`mpdp.learning.dpvi.parties.roles`' (``DataParty``,
``TrustedDealer``, ``NoiseParty``) built on the public :class:`~mpdp.learning.dpvi.parties.VerticalSetup`, which
every party works out from the shared parameters with :meth:`VerticalDPVI.setup_for
<mpdp.learning.dpvi.model.VerticalDPVI.setup_for>`, as the estimator's fit does. ``mpdp run`` runs them in
memory (as greenlets, or with the dealer and noise party forked, or every party forked: ``--option runner``,
:meth:`DpviDeployment.execution`) and ``mpdp launch`` one process each, from the same plan: one protocol run
whose random sources descend from the run's by ``("algorithm", "root")``, so a seeded deployment draws what
memory draws.

The options travel as the spec's settings (``public["settings"]``); the launcher also settles the noise
multiplier (calibrated so that the float baseline, the most expensive, spends at most epsilon towards the
analyst: :func:`~mpdp.learning.dpvi.model.same_privacy_noise`) and the public seed. The mixture model is built
from the public schema; the plan refuses a dataset whose model would depend on its records (an integer-valued
check of binned attributes that the schema alone cannot settle).

Privacy: a data party's ledger is charged its guarantee towards the parties (VPDP,
:func:`~mpdp.learning.dpvi.privacy.party_cost`), the report's ``per_party_epsilon``; it can exceed the
analyst's epsilon (the report's ``epsilon_spent``, :func:`~mpdp.learning.dpvi.privacy.analyst_cost`), which its
``per_party_note`` explains, and the launcher's demo ledgers allow the larger figure.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mpdp.datasets.holdings import PartyData, dataset_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, explain
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI, default_model, same_privacy_noise
from mpdp.learning.dpvi.parties import DataParty, NoiseParty, PartyOutcome, VerticalSetup
from mpdp.learning.dpvi.privacy import Privacy, analyst_cost, party_cost
from mpdp.learning.dpvi.spec import DPVIRunSettings, batch_size_for, settings_of
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.memory import memory_root
from mpdp.learning.spec.run import Curve, Metric, RunConfig, RunReport, timed
from mpdp.progress import SILENT
from mpdp.protocols.mixture_gradient import GradientPrecision
from mpdp.protocols.mpc import TrustedDealer
from mpdp.runtime.mixed import can_fork
from mpdp.runtime.steps import RunRecord, communication

__all__ = ["DpviDeployment", "vertical_of"]


def _partition(config: RunConfig) -> tuple[tuple[str, ...], ...]:
    """The parties' attribute groups; the label, unless a group names it, goes with the label party's."""
    groups = [list(g) for g in (config.partition or ())]
    if not groups:
        raise ParameterError(explain("partition", None, "a vertical partition", "pass --partition or use named groups"))
    label = config.train.label_name
    if config.train.task == "classification" and all(label not in g for g in groups):
        groups[config.label_party].append(label)  # the label is modelled with the label party's attributes
    return tuple(tuple(g) for g in groups)


def _common(settings: DPVIRunSettings, n: int) -> dict[str, Any]:
    """The model and DP-SGD keyword arguments :class:`VerticalDPVI` and :class:`DPVI` share."""
    return {"components": settings.components, "epochs": settings.epochs,
            "batch_size": batch_size_for(settings.batch, n), "clip": settings.clip, "learning_rate": settings.lr,
            "batching": settings.batching, "accountant": settings.accountant}


def _same(public: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of both the partitioned and the float run: the same privacy and public seed."""
    settings = DPVIRunSettings.from_public(public["settings"])
    return {**_common(settings, int(public["n"])), "epsilon": None, "noise_multiplier": float(public["z"]),
            "delta": float(public["delta"]), "public_seed": bytes.fromhex(public["public_seed"])}


def vertical_of(public: Mapping[str, Any]) -> VerticalDPVI:
    """The estimator every party (and the report) works the public setup out with, from the shared parameters."""
    settings = DPVIRunSettings.from_public(public["settings"])
    return VerticalDPVI(noise=settings.noise, functions=settings.functions,
                        precision=GradientPrecision(renormalize=settings.renormalize),
                        processes=settings.runner == "processes", fork_services=settings.runner == "fork-services",
                        **_same(public))


def _schema_model(public: Mapping[str, Any]) -> MixtureModel:
    schema = public["schema"]
    empty = PartyData("schema", np.zeros((0, len(schema["features"]))), tuple(schema["features"]), np.zeros(0),
                      np.zeros((0, len(schema["attributes"]))))
    return default_model(dataset_from_schema(schema, empty), int(public["settings"]["components"]))


def _setup(public: Mapping[str, Any]) -> tuple[VerticalSetup, Privacy]:
    return vertical_of(public).setup_for(_schema_model(public), int(public["n"]), public["groups"])


def _parties(setup: VerticalSetup) -> tuple[str, ...]:
    """Every party of the protocol, in its order: the data parties, the dealer and any noise party."""
    parties = (*setup.parties, setup.dealer)
    if setup.noise == "trusted" and setup.settings.noise_multiplier > 0:
        parties = (*parties, setup.noise_party)
    return parties


class DpviDeployment(AlgorithmDeployment):
    """The parties of a ``dpvi`` run (module docstring)."""

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        settings = settings_of(config)
        train = config.train
        z = same_privacy_noise(train, epsilon=config.epsilon, delta=config.delta,
                               **{k: v for k, v in _common(settings, train.n).items() if k != "learning_rate"})
        public = {"settings": settings.to_public(),
                  "groups": [list(g) for g in _partition(config)],
                  "public_seed": config.rng.spawn("public").bytes(32).hex(), "z": z, "delta": config.delta,
                  "n": train.n, "schema": schema_of(train)}
        model = vertical_of(public)._model_for(train)
        if _schema_model(public) != model:
            raise ParameterError(explain(f"the mixture model of {train.name}", "one that depends on the records",
                                         "a model the public schema settles", "declare the attributes' bins and "
                                         "kinds in the schema"))
        setup, _ = _setup(public)
        data: dict[str, PartyData | None] = {}
        for name, group in zip(setup.parties, setup.features, strict=True):
            data[name] = PartyData(name, np.ascontiguousarray(model.values_of(train, group)), tuple(group))
        data.update({p: None for p in _parties(setup) if p not in data})
        return DeployPlan(_parties(setup), public, data, ("algorithm", "root"))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        setup, privacy = _setup(public)
        return party_cost(privacy, party) if party in setup.parties else None

    def execution(self, config: RunConfig) -> Mapping[str, Any]:
        """``--option runner``: the parties as greenlets of this thread (``greenlets``), with the dealer and any
        noise party forked into processes of their own (``fork-services``, from a process running one thread),
        or every party forked (``processes``)."""
        runner = settings_of(config).runner
        if runner == "processes":
            return {"processes": True}
        if runner == "greenlets":
            return {"cooperative": True}
        if not can_fork():
            raise ParameterError(explain("runner", runner, "a run from a process running one thread",
                                         "this process runs other threads, and a fork would copy locks they hold: "
                                         "pass --option runner=greenlets, or run from a script"))
        services = (VerticalSetup.dealer, VerticalSetup.noise_party) if settings_of(config).noise == "trusted" \
            else (VerticalSetup.dealer,)
        return {"cooperative": True, "forked": services}

    def run_party(self, ctx: PartyContext) -> None:
        setup, _ = _setup(ctx.public)
        role: Any
        if ctx.name in setup.parties:
            if ctx.data is None:
                raise ParameterError(explain(f"data of {ctx.name}", None, "its attributes' values",
                                             "give it its data file"))
            first = ctx.name == setup.parties[0]  # every party steps together: one bar is enough
            role = DataParty(ctx.name, setup, ctx.data.X, progress=ctx.progress if first else SILENT)
        elif ctx.name == setup.dealer:
            role = TrustedDealer(setup.dealer, parties=setup.parties)
        else:
            role = NoiseParty(setup)
        ctx.session.run(role, ctx.root, _parties(setup))

    def encode(self, party: str, result: Any) -> Any:
        return result.to_wire() if isinstance(result, PartyOutcome) else result

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        return PartyOutcome.from_wire(wire) if party in _setup(public)[0].parties else wire

    def report(self, config: RunConfig, plan: DeployPlan,
               outcomes: Mapping[str, Sequence[RunRecord]]) -> RunReport:
        """The released mixture's test NLL (and per epoch), beside the non-partitioned float DPVI at the same
        privacy and public seed and non-private VI (``baseline=true``); privacy from :meth:`cost` (per party) and
        :func:`~mpdp.learning.dpvi.privacy.analyst_cost` (towards the analyst)."""
        start = time.perf_counter()
        public = plan.public
        settings = DPVIRunSettings.from_public(public["settings"])
        setup, privacy = _setup(public)
        seconds = max(sum(r.seconds for r in runs) for runs in outcomes.values())
        mpc = vertical_of(public).adopt(config.train, setup, privacy,
                                        [run.result for name in setup.parties for run in outcomes[name]],
                                        communication(outcomes), seconds=seconds)
        test = config.test
        curves = [Curve("partitioned DPVI (MPC)", tuple(range(1, len(mpc.trace_.epochs) + 1)),
                        tuple(mpc.nll_per_epoch(test)), "epoch", "test NLL")]
        extra: dict[str, Any] = {
            "noise": settings.noise, "functions": settings.functions, "renormalize": settings.renormalize,
            "runner": settings.runner,
            "noise_multiplier": privacy.noise_multiplier, "accountant": privacy.accountant, "steps": privacy.steps,
            "sampling_rate": privacy.sampling_rate, "settings": _common(settings, config.train.n),
            "per_iteration_seconds": {"mpc": float(np.mean(mpc.trace_.step_seconds))},
            "nll_per_epoch": {"mpc": list(curves[0].y)},
            "per_party_note": "towards each party (VPDP): no subsampling amplification (every party knows the "
                              "minibatches), its own noise share removed"
                              + ("; --option batching=disjoint bounds it by epochs" if settings.batching == "poisson"
                                 else ""),
            "baseline": None,
        }
        non_private = None
        phases: dict[str, float] = {}
        if settings.baseline:
            with timed(phases, "baseline"):
                same = _same(public)
                base = DPVI(rng=memory_root(config, plan), **same).fit(config.train)
                extra["baseline"] = {"name": "non-partitioned float64 DPVI (same privacy and seed)",
                                     "value": base.nll(test)}
                extra["per_iteration_seconds"]["float"] = float(np.mean(base.trace_.step_seconds))
                extra["nll_per_epoch"]["float"] = base.nll_per_epoch(test)
                curves.append(Curve("non-partitioned DPVI (float64)", curves[0].x,
                                    tuple(extra["nll_per_epoch"]["float"]),
                                    "epoch", "test NLL"))
                plain = {**_common(settings, config.train.n), "accountant": "ddg"}
                free = DPVI(epsilon=None, noise_multiplier=0.0, public_seed=same["public_seed"],
                            rng=config.rng.spawn("plain"), **plain).fit(config.train)
                non_private = Metric("test_nll", free.nll(test))
        per_party = {name: getattr(self.cost(public, name), "epsilon", 0.0) for name in setup.parties}
        spent = analyst_cost(privacy)
        return RunReport(
            algorithm=config.algorithm, dataset=config.train.name, parties=len(setup.parties),
            epsilon=config.epsilon, delta=config.delta, epsilon_spent=spent.epsilon, delta_spent=spent.delta,
            per_party_epsilon=per_party, metric=Metric("test_nll", mpc.nll(test)), non_private=non_private,
            seconds=seconds + time.perf_counter() - start, communication=dict(mpc.communication_), extra=extra,
            phases=phases,
            curves=curves, released=mpc)
