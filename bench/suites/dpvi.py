"""Suite ``dpvi``: one DP-SGD iteration of paper 002's DPVI, under MPC against the non-partitioned float64 step.

Work: Adult (the stratified training part; a synthetic stand-in when Adult is unavailable), the mixture of
paper 002 with K = 10 components (Beta age/fnlwgt/hours, Categorical for the rest and the income label),
a minibatch of 100 records, clipping and discrete Gaussian noise.

* ``mpc``: two data parties (demographic vs financial attributes, income with the financial party) and a
  dealer, threads over the in-memory transport, real additive shares exchanged as messages: Z_2^128 (f = 48)
  up to the normalisation of ``S_i``, then the Z_2^64 tail (f = 24) that
  :func:`~mpdp.protocols.mixture_gradient.plan_step` chooses while it costs at most 2% of the clipping bound,
  and Z_2^128 again for the gradient map and the release. One iteration = the parties' local log-densities,
  norms and statistics, the secure responsibilities, clipping, gradient assembly, distributed noise and the
  opening. ``seconds`` is party 0's median wall time per iteration over the timed iterations (after two
  warm-up iterations; each iteration's correlations are requested from the dealer in one request at the end
  of the iteration before); the note adds the process CPU time per iteration (all parties and the dealer),
  online bytes and rounds.
* ``mpc, greenlets``: the same iterations with the parties as greenlets of one thread, switched when one
  waits for a message (``run_protocol(..., cooperative=True)``, :mod:`mpdp.runtime.cooperative`), as
  :class:`~mpdp.learning.dpvi.model.VerticalDPVI` runs them: the in-memory transport's bytes and checks without a
  thread hand-over per message. Still one CPU for all parties: wall time is the sum of their work.
* ``mpc cpu``: the same iterations' CPU time of party 0's thread alone against the float step's CPU time:
  the work one party's machine does, much less disturbed by other jobs than wall time (the note gives the
  load average at the end of the run).
* ``mpc, online phase, threads``: the threads of the first row, each timed iteration preceded (untimed) by its
  offline phase as in the processes' online row below: the dealer's share of the first row's wall time.
* ``mpc, online phase, greenlets``: the same, the parties as greenlets.
* ``mpc, parties as processes``: the same iterations with every party and the dealer in its own forked
  process (``run_protocol(..., processes=True)``, messages over socketpairs): wall time is the slowest
  party's, not the sum of all parties' CPU as with threads sharing one GIL; the closest this host gets to one
  machine per party (2 cores for 3 processes).
* ``mpc, online phase, processes``: the same iterations as processes, each preceded (untimed) by its offline
  phase: the parties request the iteration's recorded correlations and party 0 waits for the dealer's
  corrections (:meth:`~mpdp.protocols.mpc.dealer.DealerProvider.receive_prefetched`). The timed iteration is
  the preprocessing model's online phase: the dealer is idle, the two parties compute on the two cores, and
  the wall time is close to what one machine per party would see (plus network latency, the rounds the first
  row's note counts). The noise shares are still drawn inside the iteration.
* baseline ``float64``: the same iteration non-partitioned (:class:`mpdp.learning.dpvi.training.FloatStep`:
  per-example gradients, clipping, grid Gaussian noise) on the same posterior samples, timed *in each row*: party
  0 runs it in blocks of ``FLOAT_BLOCK`` after as many timed MPC iterations, in its own thread or process, and
  each row's ratio (wall time, or thread CPU for the ``cpu`` rows) is against the median of those blocks. The
  host's speed drifts by tens of percent between seconds (session 14: the float step took 1.28-1.98 ms in
  consecutive runs), so a float step timed once before all rows moved every ratio with it; up to session 14
  only the greenlets row's note had this ratio (there 6.6-7.4x against 4.7-8.0x for the one-off timing). The
  first row's note still gives the float step timed alone before the rows, for comparison.

Every timed iteration draws a fresh posterior sample ``theta`` (the same sequence for both computations), as
training does: the public bounds, hence the step's correlation shapes and any cache keyed by ``theta``, change
from one iteration to the next.

* ``training``: a real training's iterations, :class:`~mpdp.learning.dpvi.model.VerticalDPVI` ``.fit`` (greenlets)
  against :class:`~mpdp.learning.dpvi.model.DPVI` ``.fit`` (non-partitioned float64), 3 epochs of Adult, same settings,
  public seed and noise multiplier: mean seconds per step from each fit's trace. Unlike the rows above (one
  minibatch size, the initial posterior) it has Poisson minibatch sizes (one correlation plan per size), the
  posterior's updates and public bounds that drift as the model sharpens.
* ``mpc cpu, tail in Z_2^128``: party 0's thread CPU with the whole step after the normalisation in Z_2^128
  (``GradientPrecision(tail_fmt=None)``), which ``plan_step`` falls back to when the Z_2^64 tail would leave the
  clipping constant more than ``TAIL_MAX_CLIP_LOSS`` (2%) below ``C``: the tail's absolute roundings weigh more
  as the clipping domain ``[.., 2^H]`` grows with the model's gradient bounds. Under the limit before session
  13 (0.1%) most steps of a 33-epoch training ran wide. Measured in session 14 with Figure 3's settings
  (``python -m bench.probes.dpvi_tail --seed S``: the float64 trajectories of three seeds, 20 thetas from each
  epoch's posterior): ``H`` grows from 16 to 28 by epoch 7-9 and stays there, the median loss peaks at 1.05%,
  1.12% and 1.49% (seeds ``tail``, 7 and 2026), and no theta of the 33 epochs runs wide; sharper trainings (larger
  learning rates) still may.

Rounds per iteration: 34 (35 before session 8, 38 before session 7, 78 at the start of session 3): none for the
inputs (factors in Z_2^128, norms in the tail format: seeded,
:meth:`~mpdp.protocols.mpc.session.MPCSession.input_seeded`; the statistics are not shared), 2 the products across
parties, 7 the normalisation of ``S_i`` (comparisons with 40 powers of two against one opened mask), 2 the product
giving ``q~ = q 2^-k`` and ``(q - pi S) 2^-k`` (truncated straight into the tail), 4 the squared norm and ``S~^2``,
15 the clipped weights ``q~ / sqrt(max(S~^2, n~))`` (comparisons with half powers of two, the maximum, ``z = m
2^-k`` and ``v root``, then the degree-3 polynomial with ``t^2`` and ``v root t`` in one product and one last
product), 2 the matrix product (each party's own statistics times the shared weights,
:func:`~mpdp.protocols.mpc.arithmetic.matmul_owned`), 1 the truncation onto the grid and 1 the opening. Once the
gradient map's constants outgrow the tail (they reach the hundreds as training proceeds: after about three epochs on
Adult), one more round lifts the weighted sums back into Z_2^128 for the map, the noise and the opening; this
bench's thetas (the initial posterior's) keep them in the tail (session 8).

Measured 2026-11-22 (session 4), lead, ``OPENBLAS_NUM_THREADS=1 python -m bench dpvi``, load 4.5 (a test suite
and an experiment running beside it): party 0's thread CPU 18 ms per iteration against the float step's 3.9 ms
(4.6x); with the tail in Z_2^128, 23 ms (6.0x); parties as processes, party 0's process CPU 21 ms (5.5x); wall
times 10-12x, inflated by the load (three processes on two busy cores). At the start of the session, with the
machine idle: 43 ms (11.1x), processes 32 ms (8.4x), threads wall 24.7x. What changed (four helpers and the
lead): the tail in Z_2^64 (-29% party CPU, -32% bytes); each party's local work on vectorised tables per
theta (~2.1 -> ~0.5 ms); messages at half the Python CPU (an envelope codec matching the generic bytes, a
lock per waiting receiver in the in-memory transport, one ``sendmsg`` per frame between processes); Z_2^64
matrix products by numpy's wrapping uint64 matmul, fused Beaver combines, a byte-transpose bit slicing (party
0's arithmetic 1.32x cheaper, the dealer's 1.55x); plans re-recorded on every run, so that correlation shapes
that drift with theta are prefetched from the latest run, and the clipping domain on a grid of 2^4 so that
they rarely drift. The float step itself became ~25% faster (vectorised per-example gradients shared with
the MPC side's tables), which the ratios absorb. Party 0 sends ~0.85 MB per iteration (1.17 MB in Z_2^128).

Measured 2026-11-22 (session 5), lead, same command, three runs at load 3.6-3.8 (one training job on the other
core); the threads' rows and the float step now run pinned to one CPU (:func:`_one_core`): party 0's thread
CPU 12-16 ms per iteration against the float step's 3.2-3.5 ms (3.7-4.4x); with the tail in Z_2^128 4.3-5.7x;
parties as processes, party 0's process CPU 14-19 ms (4.3-5.3x); online phase 15-18 ms (4.5-5.5x); wall
times: threads 7.9-10.1x, online phase as processes 8.5-10.6x. The session's starting code (ac3ab5f) under the
same bench, same minutes: 14-17 ms (4.4-5.3x), tail in Z_2^128 6.2-8.1x, processes 19 ms (5.0-7.2x), threads
wall 9.9-11.7x. What changed (two helpers and the lead): the clipping domain without an unneeded factor K
(``clip_domain_bound``: 4 fewer bits to compare, a 16x smaller relative error of the clipping factor); one round
fewer per comparison (the carry tree's first level rides in the opening of the masked value) and less work per
level; flat dealer replies, a direct envelope codec path for openings and single arrays; Z_2^128 kernels without
per-limb joins (one ufunc for add/sub with the carry, fused Beaver combine and wrap shift, shape operations on
the whole element array) and cached big-integer bucket constants. Party 0 sends 0.69 MB per iteration (-18%;
1.06 MB in Z_2^128). The float step's own CPU moves by +-20% between runs, which the ratios carry. At the end
of the session, idle host (load 1.6), two runs: party 0's thread CPU 13-14 ms against 3.1-3.4 ms (4.2-4.3x),
tail in Z_2^128 5.1-5.2x, processes 17-18 ms (5.2-5.4x, wall 6.9-7.8x), online phase 14-15 ms (4.3-4.5x) with a
wall time of 4.9-5.1x (each party on its own core, dealer idle), threads wall 9.3-9.5x.

Measured 2026-11-22 (session 6), by callgrind (instructions per step, deterministic, immune to the host's
load: ``valgrind --tool=callgrind --zero-before=getppid --dump-before=getpgrp`` around 10 steps of the
``mpc`` iterations above, the timed loop bracketed by ``os.getppid()`` and ``os.getpgrp()`` calls): all three
threads 85.6 M at the session's start (0c5d65f) -> 75.3 M (-12%), party 0 34.8 M -> 31.8 M (-9%), the dealer
~16 M -> ~11 M; the float step 13.6 M (so 5.5x in instructions for the three threads, 2.3x for party 0,
against ~10x and ~4.5x in time: the MPC code's Python and small-array work runs at a lower rate of
instructions per second than the float step's numpy kernels). What changed (two helpers): an opening's
message written and read in one pass (no generic dict encoding), a request's correlations laid out once per
plan with one AES keystream call per party stream and the dealer's corrections computed on words, one reply
message for a repeated plan. The same command, same minutes, one Figure 3 job on the other core: party 0's
thread CPU 12.6 ms against the float step's 2.5 ms (5.1x; the session's start 13.2 ms against 2.9 ms, 4.5x:
the float step's own time moves by +-20% between runs), with the tail in Z_2^128 13.5 ms (5.5x; start 18.6
ms, 6.4x), threads wall 26.5 ms (10.8x; start 29.2 ms, 10.0x), online phase as processes 22.8 ms (9.2x;
start 32.1 ms, 11.0x). Instruction counts are the reliable comparison on this shared host; the time ratios
straddle 5x per party and stay near 10x for the threads' wall time.

Measured 2026-11-22 (session 7), lead. Callgrind (as in session 6, 10 steps, all parties): 75.9 M
instructions per step at the session's start (a862f30) -> 74.5 M with the parties as threads (seeded inputs:
-0.2%; the clipping's cubic: -2%) and 73.7 M as greenlets. Time, same command on an idle host (load 1.3),
four runs: float step 2.2-2.7 ms; threads 17.9-20.6 ms (7.1-8.7x), greenlets 18.6-22.3 ms (7.5-9.1x), their
online phases 16-25 ms and 13-20 ms, processes 16.8-19.0 ms (6.5-7.7x), online phase as processes 12.9-15.5 ms
(5.5-6.3x), party 0's thread CPU 3.3-4.2x (tail in Z_2^128 4.5-5.5x). This host switches between a fast and a
slow state (the same code's step at ~19 or ~24 ms): three bench runs of the session's start and of the end,
alternated, gave 7.6-11.3x (median 8.9x) against 7.6-8.3x (median 7.8x), and the profr A/B (threads, CPU 1,
three pairs) 4% less wall time at the end. Greenlets match threads on an idle host (five pairs: median 23.1 ms
against 23.9 ms) and win under load: at load 5, 37 ms against 55 ms in this bench, and a one-epoch Adult fit
9-11% faster (idle: three pairs, -17%, +9%, -14%). Rounds 38 -> 35, party 0's bytes 694 -> 619 kB per step.

Measured 2026-11-22 (session 8), lead. Callgrind, 10 steps: all parties in one thread as greenlets 73.8 M ->
69.1 M instructions per step (-6.5%), party 0's thread 31.2 M -> 28.7 M (-8.2%): the bucket comparisons'
combinations and bit slicing (helper H-C, -4.4% for party 0), the gradient map kept in the Z_2^64 tail while it
fits (-2.9%; one round less, 619 -> 589 kB) and one keystream per ordered pair for the seeded inputs (-1.6%);
as threads, all parties 74.5 M -> 71.3 M before the last of these. The forked dealer (row "greenlets,
dealer in its own process", :mod:`mpdp.runtime.mixed`) takes 9.4% of the instructions off the parties' thread
but gains wall time only with an idle core. Time, same command, twelve alternated pairs of the session's start
(4484f83) and end on an idle host (load < 1), float step 1.9-3.0 ms: greenlets 15.0-15.6 ms (7.6-8.1x) against
15.8-17.6 ms (8.1-9.2x) while the host was in its fast state (three pairs), then 18-29 ms for both with no
consistent order: timing cannot resolve a 5% change on this host; instruction counts can. The end's medians:
party 0's thread CPU 4.2x, online phase as processes 5.8x, tail in Z_2^128 (most of a 33-epoch training) 5.2x.

Measured 2026-11-22 (session 9), lead. Callgrind, 10 steps, all parties in one thread as greenlets: 69.0 M ->
66.1 M instructions per step (-4.2%); with the tail in Z_2^128 (``WIDE=1``, most of a real training) 101.6 M ->
96.2 M (-5.4%). Helper H-E (-2.8%): sharing ids from a C-level iterator, derived shared values built without
``__init__``'s call and their capacity check a dict lookup, Z_2^64 openings summed into the received array, fewer
calls per correlation. Helper H-F (-1.0%, WIDE -3.7%): the 128-bit matmul's float limbs in a few broadcast passes,
the 128-bit multiply with 0-d constants and in-place temporaries, the truncations' sign factor without a select.
Released values bit-identical; rounds (34) and bytes unchanged. Time, same command, six alternated pairs of the
session's start (1fbf8ec) and end, the Figure 3 job paused, float step 1.9-3.6 ms: greenlets 6.8-8.6x (median
7.2x) at the start against 5.5-7.9x (median 7.2x) at the end; party 0's thread CPU 3.4-3.9x against 3.2-4.4x;
online phase as processes 4.6-9.2x (median 5.2x) against 5.0-9.7x (median 6.8x), though party 0's process CPU
per step in three more alternated pairs (parties as processes, 60 steps) was 10.7-13.6 ms against 11.3-15.0 ms,
no consistent order. Timing again cannot resolve a 4% change here.
``VerticalDPVI(fork_services=True)`` (``mpdp run dpvi --option runner=fork-services``) now runs the row
"greenlets, dealer in its own process" for users with a core to spare.

Measured 2026-11-22/23 (session 10), lead. Real trainings were much slower than these rows: with Poisson
minibatch sizes (one correlation plan per size) and public bounds that drift as the model sharpens, a plan
recorded earlier prefetched correlations of stale shapes, which stayed queued in the dealer client for good
(~1,500 after 3,600 steps on Adult) while every lookup passed over them: the step grew from ~20 to ~110 ms by the
fourth epoch. ``PlannedProvider`` now drops what a block prefetched and did not use (``retain``), the dealer's
table of requests remembered by number replaces its least recently used entry instead of freezing at 256 (a
request sent in full costs +8% of a step's instructions), and training requests each step's correlations during
the step before. The new row ``training`` (3 epochs of Adult, alternated on an idle host): 21.6-22.3 ms per MPC
step at the session's start (2db463e; 13.5x the float fit's step, last epoch 18.7x; 38.8 rounds per step)
against 12.2-14.2 ms (7.9-8.3x, last epoch 6.8-8.2x; 36.9 rounds). A full-scale Figure 3 repetition: 1,409 s ->
266 s. The rows above are unchanged: callgrind (10 steps, all parties in one thread, numpy 2.4.6) 58.74 M ->
58.85 M instructions per step (float step 14.4 M, so 4.1x), tail in Z_2^128 89.17 M -> 89.30 M (6.2x).
``OPENBLAS_NUM_THREADS=1 python -m bench dpvi`` on the idle host (load 0.0), float step 2.0 ms: greenlets 7.1x
(threads 7.0x), online phase as greenlets 5.0x, parties as processes 5.3x, online phase as processes 5.4x, party
0's thread CPU 3.1x (tail in Z_2^128 3.5x), the dealer in its own process 8.4x (1.19x the greenlets row: on this
host the replies' trip between processes costs what the dealer's share saves).

Measured 2026-11-23 (session 11), lead: where the remaining time goes, and what did not pay. Callgrind with the
instrumentation off until the timed loop (``valgrind --instr-atstart=no`` and ``callgrind_control -i on`` at the
loop's start, 20 s a run instead of 2.5 min), 10 steps, all parties in one thread: 58.8 M -> 58.2 M instructions
per step (-1.0%: shape sizes by ``math.prod`` instead of ``np.prod``, which builds an array from the tuple).
Findings, each measured:

* One opening round costs 13 us for both parties together (2,000 openings of 100 words as greenlets; 17 us for
  3,000 words): the 34 rounds' transport is ~0.45 ms of a ~10 ms step. Rounds are not the cost; the work around
  each round is (providers, combines, codec, ~7,100 C-level and ~6,100 Python calls per step for all parties).
* :func:`~mpdp.protocols.mpc.bits.at_least` costs about the same for 1, 10 or 40 thresholds over 100 values
  (0.87, 0.82, 0.92 ms per call for both parties and the dealer, each call its own planned block): its cost is
  the fixed work of its seven rounds, not the thresholds. The two calls per step (the normalisation of ``S_i``
  and the clipping's buckets) are ~24% of the step's samples (py-spy).
* Quarter powers with a degree-2 polynomial for the clipping factor (one product round fewer, twice the
  thresholds) are still dearer: +2.4% instructions (595.7 M against 582.0 M for 10 steps).
* Reading openings as read-only views of the received bytes instead of copies (the sums into fresh arrays):
  no gain (583.2 M against 582.0 M); not kept.
* ``plan_step`` is 66 us per party and step; the theta tables are built once per party and step, as a party on
  its own machine would (the float step builds them too).
* Parties as processes: py-spy puts ~23% of the parties' samples in ``epoll`` waits, ~9% in ``sendmsg`` and
  ~7% reading frames: the socket transport, which the in-memory rows do not pay.
* A real training's first use of each Poisson minibatch size runs without a plan: 53 of 452 steps in the first
  epoch of Adult, 14.6 ms against 11.1 ms, 3.6% of the epoch.
* Drawing the Poisson minibatch (``RandomSource.random(n) < q`` over Adult's 45,222 records) takes ~0.57 ms per
  step, in the float fit and the MPC fit alike.
* A private-operand matrix product (each party's statistics ``T_j`` are known to it: one Beaver product per
  block with the owner's mask known to the owner, no sharing of ``T``) would remove ~40% of the uint64 matmul
  work (8.6% of the step's instructions: ~3%) and more in the Z_2^128 tail, where the owner's small-integer
  ``T`` needs a third of the limb products (``Z2_128.matmul_sum`` is 10.9% of that step's samples: ~5%). It
  needs a new correlation kind whose draw plan depends on the owner; not attempted this session.

``OPENBLAS_NUM_THREADS=1 python -m bench dpvi``, two runs, load 1.0: greenlets 7.2-7.5x (threads 7.8-7.9x),
online phase as greenlets 6.1-6.3x, parties as processes 5.9-6.4x, online phase as processes 5.1-5.2x, party 0's
thread CPU 3.5x (tail in Z_2^128 4.9-5.2x), the dealer in its own process 6.6x, training 7.4-8.1x. Reaching 5x
with every party in one process needs about a third less work per step; what is left to remove is spread over
hundreds of small numpy calls per round, so it needs a step program with far fewer of them (fused kernels or
compiled code), not another local saving.

Measured 2026-11-23 (session 12), lead: private operands stay private. Each party's statistics ``T_j`` enter
``M = T^T w`` through :func:`~mpdp.protocols.mpc.arithmetic.matmul_owned` (a dealt ``matmul_owned_wrap``: the
mask of ``T_j`` known to ``j`` alone, the mask of ``w`` shared by the others), so ``T`` is never input as
shares: no keystream for its shares, each party one local ``uint64`` matmul per block instead of a joined one
of twice the inner size, and each party opens its own block's masked ``T_j`` only (the product session 11
proposed). The parties' factors ``e_ikj`` likewise multiply as owned operands
(:func:`~mpdp.protocols.mpc.arithmetic.mul_owned`: the last party's shared trivially, the others' multiplied
in). Callgrind (10 steps, all parties in one thread): 581.7 M -> 558.1 M -> 547.7 M instructions per step
(-5.8%; numpy's ``ULONG_matmul`` 9.6% -> 5.9% of the step after the first); tail in Z_2^128 887.1 M -> 853.3
M -> 844.1 M (-4.8%). Party 0 sends 540 kB per step after the first (567 kB). Same rounds (34); the
released sums move by the stochastic roundings only (other correlations), within
:func:`~mpdp.protocols.mixture_gradient.gradient_error_bound`. ``OPENBLAS_NUM_THREADS=1 python -m bench
dpvi`` after the first change, two runs, load 0.5-0.8, float step 1.3-1.4 ms: greenlets 6.7-8.0x (threads
7.6-7.7x), online phase as greenlets 5.5-6.5x, parties as processes 5.9-8.0x, online phase as processes
4.7-6.2x, party 0's thread CPU 3.4-3.5x (tail in Z_2^128 4.9-5.5x), training 7.7-7.9x: the host's fast and
slow states again span more than the change. In a real training (1 epoch, a third of Adult) a step whose
minibatch size has been seen before costs 9.2 ms when the next size is new (no request ahead) and 10.5 ms
with the next step's request (the dealer's work for it), against ~13.5 ms for a size's first step (13-14
requests to the dealer as the operations run). Forked parties now poll their socket for up to 100 us before
sleeping (:mod:`mpdp.runtime.processes`): ~15 voluntary context switches per step -> 1, the online phase as
processes 6.4-6.7 -> 5.6-5.8 ms per step (three alternated pairs). At the session's end (all three changes),
same command, load 0.5, float step 1.35 ms: greenlets 7.3x (threads 7.8x), online phase as greenlets 6.1x,
parties as processes 5.4x, online phase as processes 4.1x, party 0's thread CPU 3.5x (tail in Z_2^128 4.7x),
the dealer in its own process 6.5x, training 7.0x (last epoch 7.9x); party 0 sends 524 kB per step.

Measured 2026-11-23 (session 13), lead: what the in-memory step's time is made of, and four levers that do not pay.
Greenlets, all roles in one thread (py-spy, 400 steps): the two parties 88% (4.1 ms each), the dealer 11% (its
corrections 0.40 ms, the two streams' expansion 0.21 ms per step). Within a party: the two ``at_least`` comparisons
20% (their carry trees 8%), ``step_plan`` ~8% in the loop (0.26 ms per step warm, ~2.8x that between MPC steps),
each party's share of the noise 3.7% (0.175 ms for 1,249 exact discrete-Gaussian draws), the messaging (encode,
send, switch, receive, decode) 19%. numpy's ufunc dispatch runs ~1,700 times and ~4,000 arrays are made per step
(callgrind: libpython 33% of the instructions, numpy 40% of which the inner loops about a third, memcpy 8%, AES
6%). Levers measured and dropped: (1) a round itself is cheap: an opening of 1-2,000 words costs 13-16 us for both
parties (``MPCSession.open`` in a loop), so the 34 rounds are ~5% of the step; (2) the thresholds' number is not
what a comparison costs: halving ``inv_sqrt_max``'s (one threshold per octave instead of two,
``ClipFactorParams(buckets_per_octave=1, degree=4)``) left the step unchanged (two alternated pairs: 8.48/8.49 and
8.65/8.36 ms); (3) reading openings as views of the message instead of copies (sums into new arrays): no gain
(three alternated pairs, 8.99/9.07, 8.96/9.12, 9.17/9.24 ms); (4) comparisons by dealt byte tables (``[k < r_b]``
for each byte of the mask, 32 words per element: two tree rounds fewer per comparison, -4 rounds and ~-90 kB per
party per step) would lose the carry tree's 64 comparisons per word operation: the lookups alone (numpy gathers
over 30,000 indices) cost 535-670 us per comparison, against the ~155 us they would save (estimated from the
profile). Python's cyclic collector (~1.3 collections per step): disabling it gained 1-3%. Two small changes
landed: the step's validation reductions call the ufuncs directly, and ``ClipFactorParams.max_error_bound`` is
remembered: 544.2 M -> 540.3 M -> 539.1 M instructions per step (-0.9%). With the dealer forked
(``run_protocol(cooperative=True, forked=('dealer',))``), unpinned, same host: 8.52-8.56 ms per step against
9.03-9.28 ms in one thread; measured interleaved with the float step (MPC step, then float step, same thetas: the
float step then takes 1.6 ms instead of 1.4 ms alone) 5.2x and 5.6x.
``OPENBLAS_NUM_THREADS=1 python -m bench dpvi``, three runs (load 0.9-1.4, float step 1.31-1.71 ms): greenlets
6.6-7.5x (threads 7.3-7.9x), the dealer in its own process 6.0-6.7x, online phase as greenlets 5.7-6.3x, parties as
processes 4.6-7.2x, online phase as processes 3.8-5.3x, party 0's thread CPU 3.2-3.4x (tail in Z_2^128 4.0-5.0x),
training 7.5-8.6x. The in-memory rows need each party's work cut by about 30%; what is left is the interpreter's
and numpy's per-call cost spread over the whole step.

Measured 2026-11-23 (session 15), lead: every row against its own float step, timed in blocks beside it. Three
runs of ``OPENBLAS_NUM_THREADS=1 python -m bench dpvi`` (load 0.3-0.7; the float step in the rows' blocks
1.32-2.38 ms, the greenlets row's MPC step 10.1-13.9 ms: the host's speed moved both together): greenlets 6.5x,
6.6x, 7.0x (threads 6.7-7.7x), the dealer in its own process 5.6-6.3x, online phase as greenlets 5.7-5.8x,
parties as processes 5.1-6.0x, online phase as processes 3.8-5.5x, party 0's thread CPU 3.0-3.6x (tail in
Z_2^128 4.2-4.8x), training 6.5-9.0x. Callgrind (10 steps, all roles in one thread) 539.2 M instructions per
step, unchanged since session 13. The dealer has 10.7% of the one-thread step's samples (py-spy, 1,500 steps);
forked (200 steps of the greenlets row's loop, seven alternated pairs), the parties' thread CPU per step was the same in
the first two pairs (8.4-8.6 ms against 8.6 ms) and 10-26% lower in the next five (8.9-9.9 ms against 10.1-13.3
ms, the host slower then): the dealer's work leaves the thread when the other core is idle.

The issue's target: MPC <= 5x the float iteration (ratio >= 0.2), aiming for 2x (ratio >= 0.5). The host has
2 cores shared by 3 party threads (and by other jobs during development): wall times are pessimistic for
a deployment with one machine per party, and the CPU column is less disturbed by other jobs.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.harness import BenchResult
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
    between them may move the running thread to another core, and the caches follow: measured on this 2-core
    host (session 5), party 0's thread CPU per iteration was 28 ms unpinned against 17 ms pinned, and the wall
    time 58 ms against 38 ms. Neither cost exists in a deployment (one process per party, one machine each),
    so the thread rows run on one core; the process rows are not pinned.
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

    setup = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings)
    # the step's tail in Z_2^128: plan_step's fallback once the grown clipping domain costs the Z_2^64 tail too much
    wide = VerticalSetup(model, ("alice", "bob"), groups, data.n, settings,
                         precision=GradientPrecision(tail_fmt=None))
    tails = {str(setup.step_plan(theta, BATCH).tail) for theta in thetas}

    def role(name: str, online: bool = False, all_wide: bool = False) -> Any:
        """Party ``name``'s timed loop. Party 0 also runs the float step on the same thetas in blocks of
        ``FLOAT_BLOCK`` (fewer with ``--quick``) after as many timed iterations, in its own thread or process:
        each row's ratio is against the float step timed under that row's host conditions, each mostly warm."""
        chosen = wide if all_wide else setup
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
                times, cpus, own, floats, float_own = [], [], [], [], []
                sent, rounds = comm.traffic.bytes_sent, comm.traffic.rounds
                for i in range(timed):
                    if online:  # offline phase, untimed: this step's correlations requested and received
                        _preprocess(provider, ("dpvi.step", BATCH))
                    start, cpu, mine = time.perf_counter(), time.process_time(), time.thread_time()
                    ahead = None if online or i + 1 == timed else BATCH
                    out = party.secure_step(session, provider, thetas[i + 2], batch, next_batch_size=ahead)
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
                        "rounds": (comm.traffic.rounds - rounds) / timed}
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
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"{label}, K = 10, dim = {model.dim}, batch {BATCH}, 2 parties + dealer: MPC {x(lead):.1f}x the float "
            f"iteration (target <= 5x, aim 2x; {beside(lead)}, {float_seconds * 1e3:.2f} ms timed alone before the "
            f"rows: {lead['seconds'] / float_seconds:.1f}x); process CPU {lead['cpu'] * 1e3:.0f} ms per iteration; "
            f"party 0 sends {lead['bytes'] / 1e3:.0f} kB and sees {lead['rounds']:.0f} logical rounds per iteration "
            f"(dealer round trips included); {pinned}")
    cpu_note = (f"party 0's thread: {lead['thread_cpu'] * 1e3:.0f} ms CPU per iteration against the float step's "
                f"{lead['float_cpu'] * 1e3:.2f} ms in the same thread ({x(lead, 'thread_cpu'):.1f}x); 1-minute load "
                f"average {load:.1f} on {os.cpu_count()} CPUs (wall times above are inflated by it); {pinned}")

    def measure(*, online: bool = False, all_wide: bool = False, pin: bool = True, **how: Any) -> dict[str, Any]:
        """Party 0's figures from the timed iterations run again (threads unless ``how`` says otherwise), with
        the same seed as the first row."""
        roles = {**{name: role(name, online=online, all_wide=all_wide) for name in setup.parties},
                 "dealer": TrustedDealer(parties=setup.parties)}
        with _one_core() if pin else contextlib.nullcontext():
            figures: dict[str, Any] = run_protocol(roles, rng=rng.spawn("mpc"), **how).results["alice"]
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
    online_threads_note = (f"online phase only, threads as in the first row: each timed iteration's correlations "
                           f"were requested and received before it (untimed), so the dealer's work is not in "
                           f"the wall time, as in the preprocessing model; {x(online_threads):.1f}x the float "
                           f"iteration ({beside(online_threads)}; first row, dealer included: {x(lead):.1f}x); "
                           f"party 0's thread CPU {online_threads['thread_cpu'] * 1e3:.0f} ms; {pinned}")
    online_greenlet_note = (f"online phase only, as the threads' online row, the parties as greenlets: "
                            f"{x(online_greenlets):.1f}x the float iteration ({beside(online_greenlets)}; "
                            f"greenlets with the dealer: {x(greenlets):.1f}x)")
    training = _training(data, groups, quick)
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
            ("dpvi iteration (mpc, online phase, processes)", online, online_note)]
    walls = [BenchResult(name=name, n=BATCH, seconds=row["seconds"], baseline="float64 non-partitioned",
                         baseline_seconds=row["float_seconds"], bytes=int(row["bytes"]),
                         cpu_seconds=row["cpu"] if "processes" in name else None, note=text)
             for name, row, text in rows]
    cpus = [BenchResult(name="dpvi iteration cpu (party 0)", n=BATCH, seconds=lead["thread_cpu"],
                        baseline="float64 cpu", baseline_seconds=lead["float_cpu"], note=cpu_note),
            BenchResult(name="dpvi iteration cpu (party 0, tail in Z_2^128)", n=BATCH, seconds=late["thread_cpu"],
                        baseline="float64 cpu", baseline_seconds=late["float_cpu"], bytes=int(late["bytes"]),
                        note=late_note)]
    return [*walls[:3], cpus[0], *walls[3:], cpus[1], training]


def _training(data: Dataset, groups: tuple[tuple[str, ...], ...], quick: bool) -> BenchResult:
    """A real training's iterations: ``VerticalDPVI.fit`` (greenlets, as users run it) against ``DPVI.fit`` (the
    non-partitioned float64 run), same settings, public seed and noise multiplier: Poisson minibatch sizes
    (one correlation plan per size), the posterior's updates, and public bounds that drift as the model
    sharpens (new plans, eventually the Z_2^128 tail). The row that would have shown stale correlations piling
    up in the dealer client (session 10: 5x slower steps by the fourth epoch, unseen by the rows above, which
    repeat one minibatch size at the initial posterior)."""
    from mpdp.learning.dpvi.model import DPVI, VerticalDPVI

    epochs = 1 if quick else 3
    if quick:  # a few seconds: a 5% subsample
        data = data.rows(np.arange(0, data.n, 20))
    seed = RandomSource.seeded("bench-dpvi-training")
    same: dict[str, Any] = {"epochs": epochs, "batch_size": BATCH, "clip": 2.0, "epsilon": None,
                            "noise_multiplier": 1.0, "public_seed": seed.spawn("public").bytes(32)}
    mpc = VerticalDPVI(rng=seed.spawn("root"), **same).fit(data, groups)
    base = DPVI(rng=seed.spawn("root"), **same).fit(data)
    mpc_steps, float_steps = np.asarray(mpc.trace_.step_seconds), np.asarray(base.trace_.step_seconds)
    per_epoch = len(mpc_steps) // epochs
    last = float(np.mean(mpc_steps[-per_epoch:]) / np.mean(float_steps[-per_epoch:]))
    note = (f"{epochs} epoch(s) of {data.n} records, {len(mpc_steps)} steps (Poisson minibatches of {BATCH} "
            f"expected): mean MPC step {np.mean(mpc_steps) * 1e3:.1f} ms against the float step's "
            f"{np.mean(float_steps) * 1e3:.1f} ms ({np.mean(mpc_steps) / np.mean(float_steps):.1f}x; medians "
            f"{np.median(mpc_steps) * 1e3:.1f} and {np.median(float_steps) * 1e3:.1f} ms), last epoch {last:.1f}x; "
            f"{mpc.communication_['bytes'] / len(mpc_steps) / 1e3:.0f} kB per step, every party's and the dealer's")
    return BenchResult(name="dpvi training iterations (mpc vs float64 fit)", n=BATCH,
                       seconds=float(np.mean(mpc_steps)), baseline="float64 DPVI.fit",
                       baseline_seconds=float(np.mean(float_steps)), note=note)


def _preprocess(provider: PlannedProvider, key: tuple[str, int]) -> None:
    """The offline phase of one step: request its recorded correlations and wait for the dealer's corrections."""
    provider.prefetch(provider.plans[key])
    if isinstance(provider.inner, DealerProvider):
        provider.inner.receive_prefetched()
