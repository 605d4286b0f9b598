"""Deploying paper 003's methods (``mpc-gradp``, ``mpc-outp``, ``pathak``, the baselines ``local-outp``,
``local-objp``, ``local-gradp``, and their ``-ridge`` forms).

Processes: ``party0`` .. ``party{m-1}`` (each holds its own training rows) and, for the MPC methods, the
aggregators ``agg0`` (also the aggregation server) .. ``agg{A-1}`` and, for the one-shot ones, the ``dealer`` of
the aggregators' MPC; for the local baselines, the ``server`` that averages what the parties release.
The roles are the baselines' (:mod:`mpdp.learning.distributed_erm.baselines`),
:func:`~mpdp.learning.distributed_erm.mpc.gradp_party_role`,
:func:`~mpdp.learning.distributed_erm.mpc.gradp_aggregator_role`,
:func:`~mpdp.learning.distributed_erm.mpc.outp_party_role`,
:func:`~mpdp.learning.distributed_erm.mpc.outp_aggregator_role` and the
:class:`~mpdp.protocols.mpc.TrustedDealer`, as the in-memory fits build them.

One process per data party is the in-memory run with ``--option cohort=1`` (every data party its own runtime
party): the launcher sets it when it is not given (and refuses another value), and the record shows it, so the
run to compare with is ``mpdp run ... --option cohort=1``.

Public parameters: the method's options, the dimension, the number of parties and the smallest party's
record count ``n(1)`` (the calibration of all three methods depends on it), the schema's row-norm bound.
A data party with ``n_j`` records charges its ledger its own guarantee (``eps n(1) / n_j`` for the MPC one-shot
methods, ``eps`` for the local ones; the Gaussian calibration's epsilon at its sensitivity for the Grad P
methods) before it connects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from mpdp.datasets.holdings import PartyData, schema_of
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.sensitivities.erm import gradient_sensitivity
from mpdp.errors import ParameterError, explain
from mpdp.learning import erm
from mpdp.learning.distributed_erm.baselines import (
    average_at_server,
    local_gradp_calibration,
    local_gradp_party_role,
    local_gradp_server,
    one_shot_party_role,
    one_shot_rows,
)
from mpdp.learning.distributed_erm.common import SERVER, GradientPerturbation, calibrate_gradient_noise
from mpdp.learning.distributed_erm.experiments import RunSettings, loss_for, party_indices
from mpdp.learning.distributed_erm.mpc import (
    DEALER,
    InMPCNoise,
    MPCSetup,
    gradp_aggregator_role,
    gradp_party_role,
    outp_aggregator_role,
    outp_party_role,
    output_noise_scale,
)
from mpdp.learning.distributed_erm.problem import ERMProblem, PartyGroup
from mpdp.learning.spec.deployment import AlgorithmDeployment, DeployPlan, PartyContext
from mpdp.learning.spec.run import RunConfig
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.noise import MPC_LAPLACE_TV

__all__ = ["ERMDeployment"]

_MPC = ("mpc-gradp", "mpc-outp", "pathak")
_LOCAL = ("local-outp", "local-objp", "local-gradp")
_METHODS = _MPC + _LOCAL
_GRADIENT = ("mpc-gradp", "local-gradp")


def _method(algorithm: str) -> str:
    return algorithm.removesuffix("-ridge")


def _problem(public: Mapping[str, Any]) -> ERMProblem:
    return ERMProblem(loss_for(str(public["task"])), lam=float(public["lam"]))


def _settings(public: Mapping[str, Any]) -> GradientPerturbation:
    record = public["record"]
    return GradientPerturbation(epsilon=float(public["epsilon"]), delta=float(public["delta"]), T=int(public["T"]),
                                eta=float(public["eta"]), accountant=cast(Any, public["accountant"]),
                                record=None if record is None else tuple(record))


def _parties(method: str, names: list[str], setup: MPCSetup) -> tuple[str, ...]:
    """The in-memory fit's role order: data parties, then the aggregators (and dealer), or the server."""
    if method in _LOCAL:
        return (*names, SERVER)
    return (*names, *setup.names) + (() if method == "mpc-gradp" else (DEALER,))


def _names(public: Mapping[str, Any]) -> tuple[list[str], MPCSetup]:
    return [f"party{j}" for j in range(int(public["m"]))], MPCSetup(aggregators=int(public["aggregators"]))


class ERMDeployment(AlgorithmDeployment):
    def prepare(self, config: RunConfig) -> RunConfig:
        cohort = config.options.get("cohort")
        if cohort is None:
            return dataclasses.replace(config, options={**config.options, "cohort": 1})
        if cohort != 1:
            raise ParameterError(explain("--option cohort", cohort, "1 (one process per data party)",
                                         "drop --option cohort, or compare with `mpdp run ... --option cohort=1`"))
        return config

    def plan(self, algorithm: str, config: RunConfig) -> DeployPlan:
        method = _method(algorithm)
        rs = RunSettings.of(config.options)
        train = config.train
        indices = party_indices(config)
        m = len(indices)
        names, setup = _names({"m": m, "aggregators": rs.aggregators})
        public = {"method": method, "task": train.task, "epsilon": config.epsilon, "delta": config.delta,
                  "T": rs.T, "eta": rs.eta, "lam": rs.lam, "accountant": rs.accountant,
                  "aggregators": rs.aggregators, "record": None if rs.record is None else list(rs.record),
                  "m": m, "d": train.d + 1, "n_min": int(min(len(i) for i in indices)),
                  "row_norm_bound": float(train.row_norm_bound), "schema": schema_of(train)}
        data: dict[str, PartyData | None] = {}
        for name, idx in zip(names, indices, strict=True):
            data[name] = PartyData(name, np.ascontiguousarray(train.X[idx]), train.feature_names,
                                   np.ascontiguousarray(train.y[idx]))
        parties = _parties(method, names, setup)
        data.update({p: None for p in parties if p not in data})
        return DeployPlan(parties, public, data, ("algorithm", method), labels=frozenset(names))

    def cost(self, public: Mapping[str, Any], party: str) -> PrivacyCost | None:
        holdings = public["holdings"].get(party)
        if holdings is None:
            return None
        n, n_min, d = int(holdings["rows"]), int(public["n_min"]), int(public["d"])
        eps = float(public["epsilon"])
        if public["method"] == "local-gradp":
            cal = local_gradp_calibration(_problem(public), n, d, _settings(public))
            return PrivacyCost(epsilon=cal.epsilon, delta=float(public["delta"]), mechanism="gaussian")
        if public["method"] in _LOCAL:
            return PrivacyCost(epsilon=eps, mechanism="laplace")
        if public["method"] == "mpc-gradp":
            _, setup = _names(public)
            calibration = calibrate_gradient_noise(gradient_sensitivity(_problem(public).G, n_min), d,
                                                   _settings(public), grid_bits=setup.fmt.frac_bits)
            return PrivacyCost(epsilon=calibration.epsilon_for(gradient_sensitivity(_problem(public).G, n), d),
                               delta=float(public["delta"]), mechanism="gaussian")
        return PrivacyCost(epsilon=eps * n_min / n, delta=d * MPC_LAPLACE_TV, mechanism="laplace")

    def run_party(self, ctx: PartyContext) -> None:
        public = ctx.public
        problem = _problem(public)
        names, setup = _names(public)
        d, m, method = int(public["d"]), int(public["m"]), str(public["method"])
        gradp = method == "mpc-gradp"
        parties = _parties(method, names, setup)
        spec = setup.spec_for(dict.fromkeys(names, 1), d, problem.G if gradp else problem.G / problem.lam)
        role: Any
        group = self._group(ctx, names) if ctx.name in names else None
        if method in _LOCAL:
            role = self._local_role(ctx, problem, group, names)
        elif group is not None:
            role = (gradp_party_role(problem, spec, group, _settings(public)) if gradp
                    else outp_party_role(problem, spec, group))
        elif ctx.name == DEALER:
            role = TrustedDealer(DEALER, parties=setup.names)
        elif gradp:
            settings = _settings(public)
            settings.check_step(problem)
            calibration = calibrate_gradient_noise(gradient_sensitivity(problem.G, int(public["n_min"])), d,
                                                   settings, grid_bits=setup.fmt.frac_bits)
            role = gradp_aggregator_role(problem, spec, setup, InMPCNoise("gaussian", calibration.sigma), settings,
                                         m, names)
        else:
            scale = output_noise_scale(method, problem, m, int(public["n_min"]), d, float(public["epsilon"]), setup)
            role = outp_aggregator_role(spec, scale, names)
        ctx.session.run(role, ctx.root, parties)

    @staticmethod
    def _group(ctx: PartyContext, names: list[str]) -> PartyGroup:
        public = ctx.public
        if ctx.data is None or ctx.data.y is None:
            raise ParameterError(explain(f"data of {ctx.name}", None, "its rows and labels", "give it its data file"))
        X = erm.add_intercept(ctx.data.X / float(public["row_norm_bound"]))  # the public unit-ball map
        y = erm.to_pm1(ctx.data.y) if public["task"] == "classification" else ctx.data.y.astype(np.float64)
        erm.require_unit_ball(X, y, name=f"records of {ctx.name}")
        return PartyGroup(first=names.index(ctx.name), X=X[None], y=y[None])

    @staticmethod
    def _local_role(ctx: PartyContext, problem: ERMProblem, group: PartyGroup | None, names: list[str]) -> Any:
        public = ctx.public
        d, m, method = int(public["d"]), int(public["m"]), str(public["method"])
        if method == "local-gradp":
            settings = _settings(public)
            settings.check_step(problem)
            if group is None:
                return local_gradp_server(names, m, d, settings)
            return local_gradp_party_role(problem, group, local_gradp_calibration(problem, group.records, d, settings),
                                          settings)
        if group is None:
            return average_at_server(names, m, "release")
        return one_shot_party_role(group, one_shot_rows(method, problem, float(public["epsilon"]), d))

    def decode(self, party: str, wire: Any, public: Mapping[str, Any]) -> Any:
        if public["method"] in _GRADIENT and party.startswith("party") and isinstance(wire, list):
            return tuple(wire)
        return wire
