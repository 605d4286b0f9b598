"""A Flower run laid out from ``mpdp run``'s inputs (without importing ``flwr``).

:func:`plan_run` splits and prepares the data exactly as the algorithm's deployment does (same split, same party
order and names, same encoding), writes each client's rows to its own file, and writes the hub's job (the public
parameters). The run's report is not built here: the hub returns the deployed parties' results and the
launcher assembles the report with the deployment's own ``report`` (:mod:`mpdp.flower.launcher`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.deploy.engine import LaunchOptions
from mpdp.errors import ParameterError, explain
from mpdp.flower.nodes import write_rows
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec.run import RunConfig

__all__ = ["RunPlan", "app_module", "check_algorithm", "flower_algorithms", "message_rounds", "plan_run"]


#: the launch defaults every engine shares
_DEFAULTS = LaunchOptions()


@dataclass(frozen=True)
class RunPlan:
    """A Flower run laid out: the hub's job and every node's config (by party name)."""

    job: dict[str, Any]
    nodes: dict[str, dict[str, Any]]


def flower_algorithms() -> tuple[str, ...]:
    """The registered algorithms whose spec names a Flower app."""
    return tuple(name for name, spec in algorithms().items() if spec.flower is not None)


def message_rounds(job: Mapping[str, Any]) -> int:
    """At most how many message rounds the hub runs for ``job``: the hello, then two per training round
    (contributions, then the aggregators' shares), the training rounds bounded by the settings' ``T`` or
    ``max_rounds`` (an upper bound where a method stops sooner); each lasts at most the job's round timeout."""
    settings = job.get("settings")
    found = [v for where in (settings if isinstance(settings, Mapping) else {}, job) for k in ("T", "max_rounds")
             if isinstance(v := where.get(k), int | float) and not isinstance(v, bool)]
    return 1 + 2 * max(1, int(found[0]) if found else 1)


def check_algorithm(algorithm: str) -> None:
    if algorithm not in flower_algorithms():
        raise ParameterError(explain("algorithm", algorithm, f"one of {list(flower_algorithms())}",
                                     "pick an algorithm with a Flower app"))


def app_module(algorithm: str) -> str:
    """The module holding ``algorithm``'s ``server_app`` and ``client_app`` (its spec's Flower hook)."""
    check_algorithm(algorithm)
    hook = get_algorithm(algorithm).flower
    if hook is None:  # pragma: no cover - check_algorithm refused it
        raise ParameterError(explain("algorithm", algorithm, "an algorithm with a Flower app", "pick another"))
    return hook.module


def _is_erm(algorithm: str) -> bool:
    """Paper 003's methods lay their Flower run out alike (one aggregation of gradients or models)."""
    return get_algorithm(algorithm).paper == "003"


def plan_run(algorithm: str, config: RunConfig, root: Path, *, seed: int | None = None, max_dropouts: int = 0,
             aggregators: int = 2, round_timeout: float = _DEFAULTS.timeout,
             connect_timeout: float = _DEFAULTS.connect_timeout, crash: Mapping[str, int] | None = None) -> RunPlan:
    """Lay the run out under ``root``: clients ``party0 ..`` in ``mpdp run``'s party order, aggregators ``agg0 ..``.

    ``seed`` goes to the nodes that draw noise (experiments only: their noise then equals ``mpdp run --seed``'s);
    ``crash`` (tests) makes a client's ClientApp process die at the given round.
    """
    check_algorithm(algorithm)
    config = get_algorithm(algorithm).configure(config)
    root.mkdir(parents=True, exist_ok=True)
    if _is_erm(algorithm):
        rows, public = _erm_layout(config)
        aggregators = int(public["settings"]["aggregators"])  # the spec's option
    else:
        rows, public = _ofpa_layout(config)
    clients = [f"party{j}" for j in range(len(rows))]
    aggs = [f"agg{i}" for i in range(aggregators)]
    nodes: dict[str, dict[str, Any]] = {}
    for name in aggs:
        nodes[name] = {"role": "aggregator", "name": name}
    for name, (X, y) in zip(clients, rows, strict=True):
        write_rows(root / f"{name}.npz", X, y)
        nodes[name] = {"role": "client", "name": name, "data": str(root / f"{name}.npz"),
                       "ledger": str(root / f"{name}.ledger.json")}
        if crash and name in crash:
            nodes[name]["crash_at"] = int(crash[name])
    noisy = aggs if _is_erm(algorithm) else clients
    if seed is not None:
        for name in noisy:
            nodes[name]["seed"] = int(seed)
    job = {**public, "algorithm": algorithm, "epsilon": config.epsilon, "aggregators": aggs, "clients": clients,
           "max_dropouts": max_dropouts, "round_timeout": round_timeout, "connect_timeout": connect_timeout,
           "output": str(root / "result.json")}
    (root / "job.json").write_text(json.dumps(job))
    return RunPlan(job, nodes)


def _erm_layout(config: RunConfig) -> tuple[list[tuple[Any, Any]], dict[str, Any]]:
    from mpdp.learning.distributed_erm.common import curve_iterations
    from mpdp.learning.distributed_erm.deployment import party_indices, run_settings
    from mpdp.learning.distributed_erm.mpc import MPCSetup
    from mpdp.learning.distributed_erm.problem import prepare
    from mpdp.learning.distributed_erm.spec import GradientSettings, method_of

    settings = run_settings(config)
    prepared = prepare(config.train, config.test, lam=settings.lam)
    indices = party_indices(config)  # as mpdp run: the smaller parties first
    record = list(curve_iterations(settings.T)) if isinstance(settings, GradientSettings) else []
    public = {"method": method_of(config.algorithm).value, "settings": settings.to_public(), "task": config.train.task,
              "d": int(prepared.X.shape[1]), "delta": config.delta, "frac_bits": MPCSetup().frac_bits,
              "stop_after": None, "record": record}
    return [(prepared.X[i], prepared.y[i]) for i in indices], public


def _ofpa_layout(config: RunConfig) -> tuple[list[tuple[Any, Any]], dict[str, Any]]:
    from mpdp.learning.ofpa_ofaa.deployment import run_settings
    from mpdp.learning.ofpa_ofaa.model import prepare_parties

    settings = run_settings(config)
    parties = config.party_data()
    prepared = prepare_parties(parties)
    public = {"settings": config.settings.to_public() if config.settings is not None else {},
              "epsilon": config.epsilon, "method": settings.method, "bound": settings.bound, "d": prepared.dim,
              "fixed": prepared.rows[0].fixed.tolist(), "row_bound": prepared.row_bound, "row_l1": prepared.row_l1,
              "intercept": prepared.intercept, "delta": 0.0}
    return [(r.X, r.y) for r in prepared.rows], public
