"""Shared pieces of the benchmark runner: the result record, a timer, table and JSON output.

A result's ``ratio`` is always ``baseline_seconds / seconds`` for the same work, so > 1 means mpdp is faster
than the in-run baseline (plain ``phe``, plaintext numpy, a reference sampler, ...).

Network model (suites ``mpc`` and ``dpvi``): ``rounds`` (online communication rounds, from the transport's
clock), ``bytes`` there is the online traffic *per party*, ``offline_bytes`` the dealer's per party, and
:func:`network_seconds` gives ``lan_seconds`` / ``wan_seconds``: measured compute + rounds x RTT + bytes /
bandwidth (:data:`LAN`: 1 ms, 1 Gb/s; :data:`WAN`: 50 ms, 100 Mb/s; the one model of :mod:`mpdp.runtime.network`).

Optional fields, printed only by suites that set them: ``cpu_seconds`` (CPU time of the whole process for
the operation: fairer than wall time on a shared machine), and an external ``reference`` throughput that
cannot run in-process (e.g. CrypTen's, measured once on the same machine): ``ref_ratio = per_s /
reference_per_s`` and ``ref_cpu_ratio = per_cpu_s / reference_per_s``; ``B/elem`` is ``bytes / n``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from mpdp.runtime.network import NAMED, NetworkModel

__all__ = ["LAN", "WAN", "BenchResult", "network_seconds", "print_table", "time_call", "to_json"]

LAN = NAMED["lan"]
"""The modelled LAN of ``mpdp run --network lan`` (:mod:`mpdp.runtime.network`)."""
WAN = NAMED["wan"]
"""The modelled WAN of ``mpdp run --network wan``."""


def network_seconds(compute: float, rounds: float, bytes_per_party: float, link: NetworkModel) -> float:
    """Modelled wall time on ``link``: ``compute + rounds x RTT + bytes x 8 / bandwidth`` (each party sends its bytes
    on its own link, in parallel): the model ``mpdp run --network`` applies."""
    return link.seconds(compute, rounds, bytes_per_party)


@dataclass
class BenchResult:
    """One measured operation. Fields that do not apply stay None."""

    name: str
    n: int
    seconds: float
    baseline: str | None = None
    baseline_seconds: float | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    bytes: int | None = None
    note: str | None = None
    cpu_seconds: float | None = None
    reference: str | None = None
    reference_per_s: float | None = None
    rounds: float | None = None
    lan_seconds: float | None = None
    wan_seconds: float | None = None
    offline_bytes: float | None = None

    @property
    def per_s(self) -> float:
        return self.n / self.seconds if self.seconds > 0 else float("inf")

    @property
    def per_cpu_s(self) -> float | None:
        if self.cpu_seconds is None:
            return None
        return self.n / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")

    @property
    def ref_ratio(self) -> float | None:
        return None if self.reference_per_s is None else self.per_s / self.reference_per_s

    @property
    def ref_cpu_ratio(self) -> float | None:
        per_cpu = self.per_cpu_s
        return None if self.reference_per_s is None or per_cpu is None else per_cpu / self.reference_per_s

    @property
    def bytes_per_element(self) -> float | None:
        return None if self.bytes is None or self.n <= 0 else self.bytes / self.n

    @property
    def ratio(self) -> float | None:
        if self.baseline_seconds is None or self.seconds <= 0:
            return None
        return self.baseline_seconds / self.seconds

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["per_s"] = self.per_s
        record["ratio"] = self.ratio
        for name in ("per_cpu_s", "ref_ratio", "ref_cpu_ratio", "bytes_per_element"):
            record[name] = getattr(self, name)
        return record


def time_call(fn: Callable[[], Any], *, repeat: int = 3) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls of ``fn`` and the last call's result."""
    best = float("inf")
    result: Any = None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def print_table(suite: str, results: list[BenchResult]) -> None:
    columns = ["name", "n", "seconds", "per_s", "baseline", "ratio", "max_abs_error", "max_rel_error", "bytes"]
    if any(r.cpu_seconds is not None for r in results):
        columns[4:4] = ["per_cpu_s"]
    if any(r.rounds is not None for r in results):
        columns += ["rounds", "lan_seconds", "wan_seconds", "offline_bytes"]
    if any(r.reference_per_s is not None for r in results):
        at = columns.index("baseline")
        columns[at:at] = ["reference_per_s", "ref_ratio", "ref_cpu_ratio"]
        columns.append("bytes_per_element")
    rows = [[_fmt(r.as_dict()[c]) for c in columns] for r in results]
    widths = [max(len(c), *(len(row[i]) for row in rows)) if rows else len(c) for i, c in enumerate(columns)]
    print(f"suite: {suite}  (ratio = baseline time / mpdp time; > 1 means mpdp is faster)")
    if "ref_ratio" in columns:
        names = sorted({r.reference for r in results if r.reference})
        print(f"  reference: {', '.join(names)}; ref_ratio = per_s / reference_per_s, "
              "ref_cpu_ratio = per_cpu_s / reference_per_s (> 1: mpdp faster)")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    for r in results:
        if r.note:
            print(f"  note [{r.name}]: {r.note}")


def to_json(suite: str, results: list[BenchResult]) -> str:
    return json.dumps({"suite": suite, "results": [r.as_dict() for r in results]})
