"""A Flower run laid out from ``mpdp run``'s inputs, and its result as ``mpdp run``'s JSON record.

:func:`plan_run` splits and prepares the data exactly as the in-process algorithm does (same split, same party
order, same encoding), writes each client's rows to its own file, and writes the hub's job (the public
parameters). :func:`result_record` turns the hub's result into the record ``mpdp run --json`` prints, with
``"engine": "flower"``. Neither imports ``flwr``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpdp.errors import ParameterError, explain
from mpdp.flower.nodes import write_rows
from mpdp.learning.registry import algorithms, get_algorithm
from mpdp.learning.spec.run import RunConfig

__all__ = ["RunPlan", "app_module", "check_algorithm", "flower_algorithms", "message_rounds", "plan_run",
           "result_record"]


@dataclass(frozen=True)
class RunPlan:
    """A Flower run laid out: the hub's job, every node's config (by party name), what scoring needs."""

    job: dict[str, Any]
    nodes: dict[str, dict[str, Any]]
    scoring: Any


def flower_algorithms() -> tuple[str, ...]:
    """The registered algorithms whose spec names a Flower app."""
    return tuple(name for name, spec in algorithms().items() if spec.flower is not None)


def message_rounds(job: Mapping[str, Any]) -> int:
    """At most how many message rounds the hub runs for ``job``: the hello, then two per training round
    (contributions, then the aggregators' shares), the training rounds bounded by the job's ``T`` or
    ``max_rounds`` (an upper bound where a method stops sooner); each lasts at most the job's round timeout."""
    rounds = job.get("T", job.get("max_rounds", 1))
    return 1 + 2 * max(1, int(rounds) if isinstance(rounds, int | float) else 1)


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
             aggregators: int = 2, round_timeout: float = 60.0, connect_timeout: float = 120.0,
             crash: Mapping[str, int] | None = None) -> RunPlan:
    """Lay the run out under ``root``: clients ``party0 ..`` in ``mpdp run``'s party order, aggregators ``agg0 ..``.

    ``seed`` goes to the nodes that draw noise (experiments only: their noise then equals ``mpdp run --seed``'s);
    ``crash`` (tests) makes a client's ClientApp process die at the given round.
    """
    check_algorithm(algorithm)
    config = get_algorithm(algorithm).configure(config)
    root.mkdir(parents=True, exist_ok=True)
    if _is_erm(algorithm):
        rows, public, scoring = _erm_layout(config)
    else:
        rows, public, scoring = _ofpa_layout(algorithm, config)
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
    return RunPlan(job, nodes, scoring)


def _erm_layout(config: RunConfig) -> tuple[list[tuple[Any, Any]], dict[str, Any], Any]:
    from mpdp.learning.distributed_erm.experiments import equal_parts, prepare

    opts = config.options
    prepared = prepare(config.train, config.test, lam=float(opts.get("lam", 1e-3)))
    if config.row_partition is not None:  # as mpdp run: the smaller parties first
        indices = sorted((np.asarray(i, dtype=np.int64) for i in config.row_partition), key=len)
    else:
        indices = equal_parts(config.train, config.parties, rng=config.rng.spawn("rows"))
    T = int(opts.get("T", 100))
    record = [int(t) for t in np.unique(np.rint(np.geomspace(1, T, min(T, 60))))]
    public = {"task": config.train.task, "lam": float(opts.get("lam", 1e-3)), "d": int(prepared.X.shape[1]), "T": T,
              "eta": float(opts.get("eta", 1.0)), "delta": config.delta,
              "accountant": str(opts.get("accountant", "zcdp")), "frac_bits": 24, "stop_after": None,
              "record": record}
    return [(prepared.X[i], prepared.y[i]) for i in indices], public, prepared


def _ofpa_layout(algorithm: str, config: RunConfig) -> tuple[list[tuple[Any, Any]], dict[str, Any], Any]:
    from mpdp.learning.ofpa_ofaa.deployment import run_settings
    from mpdp.learning.ofpa_ofaa.model import prepare_parties

    settings = run_settings(config)
    parties = config.party_data()
    prepared = prepare_parties(parties)
    public = {"settings": config.settings.to_public() if config.settings is not None else {},
              "epsilon": config.epsilon, "method": settings.method, "bound": settings.bound, "d": prepared.dim,
              "fixed": prepared.rows[0].fixed.tolist(), "row_bound": prepared.row_bound, "row_l1": prepared.row_l1,
              "intercept": prepared.intercept, "delta": 0.0}
    return [(r.X, r.y) for r in prepared.rows], public, (parties, prepared)


def result_record(config: RunConfig, plan: RunPlan, out: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """``mpdp run``'s JSON record of the hub's result ``out``, plus ``engine``, model, rounds and bytes per client."""
    job = plan.job
    per_client = list(out["bytes_per_client"].values())
    record: dict[str, Any] = {
        "engine": "flower", "dataset": config.train.name, "parties": len(job["clients"]),
        "epsilon": config.epsilon, "delta": config.delta, "seconds": seconds, "theta": out["theta"],
        "rounds": out["rounds"], "party_rows": out["party_rows"],
        "bytes_per_client": float(np.mean(per_client)) if per_client else 0.0,
        "communication": {"bytes": int(sum(per_client)), "messages": 2 * len(out["rounds"]) * len(per_client),
                          "rounds": 2 * len(out["rounds"]) + 1},
        "flower_seconds": out["seconds"], "options": dict(config.options), "train_rows": config.train.n,
        "test_rows": config.test.n, "curves": [],
    }
    if _is_erm(str(job["algorithm"])):
        record.update(_erm_record(config, plan.scoring, job, out))
    else:
        record.update(_ofpa_record(config, plan.scoring, job, out))
    return record


def _erm_record(config: RunConfig, prepared: Any, job: Mapping[str, Any], out: Mapping[str, Any]) -> dict[str, Any]:
    from mpdp.learning.distributed_erm.experiments import config_name

    ev = prepared.evaluator
    score = ev.score(np.asarray(out["theta"], dtype=np.float64))
    xs = [float(t) for t in out["recorded"]]
    iterates = [np.asarray(v) for v in out["iterates"]]
    curves = [{"name": "optimality gap", "x": xs, "y": [ev.optimality_gap(t) for t in iterates], "x_label": "T",
               "y_label": "J(theta) - J(theta*)"},
              {"name": f"test {ev.metric_name}", "x": xs, "y": [ev.test_metric(t) for t in iterates], "x_label": "T",
               "y_label": ev.metric_name}] if xs else []
    if "calibration" in out:  # MPC Grad P: T Gaussian releases
        cal = out["calibration"]
        spent = cal["epsilon_zcdp"] if cal["accountant"] == "zcdp" else cal["epsilon_exact"]
        delta, privacy, T = config.delta, cal, job["T"]
    else:  # MPC Out P: one pure-DP Laplace release
        spent, delta, privacy, T = out["privacy"]["epsilon"], 0.0, out["privacy"], None
    return {"algorithm": config_name(str(job["algorithm"]), config.train.task),
            "epsilon_spent": spent, "delta_spent": delta, "per_party_epsilon": None,
            "metric": {"name": ev.metric_name, "value": score.test_metric},
            "non_private": {"name": ev.metric_name, "value": ev.metric_star}, "curves": curves,
            "optimality_gap": score.optimality_gap, "relative_accuracy_loss": score.relative_accuracy_loss,
            "n_min": out["n_min"], "T": T, "privacy": privacy, "iterates": out["iterates"]}


def _ofpa_record(config: RunConfig, scoring: Any, job: Mapping[str, Any], out: Mapping[str, Any]) -> dict[str, Any]:
    from mpdp.learning.erm import misclassification, to_pm1
    from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, fit, prepare_rows

    parties, prepared = scoring
    Xt = prepare_rows(config.test.X, parties[0].row_norm_bound)
    yt = to_pm1(config.test.y)
    baseline = fit(prepared, OfpaOfaaSettings(method="none", epsilon=math.inf), rng=config.rng.spawn("np"))
    spent = float(out["epsilon_spent"])
    return {"algorithm": job["algorithm"], "delta": 0.0, "epsilon_spent": spent, "delta_spent": 0.0,
            "per_party_epsilon": dict.fromkeys(job["clients"], spent),
            "metric": {"name": "misclassification",
                       "value": misclassification(np.asarray(out["theta"], dtype=np.float64), Xt, yt)},
            "non_private": {"name": "misclassification", "value": baseline.misclassification(Xt, config.test.y)},
            "converged": out["converged"], "noise": job["noise"], "variant": job["method"]}
