from __future__ import annotations

import os
from typing import Any

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from mpdp.runtime.placement import current_cpu, one_blas_thread, party_threads_on_one_cpu

_LINUX_AFFINITY = hasattr(os, "sched_getaffinity") and os.path.exists("/proc/thread-self/stat")


def _blas_threads() -> list[int]:
    return [int(pool["num_threads"]) for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads() -> Any:
    """The test's starting point: numpy's BLAS with two threads (so that the limit is visible)."""
    if not _blas_threads():  # pragma: no cover - numpy's wheels bundle OpenBLAS
        pytest.skip("no BLAS pool found in this process")
    with threadpool_limits(limits=2, user_api="blas"):
        if set(_blas_threads()) != {2}:  # pragma: no cover - a BLAS capped at one thread
            pytest.skip("this BLAS cannot run two threads")
        yield


def _blas_role(comm: Any) -> list[int]:
    return _blas_threads()


@pytest.mark.parametrize("processes", [False, True])
def test_parties_sharing_a_process_see_one_blas_thread_and_the_setting_is_restored(
        two_blas_threads: Any, processes: bool) -> None:
    run = run_protocol({"alice": _blas_role, "bob": _blas_role}, rng=RandomSource.seeded(1), processes=processes)
    for seen in run.results.values():
        assert seen and set(seen) == {1}
    assert set(_blas_threads()) == {2}


def test_a_single_party_keeps_the_blas_pool(two_blas_threads: Any) -> None:
    run = run_protocol({"alice": _blas_role}, rng=RandomSource.seeded(1))
    assert set(run.results["alice"]) == {2}
    with one_blas_thread(1):
        assert set(_blas_threads()) == {2}
    with one_blas_thread(3):
        assert set(_blas_threads()) == {1}
    assert set(_blas_threads()) == {2}


def _cpus_role(comm: Any) -> tuple[list[int], int | None]:
    return sorted(os.sched_getaffinity(0)), current_cpu()


@pytest.mark.skipif(not _LINUX_AFFINITY, reason="thread affinity is Linux-only")
def test_one_cpu_pins_every_party_thread_to_the_callers_cpu_and_leaves_the_caller_alone() -> None:
    before = sorted(os.sched_getaffinity(0))
    run = run_protocol({"alice": _cpus_role, "bob": _cpus_role, "carol": _cpus_role}, rng=RandomSource.seeded(1),
                       one_cpu=True)
    sets = {tuple(cpus) for cpus, _ in run.results.values()}
    assert len(sets) == 1 and len(next(iter(sets))) == 1  # one CPU, the same for all
    (cpu,) = next(iter(sets))
    assert cpu in before and all(now == cpu for _, now in run.results.values())
    assert sorted(os.sched_getaffinity(0)) == before
    # not requested, or one party: threads keep the process's CPUs
    free = run_protocol({"alice": _cpus_role, "bob": _cpus_role}, rng=RandomSource.seeded(1))
    assert all(cpus == before for cpus, _ in free.results.values())
    assert party_threads_on_one_cpu(1) is None


@pytest.mark.skipif(not _LINUX_AFFINITY, reason="/proc/thread-self is Linux-only")
def test_current_cpu_is_an_allowed_cpu() -> None:
    cpu = current_cpu()
    assert cpu is not None and cpu in os.sched_getaffinity(0)
