"""What every mpdp Flower app shares: the start of a run (who is who), typed failures, the aggregators' keys
and their round-2 step, one ClientApp dispatcher, and the run's result in the deployed parties' form.

A run starts with a ``hello`` round: every node answers with its role and party name from its own node config
(a client adds its record count and feature count, an aggregator a fresh X25519 public key whose private half
stays in the node's Flower state). The hub checks that every expected party answered and that every client's
features match the federation's schema before anything is computed.

The hub's result (:func:`result_of`) is what the parties of the algorithm's deployment return
(:func:`mpdp.learning.spec.memory.encode_runs`): per party its protocol runs, each with its result and its
traffic (:class:`Tally`, every party's bytes and messages through the hub, the hub itself as ``SERVER``), so
the launcher assembles the run's report with the deployment's own ``report``, as every engine does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid

from mpdp.crypto.sealed_box import keypair
from mpdp.errors import MpdpError, ParameterError, ProtocolAbortError, ShapeMismatchError, explain
from mpdp.flower.messages import (
    ERROR_CODE,
    Round,
    error_reply,
    exchange,
    payload_of,
    raise_replied_error,
    reply,
    wait_for_nodes,
)
from mpdp.flower.nodes import client_rows, identity, noise_source
from mpdp.flower.secagg import SERVER, survivors_message
from mpdp.learning.spec.deployment import AlgorithmDeployment
from mpdp.learning.spec.memory import encode_runs
from mpdp.protocols.aggregation import AggregationSpec
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.steps import RunRecord

__all__ = ["Handler", "Tally", "aggregator_key", "check", "client_app_for", "hello", "introduce", "result_of", "serve",
           "survivors"]

Handler = Callable[[Mapping[str, Any], Context], dict[str, Any]]
_KEY_STATE = "mpdp-aggregator"


def hello(context: Context) -> dict[str, Any]:
    """A node's answer to ``hello``."""
    me = identity(context.node_config)
    if me.role == "client":
        X, _ = client_rows(context.node_config)
        return {"role": me.role, "name": me.name, "rows": int(X.shape[0]), "dim": int(X.shape[1])}
    rng = noise_source(context.node_config, ("keys", me.name)) or RandomSource.fresh()
    private, public = keypair(rng)
    context.state[_KEY_STATE] = ConfigRecord({"private": private})
    return {"role": me.role, "name": me.name, "public_key": public}


def aggregator_key(context: Context) -> bytes:
    """The aggregator's private key for this run (made at ``hello``)."""
    record = context.state.get(_KEY_STATE)
    key = record.get("private") if isinstance(record, ConfigRecord) else None
    if not isinstance(key, bytes):
        raise ProtocolAbortError(f"{identity(context.node_config).name} holds no key for this run: it missed the "
                                 "run's start; restart the run")
    return key


def client_app_for(handlers: Mapping[str, Handler]) -> ClientApp:
    """A ClientApp answering ``hello`` and the steps in ``handlers``; typed failures travel back as errors."""
    app = ClientApp()

    @app.query()  # type: ignore[untyped-decorator, unused-ignore]
    def handle(message: Message, context: Context) -> Message:
        try:
            body, _ = payload_of(message)
            step = body.get("step") if isinstance(body, dict) else None
            if step == "hello":
                return reply(message, hello(context))
            handler = handlers.get(str(step))
            if handler is None:
                raise ParameterError(explain("step", step, f"one of {['hello', *handlers]}", "match mpdp versions"))
            return reply(message, handler(body, context))
        except MpdpError as exc:
            return error_reply(message, exc)

    del handle
    return app


def check(result: Round) -> None:
    """Raise a node's typed mpdp failure; a Flower-level failure (its ClientApp died) counts as a dropout."""
    for party, error in sorted(result.failed.items()):
        if error.code == ERROR_CODE:
            raise_replied_error(party, error)


def survivors(spec: AggregationSpec, contributed: Round, *, rng: RandomSource) -> bytes:
    """The survivor list after a contribute round (typed failures raised first); beyond the dropout threshold the
    :class:`ProtocolAbortError` also quotes the Flower errors of the clients that failed without an mpdp error."""
    check(contributed)
    try:
        return survivors_message(spec, list(contributed.replies), rng=rng)
    except ProtocolAbortError as exc:
        reasons = "; ".join(f"{p}: {(e.reason or str(e.code))[:200]}" for p, e in sorted(contributed.failed.items()))
        if reasons:
            raise ProtocolAbortError(f"{exc}. Node errors: {reasons}") from exc
        raise


def serve(grid: Grid, context: Context, run: Callable[[Grid, Mapping[str, Any]], dict[str, Any]]) -> None:
    """A ServerApp's body: run the job named by ``run_config["job"]`` and write its outcome (the result, or the
    failure's type and message) atomically to the job's ``output`` file, where the launcher waits for it."""
    job = json.loads(Path(str(context.run_config["job"])).read_text())
    output = Path(job["output"])
    try:
        record: dict[str, Any] = {"ok": run(grid, job)}
    except Exception as exc:
        record = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        _write(output, record)
        if not isinstance(exc, MpdpError):
            raise
        return
    _write(output, record)


def _write(path: Path, record: Mapping[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record))
    partial.replace(path)


def introduce(grid: Grid, job: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    """Wait for the nodes, ask who they are; ``(party -> node id, party -> hello answer)``."""
    expected = len(job["clients"]) + len(job["aggregators"])
    nodes = wait_for_nodes(grid, expected, timeout=float(job["connect_timeout"]))
    answers = exchange(grid, {str(n): n for n in nodes}, {str(n): {"step": "hello"} for n in nodes},
                       timeout=float(job["round_timeout"]), group="hello")
    check(answers)
    named = {str(r["name"]): int(node) for node, r in answers.replies.items()}
    info = {str(r["name"]): r for r in answers.replies.values()}
    missing = [p for p in [*job["clients"], *job["aggregators"]] if p not in named]
    if missing:
        raise ProtocolAbortError(f"parties {missing} did not answer the start of the run (of {len(nodes)} nodes, "
                                 f"{sorted(named)} answered). Fix: check their --node-config names and restart")
    for c in job["clients"]:
        if int(info[c]["dim"]) != int(job["d"]):
            raise ShapeMismatchError(explain(f"{c}'s features", info[c]["dim"], f"{job['d']} columns",
                                             "encode every client's data with the federation's schema"))
    return named, info


class Tally:
    """Every party's traffic through the hub's rounds, as the party counts its own
    (:class:`~mpdp.runtime.comm.PartyTraffic`): the hub's message to a party is one the party received, its
    reply one it sent; each round is two (the message out, the reply back) for every party in it. The hub is
    the party ``SERVER``: it relays every byte."""

    def __init__(self) -> None:
        self.traffic: dict[str, PartyTraffic] = {SERVER: PartyTraffic()}

    def add(self, result: Round) -> None:
        hub = self.traffic[SERVER]
        for party, size in result.bytes_sent.items():
            mine = self.traffic.setdefault(party, PartyTraffic())
            mine.bytes_received += size
            mine.messages_received += 1
            mine.rounds += 2
            hub.bytes_sent += size
            hub.messages_sent += 1
        for party, size in result.bytes_received.items():
            mine = self.traffic.setdefault(party, PartyTraffic())
            mine.bytes_sent += size
            mine.messages_sent += 1
            hub.bytes_received += size
            hub.messages_received += 1
        hub.rounds += 2

    def client_bytes(self, clients: Sequence[str]) -> dict[str, int]:
        """Each client's bytes, sent and received."""
        return {c: self.traffic[c].bytes_sent + self.traffic[c].bytes_received if c in self.traffic else 0
                for c in clients}


def result_of(deployment: AlgorithmDeployment, tally: Tally, results: Mapping[str, Any], seconds: float, *,
              rounds: Sequence[Mapping[str, Any]], handed: Mapping[str, Sequence[Any]] | None = None,
              **extra: Any) -> dict[str, Any]:
    """The hub's result: every party's runs in the deployment's wire form (one counted run with its traffic and
    ``results[party]``, then one uncounted run per value in ``handed[party]``: what a deployed party hands out
    beyond the algorithm's messages), the hub's ``rounds`` (survivors, dropouts, seconds) and ``extra``."""
    names = tuple(tally.traffic)
    runs = {}
    for party in names:
        records = [RunRecord(names, results.get(party), tally.traffic[party], seconds)]
        records += [RunRecord(names, value, PartyTraffic(), 0.0, counted=False)
                    for value in (handed or {}).get(party, ())]
        runs[party] = encode_runs(deployment, party, records)
    return {"runs": runs, "rounds": list(rounds), "seconds": seconds, **extra}
