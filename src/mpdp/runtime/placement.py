"""Where the parties of an in-process run execute: one BLAS thread per party and, on request, one CPU for
the party threads.

:func:`~mpdp.runtime.party.run_protocol` runs every party as a thread of the calling process (or, with
``processes=True``, as a forked process). Two defaults of the host fit a single program badly here:

* **numpy's BLAS runs a pool per call** (always addressed). OpenBLAS starts as many threads as the host has
  cores and keeps them spinning after each call. With several parties in one process (or one host), each
  party's pool competes with the other parties for the same cores, and matrix products interleaved with
  other parties' work slow down many times over (see bench/RESULTS.md). :func:`one_blas_thread` sets the
  limit that ``OPENBLAS_NUM_THREADS=1`` would; a party's matrices are minibatch-sized, where one thread is
  enough.
* **Threads move between CPUs** (addressed with ``run_protocol(..., one_cpu=True)``). The party threads take
  turns on the GIL: each message from one party wakes another. When the woken thread sits on another CPU,
  every hand-over crosses CPUs (a wake-up interrupt, the GIL's condition variable, caches refilled with the
  message just written on the first CPU), while the threads never run Python code at the same time anyway.
  :func:`party_threads_on_one_cpu` gives the party threads one CPU, the one the caller runs on (the
  scheduler's own choice, so concurrent runs do not pile onto one CPU). Protocols of many small messages
  whose parties' work is Python and small arrays (the DPVI step) spend markedly less CPU and wall time per
  step on one CPU (see bench/RESULTS.md). Threads this process did not create (BLAS workers, the caller's)
  keep their CPUs. It is a request, not a default: parties whose work is mostly in C extensions that
  release the GIL (CKKS, Paillier) run that work in parallel on several CPUs, which one CPU would take away.

Both are scoped to one run (the BLAS limit is restored after it, the pinned threads end with it;
process-wide state is never changed at import), and both apply only when more than one party runs: a single
party's process is its own, as on a separate machine. Where the OS has no thread affinity (macOS, Windows)
the threads are not pinned.

References: threadpoolctl (https://github.com/joblib/threadpoolctl), which scikit-learn uses to size BLAS and
OpenMP pools through their own C APIs; ``sched_setaffinity(2)`` (a thread's CPU set on Linux).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from threadpoolctl import threadpool_limits

__all__ = ["current_cpu", "one_blas_thread", "party_threads_on_one_cpu", "pin_this_thread"]


@contextlib.contextmanager
def one_blas_thread(parties: int) -> Iterator[None]:
    """Limit the process's BLAS pools to one thread while ``parties`` (> 1) parties run; restored after."""
    if parties <= 1:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def current_cpu() -> int | None:
    """The CPU the calling thread runs on (Linux), or None where the OS does not say."""
    try:
        with open("/proc/thread-self/stat", encoding="ascii") as stat:
            fields = stat.read()
        # field 39, "processor"; the command name (field 2) may hold spaces, so count after its ')'
        return int(fields[fields.rindex(")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def party_threads_on_one_cpu(parties: int) -> frozenset[int] | None:
    """The CPU set for a run's party threads: the caller's current CPU when ``parties`` > 1 and the OS pins
    threads (and that CPU is allowed to this process), else None (threads left where the OS puts them)."""
    if parties <= 1 or not hasattr(os, "sched_setaffinity"):
        return None
    cpu = current_cpu()
    if cpu is None or cpu not in os.sched_getaffinity(0):
        return None
    return frozenset({cpu})


def pin_this_thread(cpus: frozenset[int] | None) -> None:
    """Restrict the calling thread (only it: Linux sets affinity per thread) to ``cpus``; None does nothing."""
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
