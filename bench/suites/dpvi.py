"""Suite ``dpvi``: one DP-SGD iteration of paper 002's DPVI, under MPC against the non-partitioned float64 step.

Work: Adult's training part (a synthetic stand-in when Adult is unavailable), paper 002's mixture with K = 10
components, a minibatch of 100 records, clipping and discrete Gaussian noise. Two data parties (demographic vs
financial attributes, the income label with the financial party) and a dealer exchange real additive shares:
Z_2^128 (f = 48) up to the normalisation of ``S_i``, then the Z_2^64 tail (f = 24) that
:func:`~mpdp.protocols.mixture_gradient.plan_step` chooses while it costs at most ``TAIL_MAX_CLIP_LOSS`` (2%) of
the clipping bound, and Z_2^128 for the gradient map and the release once the map's constants outgrow the tail.
Every timed iteration draws a fresh posterior sample ``theta`` (the same sequence for both computations), so the
public bounds and the correlation shapes change between iterations, as in training. Two warm-up iterations come
first; each iteration requests the next one's correlations from the dealer at its end.

Rows (``seconds``: party 0's median wall time per iteration over the timed iterations):

* ``mpc, 2 parties``: party threads over the in-memory transport, pinned to one CPU (:func:`_one_core`); the note
  adds the process CPU time, party 0's bytes and rounds per iteration.
* ``greenlets``: the parties as greenlets of one thread switched at receives (``run_protocol(...,
  cooperative=True)``), as :class:`~mpdp.learning.dpvi.model.VerticalDPVI` runs them.
* ``greenlets, dealer in its own process``: the dealer forked (``forked=("dealer",)``), computing the next
  iteration's correlations on the other core while the parties compute this one.
* ``cpu (party 0)``: party 0's thread CPU time against the float step's in the same thread.
* ``online phase`` (threads, greenlets, processes): each timed iteration preceded, untimed, by its offline phase
  (its recorded correlations requested, the dealer's corrections received): the dealer is idle while timed.
* ``parties as processes``: every party and the dealer in its own forked process (``run_protocol(...,
  processes=True)``, socketpairs): the wall time is the slowest party's, not the sum of all parties' work.
* ``cpu (party 0, tail in Z_2^128)``: as ``cpu``, with ``GradientPrecision(tail_fmt=None)``, plan_step's fallback
  once the Z_2^64 tail would cost more than ``TAIL_MAX_CLIP_LOSS`` of the clipping bound.
* ``online phase, threads, FSS comparisons``: the online threads row with ``VerticalSetup(comparisons="fss")``:
  the comparisons take one round each with the dealer's DCF keys (:mod:`mpdp.protocols.mpc.fss_compare`).
* ``online phase, threads, masked wires`` and ``cpu (party 0, masked wires)``: the step on masked wires
  (``VerticalSetup(functions="masked")``, :mod:`mpdp.protocols.mixture_gradient.masked_step`: 10 online rounds).
* ``training``: :class:`~mpdp.learning.dpvi.model.VerticalDPVI` ``.fit`` against :class:`~mpdp.learning.dpvi.model.DPVI`
  ``.fit``, 3 epochs of Adult (Poisson minibatch sizes, posterior updates): mean seconds per step of each trace;
  on masked wires (VerticalDPVI's default) and with ``functions="circuit"``.

Every row but the masked and training ones runs the circuit step (``VerticalSetup(functions="circuit")``).

Baseline: the same iteration non-partitioned (:class:`mpdp.learning.dpvi.training.FloatStep`: per-example
gradients, clipping, grid Gaussian noise) on the same thetas, timed inside each row: party 0 runs it in blocks of
``FLOAT_BLOCK`` after as many MPC iterations, and each row's ratio (wall, or thread CPU for the ``cpu`` rows) is
against the median of those blocks, since the host's speed drifts by tens of percent between seconds. The first
row's note also gives the float step timed alone before the rows.

Network model (every row): ``rounds`` are the step's online rounds (the transport's clock over one step whose
correlations were fetched before it, after a synchronising opening), counted in the online threads rows (the FSS
row its own); ``bytes`` party 0's bytes per step to the other party; ``lan_seconds`` / ``wan_seconds`` add the
row's party 0 thread CPU per step, rounds x RTT and bytes / bandwidth (:func:`bench.harness.network_seconds`);
``offline_bytes`` is the dealer's bytes per step to party 0.

Target: MPC <= 5x the float iteration (ratio >= 0.2), aiming for 2x (ratio >= 0.5). The host's 2 cores are shared
by 3 parties: wall times are pessimistic for one machine per party; the CPU rows are steadier. Run with
``OPENBLAS_NUM_THREADS=1``; ``--quick`` times 3 iterations and trains one epoch of a 5% subsample. Current
figures, the step's rounds and what was measured not to pay: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.harness import LAN, WAN, BenchResult, network_seconds
from mpdp.datasets import load_dataset
from mpdp.datasets.dataset import Dataset
from mpdp.errors import DatasetUnavailableError
from mpdp.learning.dpvi.mixture import MixtureModel, adult_model
from mpdp.learning.dpvi.parties import DataParty, VerticalSetup
from mpdp.learning.dpvi.training import DPVISettings, FloatStep
from mpdp.learning.dpvi.variational import MeanFieldGaussian
from mpdp.protocols.mixture_gradient import GradientPrecision
from mpdp.protocols.mpc import TrustedDealer
from mpdp.protocols.mpc.dealer import DealerProvider
from mpdp.protocols.mpc.planning import PlannedProvider
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

BATCH = 100
#: Every row times the float step in blocks of this many between as many MPC iterations, in party 0's thread or
#: process (the first of each block pays the caches the MPC step left cold; the medians are the warm ones).
FLOAT_BLOCK = 5


def _data() -> tuple[Dataset, MixtureModel, tuple[tuple[str, ...], ...], str]:
    try:
        data = load_dataset("adult")
        model = adult_model(data, components=10)
        groups = (data.groups["demographic"], (*data.groups["financial"], data.label_name))
        return data, model, groups, "Adult"
    except DatasetUnavailableError:
        from mpdp.datasets.synthetic import mixed_tabular

        data = mixed_tabular(5_000, numeric=3, categorical=10, categories=8, rng=RandomSource.seeded("bench"))
        model = MixtureModel.from_dataset(data, components=10)
        names = model.names
        return data, model, (names[: len(names) // 2], names[len(names) // 2:]), "synthetic (Adult unavailable)"


@contextlib.contextmanager
def _one_core() -> Iterator[str]:
    """Pin this process to one CPU for the in-memory (threads) runs, and say so.

    The in-memory parties are threads sharing one GIL. On a multi-core host, every hand-over of the GIL
    between them may move the running thread to another core, and the caches follow, which costs party 0
    far more CPU and wall time per iteration (figures in ``bench/RESULTS.md``). Neither cost exists in a
    deployment (one process per party, one machine each), so the thread rows run on one core; the process
    rows are not pinned.
    """
    if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not Linux
        yield "threads not pinned (no sched_setaffinity)"
        return
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    try:
        yield f"threads pinned to CPU {core}"
    finally:
        os.sched_setaffinity(0, before)


def run(quick: bool = False) -> list[BenchResult]:
    data, model, groups, label = _data()
    timed = 3 if quick else 20
    rng = RandomSource.seeded("bench-dpvi")
    settings = DPVISettings(epochs=1, batch_size=BATCH, clip=2.0, noise_multiplier=1.0)
    # a fresh posterior sample per iteration, as in training (caches keyed by theta never hit across iterations)
    posterior = MeanFieldGaussian.initial(model.dim, rng=rng.spawn("init"))
    thetas = [posterior.draw(rng.spawn(f"eta/{i}"))[0] for i in range(timed + 2)]
    batch = np.arange(BATCH, dtype=np.int64)

    step = FloatStep(model, model.values_of(data), clip=settings.clip, noise_multiplier=1.0,
                     rng=rng.spawn("noise"))
    step(thetas[0], batch)
    float_times = []
    with _one_core():  # like the threads' rows (the float step is single-threaded: pinning only evens the field)
        for i in range(5 * timed):  # the float step takes a few ms: five passes over the thetas steady its median
            start = time.perf_counter()
            step(thetas[i % timed + 2], batch)
            float_times.append(time.perf_counter() - start)
    float_seconds = statistics.median(float_times)  # for the first row's note: the float step timed alone

    # the circuit step (functions="circuit"): the rows' baseline protocol
    setup = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings, functions="circuit")
    # the step's tail in Z_2^128: plan_step's fallback once the grown clipping domain costs the Z_2^64 tail too much
    wide = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings,
                         precision=GradientPrecision(tail_fmt=None), functions="circuit")
    fss = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings, comparisons="fss", functions="circuit")
    masked = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings, functions="masked")
    tails = {str(setup.step_plan(theta, BATCH).tail) for theta in thetas}

    def role(name: str, online: bool = False, all_wide: bool = False, by_fss: bool = False,
             by_masked: bool = False) -> Any:
        """Party ``name``'s timed loop. Party 0 also runs the float step on the same thetas in blocks of
        ``FLOAT_BLOCK`` (fewer with ``--quick``) after as many timed iterations, in its own thread or process:
        each row's ratio is against the float step timed under that row's host conditions, each mostly warm."""
        chosen = wide if all_wide else fss if by_fss else masked if by_masked else setup
        block = min(FLOAT_BLOCK, timed)
        party = DataParty(name, chosen, model.values_of(data, groups[setup.parties.index(name)]))
        blocks = name == setup.parties[0]

        def run_party(comm: Any) -> dict[str, Any]:
            session, provider = party.open_session(comm)
            with session:
                # warm-up: the first iteration records the step's plan, every later one finds its correlations
                # requested at the end of the one before (next_batch_size)
                for i in range(2):
                    party.secure_step(session, provider, thetas[i], batch, next_batch_size=BATCH)
                times, cpus, own, floats, float_own, steps, online_bytes, clocks = [], [], [], [], [], [], [], []
                sent, rounds = comm.traffic.bytes_sent, comm.traffic.rounds
                for i in range(timed):
                    if online:  # offline phase, untimed: this step's correlations requested and received
                        _preprocess(provider, ("dpvi.step", BATCH))
                        session.public(np.zeros(1)).reveal()  # synchronised clocks: the step's rounds alone
                    clock, peer = comm.traffic.rounds, comm.traffic.bytes_sent - comm.traffic.sent_to.get("dealer", 0)
                    start, cpu, mine = time.perf_counter(), time.process_time(), time.thread_time()
                    ahead = None if online or i + 1 == timed else BATCH
                    out = party.secure_step(session, provider, thetas[i + 2], batch, next_batch_size=ahead)
                    steps.append(comm.traffic.rounds - clock)
                    clocks.append((clock, comm.traffic.rounds))
                    online_bytes.append(comm.traffic.bytes_sent - comm.traffic.sent_to.get("dealer", 0) - peer)
                    times.append(time.perf_counter() - start)
                    cpus.append(time.process_time() - cpu)
                    own.append(time.thread_time() - mine)
                    if blocks and (i + 1) % block == 0:
                        for j in range(i + 3 - block, i + 3):
                            start, mine = time.perf_counter(), time.thread_time()
                            step(thetas[j], batch)
                            floats.append(time.perf_counter() - start)
                            float_own.append(time.thread_time() - mine)
                nan = float("nan")
                return {"seconds": statistics.median(times), "cpu": statistics.median(cpus), "out": out,
                        "float_seconds": statistics.median(floats) if floats else nan,
                        "float_cpu": statistics.median(float_own) if float_own else nan,
                        "thread_cpu": statistics.median(own),
                        "bytes": (comm.traffic.bytes_sent - sent) / timed,
                        "rounds": (comm.traffic.rounds - rounds) / timed,
                        "step_rounds": statistics.median(steps), "online_bytes": statistics.median(online_bytes),
                        "clocks": clocks}
        return run_party

    def x(row: dict[str, Any], key: str = "seconds") -> float:
        """The row's ``key`` (wall or thread CPU time) over its own float step's, timed in blocks beside it."""
        return float(row[key] / row["float_seconds" if key == "seconds" else "float_cpu"])

    def beside(row: dict[str, Any]) -> str:
        return f"float step {row['float_seconds'] * 1e3:.2f} ms in blocks of {min(FLOAT_BLOCK, timed)} beside it"

    protocol = {name: role(name) for name in setup.parties}
    protocol["dealer"] = TrustedDealer(parties=setup.parties)
    with _one_core() as pinned:
        result = run_protocol(protocol, rng=rng.spawn("mpc"))
    lead = result.results["alice"]
    lead["offline_bytes"] = max(result.traffic["dealer"].sent_to.values()) / (timed + 2)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"{label}, K = 10, dim = {model.dim}, batch {BATCH}, 2 parties + dealer: MPC {x(lead):.1f}x the float "
            f"iteration (target <= 5x, aim 2x; {beside(lead)}, {float_seconds * 1e3:.2f} ms timed alone before the "
            f"rows: {lead['seconds'] / float_seconds:.1f}x); process CPU {lead['cpu'] * 1e3:.0f} ms per iteration; "
            f"party 0 sends {lead['bytes'] / 1e3:.0f} kB and sees {lead['rounds']:.0f} logical rounds per iteration "
            f"(dealer round trips included); {pinned}")
    cpu_note = (f"party 0's thread: {lead['thread_cpu'] * 1e3:.0f} ms CPU per iteration against the float step's "
                f"{lead['float_cpu'] * 1e3:.2f} ms in the same thread ({x(lead, 'thread_cpu'):.1f}x); 1-minute load "
                f"average {load:.1f} on {os.cpu_count()} CPUs (wall times above are inflated by it); {pinned}")

    def measure(*, online: bool = False, all_wide: bool = False, pin: bool = True, by_fss: bool = False,
                by_masked: bool = False, **how: Any) -> dict[str, Any]:
        """Party 0's figures from the timed iterations run again (threads unless ``how`` says otherwise), with
        the same seed as the first row; ``offline_bytes``: the dealer's bytes per iteration to the party it sends
        most to."""
        roles = {**{name: role(name, online=online, all_wide=all_wide, by_fss=by_fss, by_masked=by_masked)
                    for name in setup.parties}, "dealer": TrustedDealer(parties=setup.parties)}
        with _one_core() if pin else contextlib.nullcontext():
            run = run_protocol(roles, rng=rng.spawn("mpc"), **how)
        figures: dict[str, Any] = run.results["alice"]
        figures["offline_bytes"] = max(run.traffic["dealer"].sent_to.values()) / (timed + 2)
        # each step's online rounds: the latest clock after it minus the latest before it (a clock advances on receipt
        # only: one that a dealer's reply put ahead must not count the others' catch-up as rounds)
        per_step = [max(run.results[n]["clocks"][i][1] for n in setup.parties)
                    - max(run.results[n]["clocks"][i][0] for n in setup.parties) for i in range(timed)]
        figures["step_rounds"] = statistics.median(per_step)
        return figures

    forked = measure(pin=False, processes=True)
    greenlets = measure(cooperative=True)  # one thread, pinned like the threads' rows
    # the dealer in its own process on the other core (not pinned: a child inherits its parent's CPU set)
    dealer_apart = measure(pin=False, cooperative=True, forked=("dealer",))
    for other, how in ((forked, "processes"), (greenlets, "greenlets"), (dealer_apart, "greenlets + dealer")):
        if not np.array_equal(other["out"], lead["out"]):  # pragma: no cover - the runners' shared contract
            raise RuntimeError(f"parties as {how} released another sum than parties as threads")
    process_note = (f"each party and the dealer in its own forked process (run_protocol(processes=True)), same "
                    f"seed and released sum as the threads: {x(forked):.1f}x the float iteration (target <= 5x; "
                    f"{beside(forked)}, in party 0's process); party 0's process CPU {forked['cpu'] * 1e3:.0f} ms "
                    f"per iteration ({forked['cpu'] / forked['float_cpu']:.1f}x the float step's thread CPU); "
                    f"threads above: {x(lead):.1f}x wall; 1-minute load average {load:.1f} on {os.cpu_count()} CPUs")
    online = measure(online=True, pin=False, processes=True)
    online_note = (f"online phase only, parties as processes: before each timed iteration (untimed) the parties "
                   f"request and receive that iteration's correlations from the dealer (the preprocessing "
                   f"model's offline phase); the dealer is idle during the iteration. "
                   f"{x(online):.1f}x the float iteration's wall time ({beside(online)}); party 0's process "
                   f"CPU {online['cpu'] * 1e3:.0f} ms ({online['cpu'] / online['float_cpu']:.1f}x the float step's); "
                   f"1-minute load average {load:.1f} on {os.cpu_count()} CPUs")
    greenlet_note = (f"the same parties as greenlets of one thread, switched when one waits for a message "
                     f"(run_protocol(cooperative=True), as DPVI.fit runs them): {x(greenlets):.1f}x the float "
                     f"iteration ({beside(greenlets)}; threads: {x(lead):.1f}x); the thread's CPU (every party) "
                     f"{greenlets['thread_cpu'] * 1e3:.0f} ms per iteration ({x(greenlets, 'thread_cpu'):.1f}x)")
    dealer_note = (f"the parties as greenlets of one thread, the dealer forked into its own process "
                   f"(run_protocol(cooperative=True, forked=('dealer',)), mpdp.runtime.mixed): it computes the "
                   f"next iteration's correlations on the other core while the parties compute this one; "
                   f"{x(dealer_apart):.1f}x the float iteration ({beside(dealer_apart)}; greenlets row "
                   f"{x(greenlets):.1f}x); the thread's CPU (both parties) {dealer_apart['thread_cpu'] * 1e3:.0f} ms "
                   f"per iteration ({x(dealer_apart, 'thread_cpu'):.1f}x); not pinned; it gains only with a core "
                   f"to spare: 1-minute load average {load:.1f} on {os.cpu_count()} CPUs")
    online_threads = measure(online=True)
    online_greenlets = measure(online=True, cooperative=True)
    online_fss = measure(online=True, by_fss=True)
    online_masked = measure(online=True, by_masked=True)  # (its noise draws differ: tests compare its sums)
    masked_note = (f"online phase only, threads, as the online threads row but on masked wires "
                   f"(VerticalSetup(functions='masked'), mpdp.protocols.mixture_gradient.masked_step): "
                   f"{online_masked['step_rounds']} online rounds against {online_threads['step_rounds']}; "
                   f"party 0's thread CPU {online_masked['thread_cpu'] * 1e3:.0f} ms "
                   f"({online_masked['thread_cpu'] / online_masked['float_cpu']:.1f}x the float step's "
                   f"{online_masked['float_cpu'] * 1e3:.2f} ms in the same thread; circuit "
                   f"{online_threads['thread_cpu'] * 1e3:.0f} ms); dealer "
                   f"{online_masked['offline_bytes'] / 1e3:.0f} kB per step to party 0; {pinned}")
    if not np.allclose(online_fss["out"], lead["out"], rtol=0, atol=1e-3):  # pragma: no cover - the same step
        raise RuntimeError("the step with FSS comparisons released a sum far from the circuit comparisons' one")
    fss_note = (f"online phase only, threads, as the online threads row but comparing with the dealer's DCF keys "
                f"(VerticalSetup(comparisons='fss'), one round per comparison): {online_fss['step_rounds']} online "
                f"rounds against {online_threads['step_rounds']}; party 0's thread CPU "
                f"{online_fss['thread_cpu'] * 1e3:.0f} ms ({online_threads['thread_cpu'] * 1e3:.0f} ms with the "
                f"circuits: the keys' evaluation, 63 levels per threshold and element); dealer "
                f"{online_fss['offline_bytes'] / 1e3:.0f} kB per step to party 0 "
                f"({online_threads['offline_bytes'] / 1e3:.0f} kB); {pinned}")
    online_threads_note = (f"online phase only, threads as in the first row: each timed iteration's correlations "
                           f"were requested and received before it (untimed), so the dealer's work is not in "
                           f"the wall time, as in the preprocessing model; {x(online_threads):.1f}x the float "
                           f"iteration ({beside(online_threads)}; first row, dealer included: {x(lead):.1f}x); "
                           f"party 0's thread CPU {online_threads['thread_cpu'] * 1e3:.0f} ms; {pinned}")
    online_greenlet_note = (f"online phase only, as the threads' online row, the parties as greenlets: "
                            f"{x(online_greenlets):.1f}x the float iteration ({beside(online_greenlets)}; "
                            f"greenlets with the dealer: {x(greenlets):.1f}x)")
    training = [_training(data, groups, quick, functions) for functions in ("masked", "circuit")]
    late = measure(all_wide=True)
    late_note = (f"party 0's thread CPU with the step's tail in Z_2^128 (GradientPrecision(tail_fmt=None)), as "
                 f"plan_step chooses once the Z_2^64 tail would cost more than TAIL_MAX_CLIP_LOSS of the clipping "
                 f"bound (neither Adult's default 10 epochs nor Figure 3's 33 do; sharper trainings may), "
                 f"against the float step's {late['float_cpu'] * 1e3:.2f} ms in the same thread: "
                 f"{x(late, 'thread_cpu'):.1f}x; "
                 f"the rows above ran the tail format plan_step chose for these thetas: {', '.join(sorted(tails))}")
    rows = [("dpvi iteration (mpc, 2 parties)", lead, note),
            ("dpvi iteration (mpc, 2 parties, greenlets)", greenlets, greenlet_note),
            ("dpvi iteration (mpc, greenlets, dealer in its own process)", dealer_apart, dealer_note),
            ("dpvi iteration (mpc, online phase, threads)", online_threads, online_threads_note),
            ("dpvi iteration (mpc, online phase, greenlets)", online_greenlets, online_greenlet_note),
            ("dpvi iteration (mpc, parties as processes)", forked, process_note),
            ("dpvi iteration (mpc, online phase, processes)", online, online_note),
            ("dpvi iteration (mpc, online phase, threads, FSS comparisons)", online_fss, fss_note),
            ("dpvi iteration (mpc, online phase, threads, masked wires)", online_masked, masked_note)]

    def network(row: dict[str, Any], name: str = "") -> dict[str, Any]:
        """The network model's columns: the step's online rounds (counted in the online rows, where no dealer
        message moves the clock during the step: the same protocol whatever runs the parties), the row's own
        bytes to the other party and party 0's own CPU per step as the compute."""
        ref = online_fss if "FSS" in name else online_masked if "masked" in name else online_threads
        rounds, sent, compute = ref["step_rounds"], row["online_bytes"], row["thread_cpu"]
        return {"rounds": rounds, "lan_seconds": network_seconds(compute, rounds, sent, LAN),
                "wan_seconds": network_seconds(compute, rounds, sent, WAN), "offline_bytes": row["offline_bytes"]}

    walls = [BenchResult(name=name, n=BATCH, seconds=row["seconds"], baseline="float64 non-partitioned",
                         baseline_seconds=row["float_seconds"], bytes=int(row["online_bytes"]),
                         cpu_seconds=row["cpu"] if "processes" in name else None, note=text,
                         **network(row, name))
             for name, row, text in rows]
    cpus = [BenchResult(name="dpvi iteration cpu (party 0)", n=BATCH, seconds=lead["thread_cpu"],
                        baseline="float64 cpu", baseline_seconds=lead["float_cpu"], note=cpu_note,
                        bytes=int(online_threads["online_bytes"]), **network(lead)),
            BenchResult(name="dpvi iteration cpu (party 0, tail in Z_2^128)", n=BATCH, seconds=late["thread_cpu"],
                        baseline="float64 cpu", baseline_seconds=late["float_cpu"], bytes=int(late["online_bytes"]),
                        note=late_note + " (its rounds: the online threads row's, plus the lift into Z_2^128)",
                        **{**network(late), "rounds": online_threads["step_rounds"] + 1}),
            BenchResult(name="dpvi iteration cpu (party 0, masked wires)", n=BATCH, seconds=online_masked["thread_cpu"],
                        baseline="float64 cpu", baseline_seconds=online_masked["float_cpu"],
                        bytes=int(online_masked["online_bytes"]),
                        note="party 0's thread CPU of the online step on masked wires against the float step's in the "
                             "same thread (target <= 8x)", **network(online_masked, "masked"))]
    # the trainings' steps run the online rows' protocols: their rounds and bytes
    for row, online, kind in ((training[0], online_masked, "masked"), (training[1], online_threads, "")):
        for field_name, value in network(online, kind).items():
            setattr(row, field_name, value)
        row.bytes = int(online["online_bytes"])
    return [*walls[:3], cpus[0], *walls[3:], cpus[1], cpus[2], *training]


def _training(data: Dataset, groups: tuple[tuple[str, ...], ...], quick: bool, functions: str) -> BenchResult:
    """A real training's iterations: ``VerticalDPVI(functions=functions).fit`` (greenlets, as users run it; masked
    wires by default) against ``DPVI.fit`` (the non-partitioned float64 run), same settings, public seed and noise
    multiplier: Poisson minibatch sizes
    (one correlation plan per size), the posterior's updates, and public bounds that drift as the model
    sharpens (new plans, eventually the Z_2^128 tail). It shows what the rows above cannot, since they repeat
    one minibatch size at the initial posterior: e.g. stale prefetched correlations piling up in the dealer
    client would slow the steps down epoch by epoch."""
    from mpdp.learning.dpvi.model import DPVI, VerticalDPVI

    epochs = 1 if quick else 3
    if quick:  # a few seconds: a 5% subsample
        data = data.rows(np.arange(0, data.n, 20))
    seed = RandomSource.seeded("bench-dpvi-training")
    same: dict[str, Any] = {"epochs": epochs, "batch_size": BATCH, "clip": 2.0, "epsilon": None,
                            "noise_multiplier": 1.0, "public_seed": seed.spawn("public").bytes(32)}
    mpc = VerticalDPVI(rng=seed.spawn("root"), functions=functions, **same).fit(data, groups)
    base = DPVI(rng=seed.spawn("root"), **same).fit(data)
    mpc_steps, float_steps = np.asarray(mpc.trace_.step_seconds), np.asarray(base.trace_.step_seconds)
    per_epoch = len(mpc_steps) // epochs
    last = float(np.mean(mpc_steps[-per_epoch:]) / np.mean(float_steps[-per_epoch:]))
    note = (f"{epochs} epoch(s) of {data.n} records, {len(mpc_steps)} steps (Poisson minibatches of {BATCH} "
            f"expected): mean MPC step {np.mean(mpc_steps) * 1e3:.1f} ms against the float step's "
            f"{np.mean(float_steps) * 1e3:.1f} ms ({np.mean(mpc_steps) / np.mean(float_steps):.1f}x; medians "
            f"{np.median(mpc_steps) * 1e3:.1f} and {np.median(float_steps) * 1e3:.1f} ms), last epoch {last:.1f}x; "
            f"{mpc.communication_['bytes'] / len(mpc_steps) / 1e3:.0f} kB per step, every party's and the dealer's")
    label = "" if functions == "masked" else ", circuit step"
    return BenchResult(name=f"dpvi training iterations (mpc vs float64 fit{label})", n=BATCH,
                       seconds=float(np.mean(mpc_steps)), baseline="float64 DPVI.fit",
                       baseline_seconds=float(np.mean(float_steps)), note=note)


def _preprocess(provider: PlannedProvider, key: tuple[str, int]) -> None:
    """The offline phase of one step: request its recorded correlations and wait for the dealer's corrections."""
    provider.prefetch(provider.plans[key])
    if isinstance(provider.inner, DealerProvider):
        provider.inner.receive_prefetched()
