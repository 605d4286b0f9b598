"""The Flower apps' own code in one process: a :class:`~flwr.serverapp.Grid` that hands each message to the
ClientApp of its node directly (tests and benchmarks of the apps' logic; not Flower's simulation engine).

Every node keeps its own :class:`~flwr.app.Context` (node config, state) across rounds, as a SuperNode does; a
node listed in ``dead`` never replies (a client that crashed: the hub's round deadline passes without it), and
a node whose config has ``crash_at = t`` joins ``dead`` at round ``t``. The
messages are the same Flower messages with the same mpdp payloads as on the deployment engine, so the byte
counts are the apps' payload bytes, without HTTP and process start-up.

:func:`run_in_process` is :func:`mpdp.flower.launcher.launch` with the SuperLink and SuperNodes replaced by an
:class:`InProcessGrid`: the same plan, the same apps, the same report assembly.
"""

from __future__ import annotations

import importlib
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

from mpdp.flower.launcher import FlowerRun, flower_run, prepared
from mpdp.flower.plans import app_module, plan_run
from mpdp.learning.spec.run import RunConfig

__all__ = ["InProcessGrid", "run_in_process"]


class InProcessGrid(Grid):  # type: ignore[misc, unused-ignore]
    """``nodes[node_id] = node_config``; ``dead`` holds node ids that never reply."""

    def __init__(self, client_app: ClientApp, nodes: Mapping[int, Mapping[str, Any]], *, run_id: int = 1) -> None:
        TaskIdentity.run_id = run_id
        TaskIdentity.task_id = 1
        TaskIdentity.node_id = 0
        self._app = client_app
        self._contexts = {node: Context(run_id=run_id, node_id=node, node_config=dict(config), state=RecordDict(),
                                        run_config={}) for node, config in nodes.items()}
        self.dead: set[int] = set()
        self.seconds = 0.0

    def set_run(self, run: Any) -> None:
        del run

    @property
    def run(self) -> Any:
        return None

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:
        return Message(content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id, ttl=ttl)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        raise NotImplementedError("InProcessGrid only supports send_and_receive")

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        raise NotImplementedError("InProcessGrid only supports send_and_receive")

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        """Each message's reply from its node's ClientApp, run here; dead nodes' replies never come."""
        start = time.perf_counter()
        out = []
        for m in messages:
            node = m.metadata.dst_node_id
            crash_at = self._contexts[node].node_config.get("crash_at")
            if crash_at is not None and m.metadata.group_id == f"contribute-{crash_at}":
                self.dead.add(node)  # what the ClientApp's fault injection does in a real process: die, no reply
            if node not in self.dead:
                out.append(self._app(m, self._contexts[node]))
        self.seconds += time.perf_counter() - start
        return out


def run_in_process(algorithm: str, config: RunConfig, *, seed: int | None = None, max_dropouts: int = 0,
                   aggregators: int = 2, crash: Mapping[str, int] | None = None,
                   workdir: str | Path | None = None, **_: Any) -> FlowerRun:
    """Run ``algorithm``'s Flower app with every node in this process (module docstring); the keywords are
    :func:`~mpdp.flower.launcher.launch`'s (those about processes and TLS are ignored)."""
    start = time.perf_counter()
    config = prepared(algorithm, config)
    app = importlib.import_module(app_module(algorithm))
    with tempfile.TemporaryDirectory(prefix="mpdp-flower-") as tmp:
        plan = plan_run(algorithm, config, Path(workdir or tmp), seed=seed, max_dropouts=max_dropouts,
                        aggregators=aggregators, crash=crash)
        grid = InProcessGrid(app.client_app, {100 + i: node for i, node in enumerate(plan.nodes.values())})
        outcome = app.run(grid, plan.job)
    return flower_run(algorithm, config, outcome, time.perf_counter() - start)
