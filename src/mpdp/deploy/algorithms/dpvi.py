"""Deploying paper 002's vertically partitioned DPVI (``dpvi``): attribute holders, the dealer, the noise party.

Processes: ``party0`` .. ``party{P-1}`` (each holds the values of its own attributes for every record, the label
with the group that models it), the ``dealer`` of the MPC's correlated randomness and, with ``--option
noise=trusted``, the ``noise`` party. The roles are :func:`mpdp.learning.dpvi.parties.roles`' (``DataParty``,
``TrustedDealer``, ``NoiseParty``) built on the public :class:`~mpdp.learning.dpvi.parties.VerticalSetup`, which
every party works out from the shared parameters with :meth:`VerticalDPVI.setup_for
<mpdp.learning.dpvi.model.VerticalDPVI.setup_for>`, as the in-memory fit does.

The mixture model is built from the public schema; the launcher refuses a dataset whose model would depend on
its records (an integer-valued check of binned attributes that the schema alone cannot settle). A data party's
ledger is charged its guarantee towards the parties (VPDP: ``per_party_epsilon``), as the in-memory fit charges
party ledgers; it can exceed the analyst's epsilon, so the launcher's demo ledgers allow the larger figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mpdp.datasets.holdings import PartyData, dataset_from_schema, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.errors import ParameterError, explain
from mpdp.learning.dpvi.experiments import RunPlan
from mpdp.learning.dpvi.model import VerticalDPVI, default_model
from mpdp.learning.dpvi.parties import DataParty, NoiseParty, PartyOutcome, VerticalSetup
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.run import RunConfig
from mpdp.protocols.mpc import TrustedDealer

__all__ = ["DpviDeployment"]


def _vertical(public: Mapping[str, Any]) -> VerticalDPVI:
    common = dict(public["common"])
    plan = RunPlan(common, str(public["noise"]), bool(public["renormalize"]), False, "greenlets",
                   tuple(tuple(g) for g in public["groups"]), bytes.fromhex(public["public_seed"]),
                   float(public["z"]))
    return plan.vertical(float(public["delta"]), None)


def _schema_model(public: Mapping[str, Any]) -> Any:
    schema = public["schema"]
    empty = PartyData("schema", np.zeros((0, len(schema["features"]))), tuple(schema["features"]), np.zeros(0),
                      np.zeros((0, len(schema["attributes"]))))
    return default_model(dataset_from_schema(schema, empty), int(public["common"]["components"]))


def _setup(public: Mapping[str, Any]) -> tuple[VerticalSetup, Any]:
    return _vertical(public).setup_for(_schema_model(public), int(public["n"]), public["groups"])


class DpviDeployment(AlgorithmDeployment):
    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        rp = RunPlan.of(config)
        public = {"common": rp.common, "noise": rp.noise, "renormalize": rp.renormalize,
                  "groups": [list(g) for g in rp.groups], "public_seed": rp.public_seed.hex(), "z": rp.z,
                  "delta": config.delta, "n": config.train.n, "schema": schema_of(config.train)}
        model = rp.vertical(config.delta, None)._model_for(config.train)
        if _schema_model(public) != model:
            raise ParameterError(explain(f"the mixture model of {config.train.name}", "one that depends on the records",
                                         "a model the public schema settles", "declare the attributes' bins and "
                                         "kinds in the schema, or run dpvi in memory with `mpdp run`"))
        setup, _ = _setup(public)
        data: dict[str, PartyData | None] = {}
        for name, group in zip(setup.parties, setup.features, strict=True):
            data[name] = PartyData(name, np.ascontiguousarray(model.values_of(config.train, group)), tuple(group))
        parties = (*setup.parties, setup.dealer)
        if setup.noise == "trusted" and setup.settings.noise_multiplier > 0:
            parties = (*parties, setup.noise_party)
        data.update({p: None for p in parties if p not in data})
        return DeployPlan(parties, public, data, ("algorithm", "root"))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        setup, privacy = _setup(public)
        if party not in setup.parties:
            return None
        return PrivacyCost(epsilon=privacy.per_party[party], delta=privacy.delta,
                           mechanism=f"dpvi-vpdp-{privacy.accountant}")

    def run_party(self, ctx: PartyContext) -> None:
        setup, _ = _setup(ctx.public)
        parties: tuple[str, ...] = (*setup.parties, setup.dealer)
        if setup.noise == "trusted" and setup.settings.noise_multiplier > 0:
            parties = (*parties, setup.noise_party)
        role: Any
        if ctx.name in setup.parties:
            if ctx.data is None:
                raise ParameterError(explain(f"data of {ctx.name}", None, "its attributes' values",
                                             "give it its data file"))
            role = DataParty(ctx.name, setup, ctx.data.X)
        elif ctx.name == setup.dealer:
            role = TrustedDealer(setup.dealer, parties=setup.parties)
        else:
            role = NoiseParty(setup)
        ctx.session.run(role, ctx.root, parties)

    def encode(self, party: str, result: Any) -> Any:
        return result.to_wire() if isinstance(result, PartyOutcome) else result
