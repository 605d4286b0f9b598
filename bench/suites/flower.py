"""Suite ``flower``: mpdp's horizontal algorithms on Flower (extra ``flower``; skipped without ``flwr``).

Rows, for ``mpc-gradp`` (two Flower message rounds per gradient step) and ``ofaa`` (two per averaging round):

* ``mpc-gradp supernodes N vs plain Flower``: one federation (a SuperLink and N client SuperNodes plus two
  aggregator SuperNodes, each its own OS process on 127.0.0.1 over HTTPS, :class:`mpdp.flower.launcher.Federation`)
  runs mpdp's MPC Grad P app and a plain Flower app that exchanges the same messages (:mod:`bench.flower_plain`:
  every client, then both aggregators, with mpdp's payload sizes; only ``flwr`` imported) in turn, ``pairs``
  times (``MPDP_BENCH_FLOWER_PAIRS``, default 1), on Adult (N = 20, quick 4). ``seconds`` is mpdp's mean time of
  one algorithm round as the hub sees it (send, wait for every reply, both message rounds), the baseline the
  plain app's; their ratio is mpdp's overhead on Flower. The note has each run's rounds.
* ``... in-process N``: the same apps' code with every ClientApp called in this process
  (:class:`mpdp.flower.inprocess.InProcessGrid`): what the apps cost without Flower's processes and polling,
  at N in {20, 200, 1,000} (quick: {20, 100}); the note of the largest fits the exponent ``b`` of
  ``seconds ~ N^b``.

* ``mpc-gradp simulation N``: Flower's simulation engine (``flwr.simulation.run_simulation``, Ray backend, extra
  ``flwr[simulation]``; the row is skipped without Ray) with N virtual clients, one gradient step on a synthetic
  logistic task (d = 5): the hub's seconds for the round. Its virtual nodes carry ``partition-id`` node
  configs; a wrapper ClientApp hands each the node config :func:`mpdp.flower.plans.plan_run` wrote for it.
  N in {1,000, 10,000} (quick: 200); ``MPDP_BENCH_FLOWER_SIM`` overrides, e.g. ``1000``.

``MPDP_BENCH_FLOWER_PARTS`` picks the parts (default ``plain,inprocess,simulation``). The machine is shared: every
row's note records ``os.getloadavg()`` at its start.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path
from tempfile import TemporaryDirectory, mkdtemp
from typing import Any

import numpy as np

from bench.harness import BenchResult
from mpdp.datasets import load_adult, train_test_split
from mpdp.errors import MpdpError
from mpdp.learning.spec.run import RunConfig
from mpdp.randomness import RandomSource

SEED = 11


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def _config(algorithm: str, parties: int, rows: int) -> RunConfig:
    rng = RandomSource.seeded(SEED)
    data = load_adult()
    if rows < data.n:
        data, _ = train_test_split(data, 1 - rows / data.n, rng=rng.spawn("subsample"))
    train, test = train_test_split(data, 0.2, rng=rng.spawn("split"))
    options: dict[str, Any] = {"T": 2} if algorithm == "mpc-gradp" else {"max_rounds": 2}
    return RunConfig(train=train, test=test, parties=parties, epsilon=1.0,
                     delta=1e-5 if algorithm == "mpc-gradp" else 0.0, rng=rng.spawn("algorithm"), options=options)


def _tree_cpu() -> float:
    """CPU seconds of this process's descendants so far, ended children included once reaped (``/proc``; nan
    elsewhere): a Flower run's ClientApp and ServerApp processes are reaped by their SuperExec."""
    from mpdp.runtime.guard import descendants

    if not Path("/proc").is_dir():
        return math.nan
    ticks = 0
    for pid in descendants([os.getpid()]):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _versus_plain(parties: int, rows: int, pairs: int) -> BenchResult:
    from mpdp.flower.launcher import Federation, prepared, write_app
    from mpdp.flower.plans import plan_run

    name = f"mpc-gradp supernodes {parties} vs plain Flower"
    config = prepared("mpc-gradp", _config("mpc-gradp", parties, rows))
    root = Path(mkdtemp(prefix="mpdp-bench-flower-"))
    repo = str(Path(__file__).resolve().parents[2])  # the ClientApp processes import bench.flower_plain
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    plan = plan_run("mpc-gradp", config, root, seed=SEED, round_timeout=600.0, connect_timeout=600.0)
    nodes = {n: {**c, "epsilon": 1e6, "delta": 0.5} if c["role"] == "client" else c for n, c in plan.nodes.items()}
    mpdp_app = write_app(root / "mpdp-app", "mpc-gradp")
    plain_app = write_app(root / "plain-app", "plain", module="bench.flower_plain")
    load = _load()
    ours: list[float] = []
    theirs: list[float] = []
    cpu = {"mpdp": 0.0, "plain": 0.0}
    try:
        with Federation(nodes, root, tls=True, connect_timeout=600.0, limit=3600.0 * pairs) as federation:
            for pair in range(pairs):
                before = _tree_cpu()
                out = federation.submit(mpdp_app, {**plan.job, "output": str(root / f"mpdp-{pair}.json")})
                cpu["mpdp"] += _tree_cpu() - before
                count = len(out["rounds"])
                ours += [float(r["seconds"]) for r in out["rounds"]]
                sizes = {p: runs[0]["traffic"] for p, runs in out["runs"].items() if p != "server"}
                job = {"clients": plan.job["clients"], "aggregators": plan.job["aggregators"], "rounds": count,
                       "down": {p: t["bytes_received"] // count for p, t in sizes.items()},
                       "up": {p: t["bytes_sent"] // count for p, t in sizes.items()},
                       "round_timeout": 600.0, "connect_timeout": 600.0, "output": str(root / f"plain-{pair}.json")}
                before = _tree_cpu()
                theirs += [float(r["seconds"]) for r in federation.submit(plain_app, job)["rounds"]]
                cpu["plain"] += _tree_cpu() - before
    except MpdpError as exc:  # a failed launch is a row, with its logs kept
        return BenchResult(name, 1, math.nan, note=f"{load}; failed: {type(exc).__name__}: {str(exc)[:300]}; "
                                                   f"logs in {root}")
    shutil.rmtree(root, ignore_errors=True)
    note = (f"{load} -> {_load()}; per-round seconds, mpdp {[round(v, 1) for v in ours]}, plain "
            f"{[round(v, 1) for v in theirs]} (runs alternate, mpdp first), mpdp / plain "
            f"{np.mean(ours) / np.mean(theirs):.3f}x; CPU seconds of the federation's processes per run (start and "
            f"hello included), mpdp {cpu['mpdp'] / pairs:.0f}, plain {cpu['plain'] / pairs:.0f}")
    return BenchResult(name, 1, float(np.mean(ours)), baseline="plain Flower app, same messages",
                       baseline_seconds=float(np.mean(theirs)), note=note)


def _in_process(algorithm: str, parties: int, rows: int) -> tuple[BenchResult, float]:
    from mpdp.flower import distributed_erm, ofpa_ofaa
    from mpdp.flower.inprocess import InProcessGrid
    from mpdp.flower.plans import plan_run

    app = distributed_erm if algorithm == "mpc-gradp" else ofpa_ofaa
    config = _config(algorithm, parties, rows)
    load = _load()
    with TemporaryDirectory() as tmp:
        plan = plan_run(algorithm, config, Path(tmp), seed=SEED)
        grid = InProcessGrid(app.client_app, {100 + i: c for i, c in enumerate(plan.nodes.values())})
        out = app.run(grid, plan.job)
    rounds = out["rounds"]
    per_round = float(np.mean([r["seconds"] for r in rounds]))
    per_client = float(np.mean(list(out["bytes_per_client"].values()))) / len(rounds)
    return BenchResult(f"{algorithm} in-process {parties}", 1, per_round, bytes=int(per_client),
                       note=f"{load}; the apps' code, every ClientApp called in this process"), per_round


def _sim_client_app() -> Any:
    """A ClientApp for Flower's simulation engine: virtual node ``partition-id = k`` acts as the k-th node of the
    plan named by ``MPDP_BENCH_FLOWER_NODES`` (the apps read role, name and data file from their node config)."""
    import json

    from flwr.app import Context, Message
    from flwr.clientapp import ClientApp

    from mpdp.flower import distributed_erm

    app = ClientApp()

    @app.query()  # type: ignore[untyped-decorator, unused-ignore]
    def query(message: Message, context: Context) -> Message:
        nodes = json.loads(Path(os.environ["MPDP_BENCH_FLOWER_NODES"]).read_text())
        node = nodes[int(context.node_config["partition-id"])]  # type: ignore[call-overload, unused-ignore]
        inner = Context(run_id=context.run_id, node_id=context.node_id, node_config=node, state=context.state,
                        run_config=context.run_config)
        reply: Message = distributed_erm.client_app(message, inner)
        return reply

    del query
    return app


def _sim_server_app() -> Any:
    import json

    from flwr.app import Context
    from flwr.serverapp import Grid, ServerApp

    from mpdp.flower import distributed_erm

    app = ServerApp()

    @app.main()  # type: ignore[untyped-decorator, unused-ignore]
    def main(grid: Grid, context: Context) -> None:
        job = json.loads(Path(os.environ["MPDP_BENCH_FLOWER_JOB"]).read_text())
        Path(job["output"]).write_text(json.dumps(distributed_erm.run(grid, job)))

    del main
    return app


def _simulation(clients: int) -> BenchResult:
    import json

    from mpdp.datasets.synthetic import logistic_with_optimum
    from mpdp.flower.plans import plan_run

    try:
        import ray  # noqa: F401
        from flwr.simulation import run_simulation
    except ImportError:
        return BenchResult(f"mpc-gradp simulation {clients} (skipped: no ray)", 1, math.nan,
                           note="pip install 'flwr[simulation]'")
    data = logistic_with_optimum(max(2000, 3 * clients), 5, rng=RandomSource.seeded(1)).data
    train, test = train_test_split(data, 0.25, rng=RandomSource.seeded(2))
    config = RunConfig(train=train, test=test, parties=clients, epsilon=1.0, delta=1e-5,
                       rng=RandomSource.seeded(SEED).spawn("algorithm"), options={"T": 1})
    load = _load()
    with TemporaryDirectory() as tmp:
        root = Path(tmp)
        plan = plan_run("mpc-gradp", config, root, round_timeout=3600.0, connect_timeout=600.0)
        nodes = list(plan.nodes.values())
        (root / "nodes.json").write_text(json.dumps(nodes))
        os.environ["MPDP_BENCH_FLOWER_NODES"] = str(root / "nodes.json")
        os.environ["MPDP_BENCH_FLOWER_JOB"] = str(root / "job.json")
        start = time.perf_counter()
        run_simulation(_sim_server_app(), _sim_client_app(), num_supernodes=len(nodes),
                       backend_config={"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": 2}})
        wall = time.perf_counter() - start
        out = json.loads((root / "result.json").read_text())
    per_round = float(out["rounds"][0]["seconds"])
    per_client = float(np.mean(list(out["bytes_per_client"].values())))
    return BenchResult(f"mpc-gradp simulation {clients}", 1, per_round, bytes=int(per_client),
                       note=f"{load}; Ray backend; whole simulation {wall:.0f} s (start of run and hello included); "
                            f"survivors {out['rounds'][0]['survivors']}")


def run(quick: bool = False) -> list[BenchResult]:
    try:
        import flwr  # noqa: F401
    except ImportError:
        return [BenchResult("flower (skipped: flwr not installed)", 1, math.nan, note="pip install '.[flower]'")]
    parts = os.environ.get("MPDP_BENCH_FLOWER_PARTS", "plain,inprocess,simulation").split(",")
    results: list[BenchResult] = []
    rows = 3000 if quick else 12000
    if "plain" in parts:
        real = int(os.environ.get("MPDP_BENCH_FLOWER_NODES", "4" if quick else "20"))
        results.append(_versus_plain(real, rows, int(os.environ.get("MPDP_BENCH_FLOWER_PAIRS", "1"))))
    for algorithm in ("mpc-gradp", "ofaa") if "inprocess" in parts else ():
        sizes = (20, 100) if quick else (20, 200, 1000)
        times = []
        for n in sizes:
            row, seconds = _in_process(algorithm, n, max(rows, 20 * n))
            results.append(row)
            times.append(seconds)
        slope = float(np.polyfit(np.log(sizes), np.log(times), 1)[0])
        last = results[-1]
        results[-1] = BenchResult(last.name, last.n, last.seconds, bytes=last.bytes,
                                  note=f"{last.note}; per-round seconds ~ N^{slope:.2f} over N = {list(sizes)}")
    sims = os.environ.get("MPDP_BENCH_FLOWER_SIM", "200" if quick else "1000,10000")
    for n in (int(v) for v in sims.split(",") if v and "simulation" in parts):
        results.append(_simulation(n))
    return results
