"""A plain Flower app that exchanges the messages of mpdp's Flower rounds and does nothing else: the baseline of
``python -m bench flower``'s comparison rows.

It imports only ``flwr`` (no mpdp, no numpy work), so its ClientApp process costs what Flower's own imports cost.
The job (JSON, ``run_config["job"]``) names the clients and aggregators, how many rounds, and for every party
the bytes of the message the hub sends it and of its reply in each round (``down`` and ``up``, taken from an
mpdp run's traffic). Each round is two message rounds, as in mpdp's apps: the hub sends every client its
message and waits for the replies, then every aggregator. The hub starts with a ``hello`` round (every node
says its name from its node config, as mpdp's nodes do) and writes ``{"ok": {"rounds": [{"seconds": ..}]}}``
to the job's ``output``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

client_app = ClientApp()
server_app = ServerApp()


@client_app.query()  # type: ignore[untyped-decorator, unused-ignore]
def _answer(message: Message, context: Context) -> Message:
    record = message.content["plain"]
    size = int(record["reply"])  # type: ignore[arg-type, call-overload, unused-ignore]
    body: dict[str, Any] = {"payload": b"\0" * size, "name": str(context.node_config["name"])}
    return Message(RecordDict({"plain": ConfigRecord(body)}), reply_to=message)


def _exchange(grid: Grid, nodes: dict[str, int], down: dict[str, int], up: dict[str, int], group: str,
              timeout: float) -> tuple[dict[int, str], float]:
    start = time.perf_counter()
    messages = [Message(RecordDict({"plain": ConfigRecord({"payload": b"\0" * down.get(p, 0),
                                                           "reply": up.get(p, 0)})}),
                        dst_node_id=node, message_type="query", group_id=group) for p, node in nodes.items()]
    replies = {m.metadata.src_node_id: str(m.content["plain"]["name"]) for m in  # type: ignore[index, unused-ignore]
               grid.send_and_receive(messages, timeout=timeout) if not m.has_error()}
    return replies, time.perf_counter() - start


@server_app.main()  # type: ignore[untyped-decorator, unused-ignore]
def _main(grid: Grid, context: Context) -> None:
    job = json.loads(Path(str(context.run_config["job"])).read_text())
    expected = len(job["clients"]) + len(job["aggregators"])
    deadline = time.monotonic() + float(job["connect_timeout"])
    while len(nodes := sorted(grid.get_node_ids())) < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    timeout = float(job["round_timeout"])
    named, _ = _exchange(grid, {str(n): n for n in nodes}, {}, {}, "hello", timeout)
    by_name = {name: node for node, name in named.items()}
    rounds = []
    for t in range(1, int(job["rounds"]) + 1):
        _, first = _exchange(grid, {c: by_name[c] for c in job["clients"]}, job["down"], job["up"],
                             f"contribute-{t}", timeout)
        _, second = _exchange(grid, {a: by_name[a] for a in job["aggregators"]}, job["down"], job["up"],
                              f"aggregate-{t}", timeout)
        rounds.append({"t": t, "seconds": first + second})
    output = Path(job["output"])
    output.with_suffix(".partial").write_text(json.dumps({"ok": {"rounds": rounds}}))
    output.with_suffix(".partial").replace(output)
